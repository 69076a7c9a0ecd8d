package changestream

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// fakeLog is an in-memory oplog: entries in ts order, trimmed from the
// front by trim.
type fakeLog struct {
	ts      []hlc.Timestamp
	entries []bsoncore.Document
	trimmed hlc.Timestamp
	docs    map[string]bsoncore.Document // "db.coll/<_id as ext JSON>" → document
	// tapFn is the Feed's tap (tapOplog), for tests that hand it groups.
	tapFn func(prev, now hlc.Timestamp, entries func(func(hlc.Timestamp, bsoncore.Document)))
}

// tapOplog makes fakeLog a tapLog; only tests that call tapFn hand over
// groups, the others' Feeds fill from the log.
func (l *fakeLog) tapOplog(fn func(prev, now hlc.Timestamp, entries func(func(hlc.Timestamp, bsoncore.Document)))) {
	l.tapFn = fn
}

func (l *fakeLog) add(ts hlc.Timestamp, e bsoncore.Document) {
	l.ts = append(l.ts, ts)
	l.entries = append(l.entries, e)
}

func (l *fakeLog) trim(n int) {
	l.trimmed = l.ts[n-1]
	l.ts, l.entries = l.ts[n:], l.entries[n:]
}

func (l *fakeLog) ReadOplog(after hlc.Timestamp, fn func(hlc.Timestamp, bsoncore.Document) bool) (hlc.Timestamp, error) {
	for i, ts := range l.ts {
		if ts > after && !fn(ts, l.entries[i]) {
			break
		}
	}
	return l.LastCommitted(), nil
}

func (l *fakeLog) OplogFirst() (hlc.Timestamp, error) {
	if len(l.ts) == 0 {
		return 0, nil
	}
	return l.ts[0], nil
}

func (l *fakeLog) OplogTrimmed() hlc.Timestamp { return l.trimmed }

func (l *fakeLog) LastCommitted() hlc.Timestamp {
	if len(l.ts) == 0 {
		return l.trimmed
	}
	return l.ts[len(l.ts)-1]
}

func (l *fakeLog) Lookup(db, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	d, ok := l.docs[db+"."+coll+"/"+id.String()]
	return d, ok, nil
}

func (l *fakeLog) PreImage(string, string, []byte, hlc.Timestamp, int32) (bsoncore.Document, bool, error) {
	return nil, false, nil
}

func doc(t testing.TB, v any) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var testUUID = bytes.Repeat([]byte{7}, 16)

// op is one operation as the oplog logs it (an entry's, or an applyOps's).
func op(kind, ns string, o, o2 any) bson.D {
	d := bson.D{{Key: "op", Value: kind}, {Key: "ns", Value: ns}, {Key: "ui", Value: bson.Binary{Subtype: 4, Data: testUUID}}, {Key: "o", Value: o}}
	if o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: o2})
	}
	return d
}

// logEntry is a whole oplog entry of op at ts.
func logEntry(t testing.TB, ts hlc.Timestamp, d bson.D) bsoncore.Document {
	return doc(t, append(d, bson.E{Key: "ts", Value: bson.Timestamp{T: ts.T(), I: ts.I()}}, bson.E{Key: "t", Value: int64(1)},
		bson.E{Key: "v", Value: int64(2)}, bson.E{Key: "wall", Value: bson.DateTime(1000)}))
}

func open(t testing.TB, l Log, scope Scope, spec Spec) *Stream {
	t.Helper()
	if spec.FullDocument == "" {
		spec.FullDocument, spec.FullDocumentBeforeChange = "default", "off"
	}
	s, err := Open(context.Background(), l, scope, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func drain(t testing.TB, s *Stream) []bson.D {
	t.Helper()
	var out []bson.D
	for {
		d, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if d == nil {
			return out
		}
		var ev bson.D
		if err := bson.Unmarshal(d, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

func get(d bson.D, k string) any {
	for _, e := range d {
		if e.Key == k {
			return e.Value
		}
	}
	return nil
}

func tokenOfEvent(t testing.TB, ev bson.D) Token {
	t.Helper()
	id := get(ev, "_id").(bson.D)
	tok, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc(t, id)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestApplyOpsUnwound: a transaction's commit entry, in MongoDB's applyOps
// shape as the transaction engineer writes it, gives one event per inner
// operation the stream sees, in order, each with the transaction's lsid and
// txnNumber and its index as the token's txnOpIndex; a resume inside the
// transaction goes on after the operation it names.
func TestApplyOpsUnwound(t *testing.T) {
	l := &fakeLog{}
	l.add(10, logEntry(t, 10, op("i", "db.c", bson.D{{Key: "_id", Value: 0}}, nil)))
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}
	inner := bson.A{
		op("i", "db.c", bson.D{{Key: "_id", Value: 1}}, nil),
		op("u", "db.c", bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "a", Value: 1}}}}}}, bson.D{{Key: "_id", Value: 0}}),
		op("d", "db.other", bson.D{{Key: "_id", Value: 9}}, nil),
		op("d", "db.c", bson.D{{Key: "_id", Value: 1}}, nil),
	}
	l.add(20, logEntry(t, 20, bson.D{{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(5)}, {Key: "op", Value: "c"}, {Key: "ns", Value: "admin.$cmd"},
		{Key: "o", Value: bson.D{{Key: "applyOps", Value: inner}}}}))
	s := open(t, l, Scope{DB: "db", Coll: "c"}, Spec{HasStartAt: true, StartAtOperationTime: 10})
	evs := drain(t, s)
	want := []struct {
		kind string
		idx  int32
		txn  bool
	}{{"insert", 0, false}, {"insert", 0, true}, {"update", 1, true}, {"delete", 3, true}}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		tok := tokenOfEvent(t, ev)
		if get(ev, "operationType") != w.kind || tok.TxnOpIndex != w.idx {
			t.Errorf("event %d: %v (txnOpIndex %d), want %s at %d", i, ev, tok.TxnOpIndex, w.kind, w.idx)
		}
		if hasTxn := get(ev, "txnNumber") != nil; hasTxn != w.txn || w.txn && (get(ev, "txnNumber") != int64(5) || get(ev, "lsid") == nil) {
			t.Errorf("event %d: txnNumber %v lsid %v, want them %v", i, get(ev, "txnNumber"), get(ev, "lsid"), w.txn)
		}
	}
	// Resume after the update, inside the transaction: only the delete.
	tok := tokenOfEvent(t, evs[2])
	rest := drain(t, open(t, l, Scope{DB: "db", Coll: "c"}, Spec{ResumeAfter: &tok}))
	if len(rest) != 1 || get(rest[0], "operationType") != "delete" {
		t.Fatalf("after the update: %v", rest)
	}
}

// TestResumeFromEveryToken: over a seeded random log of several
// collections, a database stream resumed after each event's token (and
// after each batch's resume token) returns exactly the events after it
// ("Tokens order as events"), and tokens rise.
func TestResumeFromEveryToken(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	l := &fakeLog{}
	ts := hlc.New(100, 0)
	for i := range 200 {
		ts += hlc.Timestamp(1 + rng.IntN(3))
		coll := []string{"a", "b", "c"}[rng.IntN(3)]
		ns := "db." + coll
		if rng.IntN(4) == 0 {
			ns = "other." + coll
		}
		if rng.IntN(8) == 0 {
			var ops bson.A
			for j := range 1 + rng.IntN(4) {
				ops = append(ops, op("i", ns, bson.D{{Key: "_id", Value: i*10 + j}}, nil))
			}
			l.add(ts, logEntry(t, ts, bson.D{{Key: "lsid", Value: bson.D{{Key: "id", Value: 1}}}, {Key: "txnNumber", Value: int64(i)}, {Key: "op", Value: "c"}, {Key: "ns", Value: "admin.$cmd"}, {Key: "o", Value: bson.D{{Key: "applyOps", Value: ops}}}}))
			continue
		}
		l.add(ts, logEntry(t, ts, op([]string{"i", "d"}[rng.IntN(2)], ns, bson.D{{Key: "_id", Value: i}}, nil)))
	}
	scope := Scope{DB: "db"}
	all := drain(t, open(t, l, scope, Spec{HasStartAt: true, StartAtOperationTime: l.ts[0]}))
	if len(all) < 100 {
		t.Fatalf("only %d events", len(all))
	}
	for i := range all {
		tok := tokenOfEvent(t, all[i])
		if i > 0 && tok.Encode() <= tokenOfEvent(t, all[i-1]).Encode() {
			t.Fatalf("token %d does not rise", i)
		}
		rest := drain(t, open(t, l, scope, Spec{ResumeAfter: &tok}))
		if len(rest) != len(all)-i-1 || len(rest) > 0 && !bytes.Equal(doc(t, rest[0]), doc(t, all[i+1])) {
			t.Fatalf("after event %d: %d events, want %d", i, len(rest), len(all)-i-1)
		}
	}
	// After the end (past an entry the stream does not show), the resume
	// token is a high water mark: resuming from it sees only what is
	// logged later.
	ts++
	l.add(ts, logEntry(t, ts, op("i", "other.x", bson.D{{Key: "_id", Value: "unseen"}}, nil)))
	s := open(t, l, scope, Spec{HasStartAt: true, StartAtOperationTime: l.ts[0]})
	drain(t, s)
	hwm, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.ResumeToken()})
	if err != nil || !hwm.HighWater {
		t.Fatalf("resume token at the end: %v %v, want a high water mark", hwm, err)
	}
	ts++
	l.add(ts, logEntry(t, ts, op("i", "db.a", bson.D{{Key: "_id", Value: "late"}}, nil)))
	late := drain(t, open(t, l, scope, Spec{ResumeAfter: &hwm}))
	if len(late) != 1 {
		t.Fatalf("after the high water mark: %v", late)
	}
	if more := drain(t, s); len(more) != 1 {
		t.Fatalf("the open stream read %d events after the log grew, want 1", len(more))
	}
}

// TestHistoryLost: a start before the oldest entry kept, and a stream
// whose next entries were trimmed, fail with ChangeStreamHistoryLost; a
// token of another collection is not found (ChangeStreamFatalError).
func TestHistoryLost(t *testing.T) {
	l := &fakeLog{}
	const n = 3 * readEvents
	for i := range n {
		ts := hlc.New(100, uint32(i+1))
		l.add(ts, logEntry(t, ts, op("i", "db.c", bson.D{{Key: "_id", Value: i}}, nil)))
	}
	s := open(t, l, Scope{DB: "db", Coll: "c"}, Spec{HasStartAt: true, StartAtOperationTime: hlc.New(100, 1)})
	first, err := s.Next()
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	// The stream read readEvents entries ahead; a trim past them loses the
	// ones after: it returns what it read, then fails.
	l.trim(2 * readEvents)
	got := 1
	for {
		d, err := s.Next()
		if err != nil {
			if mongoerr.CodeOf(err) != mongoerr.ChangeStreamHistoryLost || got != readEvents {
				t.Fatalf("after %d events: %v, want 286 after %d", got, err, readEvents)
			}
			break
		}
		if d == nil {
			t.Fatalf("the stream ended after %d events without an error", got)
		}
		got++
	}
	if _, err := Open(context.Background(), l, Scope{DB: "db", Coll: "c"}, Spec{HasStartAt: true, StartAtOperationTime: hlc.New(100, 2)}); mongoerr.CodeOf(err) != mongoerr.ChangeStreamHistoryLost {
		t.Fatalf("start before the oldest entry: %v, want 286", err)
	}
	tok := tokenOfEvent(t, func() bson.D { var d bson.D; _ = bson.Unmarshal(first, &d); return d }())
	if _, err := Open(context.Background(), l, Scope{DB: "db", Coll: "c"}, Spec{ResumeAfter: &tok}); mongoerr.CodeOf(err) != mongoerr.ChangeStreamHistoryLost {
		t.Fatalf("a token whose entry was trimmed: %v, want 286", err)
	}
	kept := hlc.New(100, uint32(n-2))
	l2 := &fakeLog{ts: l.ts, entries: l.entries}
	all := drain(t, open(t, l2, Scope{DB: "db", Coll: "c"}, Spec{HasStartAt: true, StartAtOperationTime: kept}))
	other := tokenOfEvent(t, all[0])
	if _, err := Open(context.Background(), l2, Scope{DB: "db", Coll: "d"}, Spec{ResumeAfter: &other}); mongoerr.CodeOf(err) != mongoerr.ChangeStreamFatalError {
		t.Fatalf("a token of another collection: %v, want 280", err)
	}
}

// TestTokenRoundTrip: what Encode writes ParseToken reads back; bytes that
// are not a token are refused with MongoDB's codes.
func TestTokenRoundTrip(t *testing.T) {
	for _, tok := range []Token{
		{ClusterTime: hlc.New(5, 6), TxnOpIndex: 3, UUID: testUUID, EventID: doc(t, bson.D{{Key: "operationType", Value: "insert"}, {Key: "documentKey", Value: bson.D{{Key: "_id", Value: "x"}}}})},
		{ClusterTime: hlc.New(5, 7), HighWater: true},
		{ClusterTime: hlc.New(9, 0), FromInvalidate: true, UUID: testUUID, EventID: doc(t, bson.D{{Key: "operationType", Value: "drop"}})},
	} {
		// Doc builds {_data} by hand in one allocation: the same bytes as
		// a builder's, a valid document, whatever scratch it encodes in.
		want := bsoncore.NewDocumentBuilder().AppendString("_data", tok.Encode()).Build()
		for _, scratch := range [][]byte{nil, make([]byte, 3, 8), make([]byte, 0, 512)} {
			if d, _ := tok.docWith(scratch); !bytes.Equal(d, want) || d.Validate() != nil {
				t.Errorf("docWith(scratch of cap %d) of %+v: %v, want %v", cap(scratch), tok, d, want)
			}
		}
		got, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: tok.Doc()})
		if err != nil || got.Encode() != tok.Encode() || got.ClusterTime != tok.ClusterTime || got.HighWater != tok.HighWater || got.TxnOpIndex != tok.TxnOpIndex || got.FromInvalidate != tok.FromInvalidate {
			t.Errorf("round trip of %+v: %+v, %v", tok, got, err)
		}
	}
	for _, tc := range []struct {
		tok  bson.D
		code mongoerr.Code
	}{
		{bson.D{{Key: "_data", Value: "zz"}}, mongoerr.FailedToParse},
		{bson.D{{Key: "_data", Value: "0102"}}, mongoerr.InvalidResumeToken},
		{bson.D{{Key: "_data", Value: 5}}, mongoerr.InvalidResumeToken},
		{bson.D{{Key: "other", Value: "x"}}, mongoerr.InvalidResumeToken},
	} {
		if _, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc(t, tc.tok)}); mongoerr.CodeOf(err) != tc.code {
			t.Errorf("ParseToken(%v): %v, want %d", tc.tok, err, tc.code)
		}
	}
}
