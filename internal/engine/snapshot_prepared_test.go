package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestSnapshotPreparedInterval checks invariant "A read at T sees a
// prepared commit iff its commitTimestamp ≤ T": a read at a time while a
// transaction is prepared waits (a prepare conflict); after its commit at
// commitTimestamp C, applied here at S > C, a read at a T in [C, S) of a
// collection it wrote is SnapshotUnavailable (its view lacks the commit),
// one before C sees the old document, one at S the new; other collections
// read at any T. A transaction at a time (BeginAt) reads the same, and its
// write of a document changed since its time conflicts.
func TestSnapshotPreparedInterval(t *testing.T) {
	e := openEngine(t, "")
	e.AllowSnapshotHistory()
	e.SetSnapshotHistoryWindow(time.Minute) // views after every commit
	ns, other := Namespace{"db", "c"}, Namespace{"db", "other"}
	for _, n := range []Namespace{ns, other} {
		if _, err := e.Insert(n, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	before := e.db.LastCommitted()
	tx := e.Begin()
	tx.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 1}
	if err := txnSet(t, e, tx, ns, 1, 10); err != nil {
		t.Fatal(err)
	}
	pts, err := tx.Prepare(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(other, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 2}})}, true); err != nil {
		t.Fatal(err)
	}
	mid := e.db.LastCommitted() // after the prepare: the commitTimestamp
	if mid < pts {
		t.Fatalf("a write after the prepare at %v committed at %v", pts, mid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := e.WaitPreparedAt(ctx, ns, mid); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read at %v while prepared at %v: %v, want it to wait", mid, pts, err)
	}
	cancel()
	if err := e.WaitPreparedAt(context.Background(), other, mid); err != nil {
		t.Fatalf("a read of a collection the prepared transaction did not write: %v", err)
	}
	applied, err := tx.CommitPrepared(mid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if applied <= mid {
		t.Fatalf("the commit applied at %v, not after its commitTimestamp %v: the case under test does not arise", applied, mid)
	}
	for _, c := range []struct {
		name string
		ns   Namespace
		at   hlc.Timestamp
		want int64         // the document's a
		code mongoerr.Code // or this error
	}{
		{"before the commitTimestamp", ns, before, 0, 0},
		{"at the commitTimestamp, before the commit applied", ns, mid, 0, mongoerr.SnapshotUnavailable},
		{"between, on a collection it did not write", other, mid, 0, 0},
		{"at the commit's own time", ns, applied, 10, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := e.GetAt(nil, c.ns, val(t, 1), c.at)
			check := func(how string, d []byte, err error) {
				t.Helper()
				if c.code != 0 {
					if mongoerr.CodeOf(err) != c.code {
						t.Fatalf("%s: %v, want code %d", how, err, c.code)
					}
					return
				}
				if err != nil || aOf(d) != c.want {
					t.Fatalf("%s: %v, %v; want a=%d", how, bson.Raw(d), err, c.want)
				}
			}
			check("a read at the time", got, err)
			in, err := e.BeginAt(c.at)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Abort()
			got, _, err = e.GetIn(in, nil, c.ns, val(t, 1))
			check("a transaction at the time", got, err)
		})
	}
	// A transaction at a time before the commit writes its document:
	// first writer wins, as for any snapshot.
	old, err := e.BeginAt(before)
	if err != nil {
		t.Fatal(err)
	}
	old.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 2}
	err = txnSet(t, e, old, ns, 1, 20)
	if err == nil {
		_, err = old.Commit(nil)
	}
	if mongoerr.CodeOf(err) != mongoerr.WriteConflict {
		t.Fatalf("a write at a time before a later commit: %v, want WriteConflict", err)
	}
	old.Abort()
	// A commitTimestamp ahead of every time here: the commit takes it
	// exactly, and a read at it sees the commit.
	next := e.Begin()
	next.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 3}
	if err := txnSet(t, e, next, ns, 1, 30); err != nil {
		t.Fatal(err)
	}
	if _, err := next.Prepare(nil); err != nil {
		t.Fatal(err)
	}
	ahead := e.db.Clock().Current() + 5
	if got, err := next.CommitPrepared(ahead, nil); err != nil || got != ahead {
		t.Fatalf("a commit at commitTimestamp %v ahead of the clock applied at %v, %v", ahead, got, err)
	}
	if d, _, err := e.GetAt(nil, ns, val(t, 1), ahead); err != nil || aOf(d) != 30 {
		t.Fatalf("a read at the commitTimestamp of a commit applied at it: %v, %v", bson.Raw(d), err)
	}
}

// aOf is a document's a, -1 for none (or no document).
func aOf(d []byte) int64 {
	if len(d) < 5 {
		return -1
	}
	a, ok := bsoncore.Document(d).Lookup("a").AsInt64OK()
	if !ok {
		return -1
	}
	return a
}
