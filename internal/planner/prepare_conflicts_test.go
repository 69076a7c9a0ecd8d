package planner_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// preparedFixture is a collection of documents {_id: i, a: i, u: i} for i
// in 1..5 (u uniquely indexed, a indexed) and a prepared transaction that
// changed _id 3 to a: 33 and inserted {_id: 10, a: 10, u: 10}.
type preparedFixture struct {
	eng *engine.Engine
	ns  engine.Namespace
	tx  *engine.Txn
}

func bdoc(t testing.TB, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newPreparedFixture(t testing.TB) *preparedFixture {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	f := &preparedFixture{eng: eng, ns: engine.Namespace{DB: "db", Coll: "c"}}
	var docs []bsoncore.Document
	for i := 1; i <= 5; i++ {
		docs = append(docs, bdoc(t, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}, {Key: "u", Value: i}}))
	}
	if _, err := eng.Insert(f.ns, docs, true); err != nil {
		t.Fatal(err)
	}
	specs := []bsoncore.Document{
		bdoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}}),
		bdoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}),
	}
	if _, err := eng.CreateIndexes(context.Background(), f.ns, specs); err != nil {
		t.Fatal(err)
	}
	f.tx = eng.Begin()
	f.tx.Session = &engine.OplogSession{LSID: bdoc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 1}
	three := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 3)}
	if _, err := eng.ModifyWith(f.ns, []bsoncore.Value{three}, engine.ModifyOptions{Ordered: true, Txn: f.tx}, func(int, bsoncore.Document) (engine.Action, error) {
		return engine.Action{Replace: bdoc(t, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 33}, {Key: "u", Value: 3}}), Replacement: true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.InsertWith(f.ns, []bsoncore.Document{bdoc(t, bson.D{{Key: "_id", Value: 10}, {Key: "a", Value: 10}, {Key: "u", Value: 10}})}, engine.InsertOptions{Ordered: true, Txn: f.tx}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tx.Prepare(nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// query is filter (and sort, may be nil) as the planner takes it.
func query1(t testing.TB, filter, sort bson.D) planner.Query {
	t.Helper()
	raw := bdoc(t, filter)
	q := planner.Query{RawFilter: raw}
	var err error
	if q.Filter, err = query.Parse(raw); err != nil {
		t.Fatal(err)
	}
	if sort != nil {
		q.RawSort = bdoc(t, sort)
		if q.Sort, err = query.ParseSort(q.RawSort); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

// find runs q outside a transaction, waiting on prepare conflicts when
// enforce says so, and renders the results as "_id:a" pairs.
func (f *preparedFixture) find(ctx context.Context, q planner.Query, enforce bool) (string, error) {
	ex, err := planner.Open(ctx, f.eng, f.ns, q, planner.Options{PrepareConflicts: enforce})
	if err != nil {
		return "", err
	}
	defer ex.Close()
	var out []string
	for {
		d, err := ex.Next()
		if err != nil {
			return "", err
		}
		if d == nil {
			break
		}
		out = append(out, fmt.Sprintf("%d:%d", d.Lookup("_id").AsInt64(), d.Lookup("a").AsInt64()))
	}
	return strings.Join(out, " "), ex.Close()
}

// TestPrepareConflictsPerDocument checks prepare conflicts per document: a
// read outside a transaction that enforces them (PrepareConflicts: the
// reads of writes, snapshot, linearizable and afterClusterTime reads)
// waits only when it reaches a key the prepared transaction holds (a
// document it wrote, by _id, by a scan, by an index entry's fetch, or the
// gap where it inserted one), then sees the outcome; reads of other
// documents of the same collection do not wait; a deadline ends the wait
// with MaxTimeMSExpired; a read that does not enforce them reads past the
// prepared documents at once.
func TestPrepareConflictsPerDocument(t *testing.T) {
	d := func(kv ...any) bson.D {
		out := bson.D{}
		for i := 0; i < len(kv); i += 2 {
			out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		return out
	}
	cases := []struct {
		name         string
		filter, sort bson.D
		waits        bool
		// the results after a commit and after an abort (the same for a
		// read that does not wait: it read before either)
		commit, abort string
	}{
		{"point read of another document", d("_id", 1), nil, false, "1:1", "1:1"},
		{"range before the held documents", d("_id", d("$lt", 3)), nil, false, "1:1 2:2", "1:1 2:2"},
		{"index scan of other documents", d("a", d("$in", bson.A{1, 5})), nil, false, "1:1 5:5", "1:1 5:5"},
		{"unique index point of another document", d("u", 4), nil, false, "4:4", "4:4"},
		{"point read of the held document", d("_id", 3), nil, true, "3:33", "3:3"},
		{"scan that reaches the held document", d("a", d("$gte", 2)), d("_id", 1), true, "2:2 3:33 4:4 5:5 10:10", "2:2 3:3 4:4 5:5"},
		{"collection scan", d(), nil, true, "1:1 2:2 3:33 4:4 5:5 10:10", "1:1 2:2 3:3 4:4 5:5"},
		{"backward scan", d(), d("_id", -1), true, "10:10 5:5 4:4 3:33 2:2 1:1", "5:5 4:4 3:3 2:2 1:1"},
		{"fetch of the held document by its index entry", d("u", 3), nil, true, "3:33", "3:3"},
		{"gap of a prepared insert", d("_id", d("$gt", 5)), nil, true, "10:10", ""},
	}
	for _, tc := range cases {
		for _, commit := range []bool{true, false} {
			end, want := "commit", tc.commit
			if !commit {
				end, want = "abort", tc.abort
			}
			t.Run(tc.name+"/"+end, func(t *testing.T) {
				f := newPreparedFixture(t)
				type result struct {
					got string
					err error
				}
				done := make(chan result, 1)
				q := query1(t, tc.filter, tc.sort)
				go func() {
					got, err := f.find(context.Background(), q, true)
					done <- result{got, err}
				}()
				var r result
				select {
				case r = <-done:
					if tc.waits {
						t.Fatalf("did not wait for the prepared transaction: %q %v", r.got, r.err)
					}
				case <-time.After(200 * time.Millisecond):
					if !tc.waits {
						t.Fatal("waited for a prepared transaction that holds none of the documents read")
					}
				}
				if commit {
					if _, err := f.tx.CommitPrepared(f.tx.PrepareTimestamp(), nil); err != nil {
						t.Fatal(err)
					}
				} else if err := f.tx.AbortPrepared(nil); err != nil {
					t.Fatal(err)
				}
				if tc.waits {
					r = <-done
				}
				if r.err != nil || r.got != want {
					t.Fatalf("read %q (%v), want %q", r.got, r.err, want)
				}
			})
		}
	}
	t.Run("reads past prepared documents", func(t *testing.T) {
		// Without PrepareConflicts (a local or majority read) no read
		// waits: each sees the documents as before the transaction.
		f := newPreparedFixture(t)
		defer func() { _ = f.tx.AbortPrepared(nil) }()
		for _, tc := range cases {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, err := f.find(ctx, query1(t, tc.filter, tc.sort), false)
			cancel()
			if err != nil || got != tc.abort {
				t.Fatalf("%s: read %q (%v), want %q at once", tc.name, got, err, tc.abort)
			}
		}
	})
	t.Run("deadline", func(t *testing.T) {
		f := newPreparedFixture(t)
		defer func() { _ = f.tx.AbortPrepared(nil) }()
		for _, filter := range []bson.D{d("_id", 3), d(), d("u", 3)} {
			ctx, cancel := opctx.WithMaxTime(context.Background(), 30*time.Millisecond)
			_, err := f.find(ctx, query1(t, filter, nil), true)
			cancel()
			if mongoerr.CodeOf(err) != mongoerr.MaxTimeMSExpired {
				t.Fatalf("%v: %v, want MaxTimeMSExpired", filter, err)
			}
		}
	})
}

// TestPrepareConflictsPlainWrites checks that a plain write waits only for
// the keys the prepared transaction holds: an insert of another unique
// value does not wait; an insert of the unique value the transaction
// inserted waits, then fails with DuplicateKey after a commit or succeeds
// after an abort.
func TestPrepareConflictsPlainWrites(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprint("commit=", commit), func(t *testing.T) {
			f := newPreparedFixture(t)
			other := bdoc(t, bson.D{{Key: "_id", Value: 20}, {Key: "a", Value: 20}, {Key: "u", Value: 20}})
			if _, err := f.eng.Insert(f.ns, []bsoncore.Document{other}, true); err != nil {
				t.Fatalf("insert of another unique value: %v", err)
			}
			dup := bdoc(t, bson.D{{Key: "_id", Value: 21}, {Key: "a", Value: 21}, {Key: "u", Value: 10}})
			done := make(chan error, 1)
			go func() {
				res, err := f.eng.Insert(f.ns, []bsoncore.Document{dup}, true)
				if err == nil && len(res.WriteErrors) > 0 {
					err = res.WriteErrors[0].Err
				}
				done <- err
			}()
			select {
			case err := <-done:
				t.Fatalf("an insert of the prepared transaction's unique value did not wait: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			want := mongoerr.Code(0)
			if commit {
				want = mongoerr.DuplicateKey
				if _, err := f.tx.CommitPrepared(f.tx.PrepareTimestamp(), nil); err != nil {
					t.Fatal(err)
				}
			} else if err := f.tx.AbortPrepared(nil); err != nil {
				t.Fatal(err)
			}
			if err := <-done; mongoerr.CodeOf(err) != want {
				t.Fatalf("the waiting insert: %v, want code %d", err, want)
			}
		})
	}
}

// BenchmarkReadsDuringPrepare measures reads of documents a prepared
// transaction did not write, in the collection it did: a point read
// (IDHACK) and a range scan of two documents, with nothing prepared and
// while the transaction holds _id 3 and 10 (the per-step check's cost).
func BenchmarkReadsDuringPrepare(b *testing.B) {
	reads := []struct {
		name   string
		filter bson.D
		want   string
	}{
		{"point", bson.D{{Key: "_id", Value: 1}}, "1:1"},
		{"scan", bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 3}}}}, "1:1 2:2"},
	}
	for _, held := range []bool{false, true} {
		for _, rd := range reads {
			b.Run(fmt.Sprintf("%s/held=%v", rd.name, held), func(b *testing.B) {
				f := newPreparedFixture(b)
				if !held {
					if err := f.tx.AbortPrepared(nil); err != nil {
						b.Fatal(err)
					}
				}
				q := query1(b, rd.filter, nil)
				ctx := context.Background()
				b.ResetTimer()
				for b.Loop() {
					got, err := f.find(ctx, q, true)
					if err != nil || got != rd.want {
						b.Fatalf("read %q (%v), want %q", got, err, rd.want)
					}
				}
			})
		}
	}
}

// BenchmarkReadDuringPrepareRound measures what a reader of another
// document of the collection waits while a prepared transaction is held
// for holdFor (the coordinator's round between prepare and commit): each
// op prepares a transaction on _id 3, reads _id 1 and 2 by a range scan
// in a goroutine, holds, commits; the metric read-µs is the reader's
// latency. Per-collection prepare conflicts make it about holdFor; per
// document, a read's ordinary cost.
func BenchmarkReadDuringPrepareRound(b *testing.B) {
	const holdFor = time.Millisecond
	f := newPreparedFixture(b)
	if err := f.tx.AbortPrepared(nil); err != nil {
		b.Fatal(err)
	}
	q := query1(b, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 3}}}}, nil)
	three := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 3)}
	var waited time.Duration
	n := 0
	for b.Loop() {
		n++
		tx := f.eng.Begin()
		tx.Session = &engine.OplogSession{LSID: bdoc(b, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: int64(n + 1)}
		if _, err := f.eng.ModifyWith(f.ns, []bsoncore.Value{three}, engine.ModifyOptions{Ordered: true, Txn: tx}, func(int, bsoncore.Document) (engine.Action, error) {
			return engine.Action{Replace: bdoc(b, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: n}, {Key: "u", Value: 3}}), Replacement: true}, nil
		}); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Prepare(nil); err != nil {
			b.Fatal(err)
		}
		type read struct {
			took time.Duration
			got  string
			err  error
		}
		done := make(chan read, 1)
		go func() {
			start := time.Now()
			got, err := f.find(context.Background(), q, true)
			done <- read{time.Since(start), got, err}
		}()
		time.Sleep(holdFor)
		if _, err := tx.CommitPrepared(tx.PrepareTimestamp(), nil); err != nil {
			b.Fatal(err)
		}
		r := <-done
		if r.err != nil || r.got != "1:1 2:2" {
			b.Fatalf("read %q (%v)", r.got, r.err)
		}
		waited += r.took
	}
	b.ReportMetric(float64(waited.Microseconds())/float64(n), "read-µs")
}
