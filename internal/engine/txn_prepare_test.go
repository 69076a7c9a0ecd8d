package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestPreparedSurvives checks invariant "Prepared survives": a prepared
// transaction holds its documents (against readers too) and its collection
// against writers and DDL, is not ended by Abort, comes back from its record after a restart
// holding them again, and its commit (or abort) applies (or drops) its
// writes and its record.
func TestPreparedSurvives(t *testing.T) {
	for _, commit := range []bool{true, false} {
		name := "abort"
		if commit {
			name = "commit"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			e := openEngine(t, dir)
			ns := Namespace{"db", "c"}
			if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
				t.Fatal(err)
			}
			tx := e.Begin()
			tx.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 5}
			if err := txnSet(t, e, tx, ns, 1, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := e.InsertWith(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 30}})}, InsertOptions{Ordered: true, Txn: tx}); err != nil {
				t.Fatal(err)
			}
			pts, err := tx.Prepare(nil)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := tx.Prepare(nil); err != nil || again != pts {
				t.Fatalf("prepare again: %v %v, want %v", again, err, pts)
			}
			tx.Abort() // a kill or the lifetime limit: the transaction stays prepared
			held := func(e *Engine) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				if err := e.WaitPreparedDoc(ctx, ns, val(t, 1)); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("a reader's wait on a prepared document: %v, want it to wait", err)
				}
				if err := e.WaitPreparedDoc(ctx, ns, val(t, 2)); err != nil {
					t.Fatalf("a reader's wait on a document the transaction did not write: %v", err)
				}
				other := e.Begin()
				other.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 99}
				if err := txnSet(t, e, other, ns, 1, 70); mongoerr.CodeOf(err) != mongoerr.WriteConflict {
					t.Fatalf("another transaction's write of a prepared document: %v, want WriteConflict", err)
				}
				other.Abort()
				if _, err := e.DropCollection(ns); err == nil {
					t.Fatal("drop of a prepared transaction's collection succeeded")
				}
				if got := getA(t, e.Get, ns, 1); got != 0 {
					t.Fatalf("_id 1 has a=%d before the commit", got)
				}
			}
			held(e)
			// Restart: the transaction comes back from its record.
			tx.Release()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = openEngine(t, dir)
			txs, err := e.RestorePrepared()
			if err != nil || len(txs) != 1 {
				t.Fatalf("restored %d prepared transactions (%v), want 1", len(txs), err)
			}
			tx = txs[0]
			if tx.PrepareTimestamp() != pts || tx.Session.TxnNumber != 5 || !tx.Prepared() {
				t.Fatalf("restored transaction %v/%d, want prepared at %v, number 5", tx.PrepareTimestamp(), tx.Session.TxnNumber, pts)
			}
			held(e)
			// A plain write waits for the end (a prepare conflict), then
			// applies over it.
			plain := make(chan error, 1)
			go func() {
				_, err := e.Replace(ns, val(t, 1), doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 7}, {Key: "plain", Value: true}}))
				plain <- err
			}()
			select {
			case err := <-plain:
				t.Fatalf("a plain write of a prepared document did not wait: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			oplog := len(oplogEntries(t, e))
			want1, want3 := 0, -1
			if commit {
				if _, err := tx.CommitPrepared(pts-1, nil); err == nil {
					t.Fatal("a commitTimestamp before the prepare time was taken")
				}
				cts := pts + 5
				ts, err := tx.CommitPrepared(cts, nil)
				if err != nil {
					t.Fatal(err)
				}
				if ts < cts {
					t.Fatalf("commit's oplog time %v is before its commitTimestamp %v", ts, cts)
				}
				want1, want3 = 10, 30
				if n := len(oplogEntries(t, e)); n < oplog+1 {
					t.Fatalf("%d oplog entries after the commit, want at least %d", n, oplog+1)
				}
			} else if err := tx.AbortPrepared(nil); err != nil {
				t.Fatal(err)
			}
			if err := <-plain; err != nil {
				t.Fatalf("the waiting plain write: %v", err)
			}
			if got := getA(t, e.Get, ns, 1); got != 7 {
				t.Fatalf("_id 1 has a=%d after the waiting write, want 7 (the transaction's was %d)", got, want1)
			}
			if got := getA(t, e.Get, ns, 3); got != want3 {
				t.Fatalf("_id 3 has a=%d, want %d", got, want3)
			}
			if txs, err := e.RestorePrepared(); err != nil || len(txs) != 0 {
				t.Fatalf("%d prepared records after the end (%v)", len(txs), err)
			}
			if _, err := e.Replace(ns, val(t, 1), doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 7}})); err != nil {
				t.Fatalf("replace after the end: %v", err)
			}
		})
	}
	t.Run("prepare meets a conflict", func(t *testing.T) {
		e := openEngine(t, "")
		ns := Namespace{"db", "c"}
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
			t.Fatal(err)
		}
		tx := e.Begin()
		tx.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 1}
		if err := txnSet(t, e, tx, ns, 1, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Replace(ns, val(t, 1), doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 7}})); err != nil {
			t.Fatal(err)
		}
		_, err := tx.Prepare(nil)
		if mongoerr.CodeOf(err) != mongoerr.WriteConflict || tx.Prepared() {
			t.Fatalf("prepare after a conflicting write: %v (prepared %v), want WriteConflict", err, tx.Prepared())
		}
		tx.Abort()
		if txs, err := e.RestorePrepared(); err != nil || len(txs) != 0 {
			t.Fatalf("%d prepared records after a failed prepare (%v)", len(txs), errors.Join(err))
		}
	})
}
