package engine

import (
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTxnHolds checks invariant "Holds end with the transaction": a hold
// is released once, when the transaction ends by any way, and a prepared
// transaction keeps it through Abort.
func TestTxnHolds(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "holds"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
		t.Fatal(err)
	}
	lsid := doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}})
	for _, tc := range []struct {
		name string
		// end ends tx (wrote one statement); prepared says whether it
		// prepared it first (and Abort must then keep the hold).
		end      func(tx *Txn) error
		prepared bool
	}{
		{"commit", func(tx *Txn) error { _, err := tx.Commit(nil); return err }, false},
		{"abort", func(tx *Txn) error { tx.Abort(); return nil }, false},
		{"release", func(tx *Txn) error { tx.Release(); return nil }, false},
		{"commit prepared", func(tx *Txn) error {
			_, err := tx.CommitPrepared(tx.PrepareTimestamp(), nil)
			return err
		}, true},
		{"abort prepared", func(tx *Txn) error { return tx.AbortPrepared(nil) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := e.Begin()
			tx.Session = &OplogSession{LSID: lsid, TxnNumber: 7}
			released := 0
			tx.Hold("db.holds", func() { released++ })
			if !tx.Holds("db.holds") || tx.Holds("db.other") {
				t.Fatal("Holds: want db.holds only")
			}
			extra := 0
			tx.Hold("db.holds", func() { extra++ }) // a second hold of one name runs at once
			if extra != 1 || released != 0 {
				t.Fatalf("a second hold of one name: ran %d, first ran %d; want 1, 0", extra, released)
			}
			if err := txnSet(t, e, tx, ns, 1, 5); err != nil {
				t.Fatal(err)
			}
			if tc.prepared {
				if _, err := tx.Prepare(nil); err != nil {
					t.Fatal(err)
				}
				tx.Abort() // a kill: the prepared transaction goes on holding
				if released != 0 {
					t.Fatal("Abort of a prepared transaction released its hold")
				}
			}
			if err := tc.end(tx); err != nil {
				t.Fatal(err)
			}
			tx.Abort() // ending again releases nothing more
			if released != 1 || tx.Holds("db.holds") {
				t.Fatalf("released %d times after the end, want once", released)
			}
			late := 0
			tx.Hold("db.late", func() { late++ }) // a hold after the end runs at once
			if late != 1 || tx.Holds("db.late") {
				t.Fatalf("a hold after the end: ran %d times, held %v; want once, not held", late, tx.Holds("db.late"))
			}
		})
	}
}

// TestTxnHoldRacesEnd checks "Holds end with the transaction" when a hold
// races the end (the holds' state moves from none to some under the
// mutex, or from none to over without it): the release runs exactly once,
// by the end or by Hold itself, whichever comes second. Run it with -race.
func TestTxnHoldRacesEnd(t *testing.T) {
	e := openEngine(t, "")
	for _, tc := range []struct {
		name string
		end  func(tx *Txn)
	}{
		{"abort", func(tx *Txn) { tx.Abort() }},
		{"commit", func(tx *Txn) { _, _ = tx.Commit(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 300 {
				tx := e.Begin()
				var runs atomic.Int32
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					tx.Hold("db.c", func() { runs.Add(1) })
				}()
				tc.end(tx)
				wg.Wait()
				if n := runs.Load(); n != 1 {
					t.Fatalf("round %d: the release ran %d times, want once", i, n)
				}
			}
		})
	}
}
