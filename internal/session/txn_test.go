package session

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

func openTable(t *testing.T, now func() time.Time) (*Table, *engine.Engine) {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return NewTable(eng, now), eng
}

// TestTransactionStates: the session's transaction numbers and states as
// MongoDB's TransactionParticipant answers them ("One transaction per
// number"), step by step.
func TestTransactionStates(t *testing.T) {
	tbl, eng := openTable(t, nil)
	id := ID{UUID: [16]byte{1}}
	ns := engine.Namespace{DB: "db", Coll: "c"}
	if err := eng.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	for i, step := range []struct {
		op   string // start, stmt, write, commit, abort, retry
		n    int64
		want mongoerr.Code
	}{
		{"stmt", 1, mongoerr.NoSuchTransaction}, // nothing started
		{"commit", 1, mongoerr.NoSuchTransaction},
		{"start", 2, 0},
		{"write", 2, 0},
		{"start", 2, mongoerr.ConflictingOperationInProgress},
		{"stmt", 1, mongoerr.TransactionTooOld},
		{"stmt", 3, mongoerr.NoSuchTransaction},
		{"commit", 2, 0},
		{"commit", 2, 0}, // the retryable commit
		{"stmt", 2, mongoerr.TransactionCommitted},
		{"abort", 2, mongoerr.TransactionCommitted},
		{"start", 4, 0},
		{"abort", 4, 0},
		{"commit", 4, mongoerr.NoSuchTransaction},
		{"abort", 4, mongoerr.NoSuchTransaction},
		{"start", 5, 0},
		{"retry", 6, 0}, // a newer retryable write aborts the open transaction
		{"commit", 5, mongoerr.TransactionTooOld},
	} {
		use, err := tbl.Checkout(context.Background(), id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		switch step.op {
		case "start", "stmt":
			_, err = use.Transaction(step.n, step.op == "start")
		case "write":
			var tx *engine.Txn
			if tx, err = use.Transaction(step.n, false); err == nil {
				_, err = eng.InsertWith(ns, []bsoncore.Document{doc}, engine.InsertOptions{Txn: tx})
			}
		case "commit":
			_, err = use.CommitTransaction(step.n)
		case "abort":
			err = use.AbortTransaction(step.n)
		case "retry":
			_, err = use.BeginRetry(step.n)
		}
		use.Release()
		if got := mongoerr.CodeOf(err); got != step.want {
			t.Fatalf("step %d (%s %d): %v, want code %d", i, step.op, step.n, err, step.want)
		}
	}
	if _, found, _ := eng.Get(nil, ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}); !found {
		t.Error("transaction 2's insert is not there after its commit")
	}
}

// TestTransactionRecordAndLifetime: a committed transaction's record lets
// a new table (a new primary) answer its retried commit; an open
// transaction past transactionLifetimeLimitSeconds is aborted by
// AbortExpired, and its next statement is NoSuchTransaction.
func TestTransactionRecordAndLifetime(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	tbl, eng := openTable(t, clock)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	if err := eng.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	id := ID{UUID: [16]byte{2}}
	use, _ := tbl.Checkout(context.Background(), id, "", nil)
	tx, err := use.Transaction(7, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.InsertWith(ns, []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()}, engine.InsertOptions{Txn: tx}); err != nil {
		t.Fatal(err)
	}
	if _, err := use.CommitTransaction(7); err != nil {
		t.Fatal(err)
	}
	use.Release()
	fresh := NewTable(eng, clock)
	use, _ = fresh.Checkout(context.Background(), id, "", nil)
	if _, err := use.CommitTransaction(7); err != nil {
		t.Errorf("the retried commit on a new table: %v, want ok", err)
	}
	if _, err := use.Transaction(8, true); err != nil {
		t.Fatal(err)
	}
	use.Release()
	if n := fresh.AbortExpired(); n != 0 || fresh.OpenTransactions() != 1 {
		t.Errorf("a young transaction was aborted (%d)", n)
	}
	now = now.Add(DefaultTransactionLifetime + time.Second)
	if n := fresh.AbortExpired(); n != 1 || fresh.OpenTransactions() != 0 {
		t.Errorf("AbortExpired aborted %d, %d still open; want 1, 0", n, fresh.OpenTransactions())
	}
	use, _ = fresh.Checkout(context.Background(), id, "", nil)
	defer use.Release()
	if _, err := use.Transaction(8, false); mongoerr.CodeOf(err) != mongoerr.NoSuchTransaction {
		t.Errorf("a statement of the expired transaction: %v, want NoSuchTransaction", err)
	}
}

// TestKillAbortsTransaction: killSessions aborts a session's open
// transaction, at once when no command uses the session and at the
// release of the command that does.
func TestKillAbortsTransaction(t *testing.T) {
	tbl, _ := openTable(t, nil)
	idle, busy := ID{UUID: [16]byte{3}}, ID{UUID: [16]byte{4}}
	for _, id := range []ID{idle, busy} {
		use, _ := tbl.Checkout(context.Background(), id, "", nil)
		if _, err := use.Transaction(1, true); err != nil {
			t.Fatal(err)
		}
		use.Release()
	}
	tbl.mu.Lock()
	idleEntry := tbl.m[idle]
	tbl.mu.Unlock()
	running, _ := tbl.Checkout(context.Background(), busy, "", func(error) {})
	tbl.Kill(func(ID, string) bool { return true }, context.Canceled)
	tbl.mu.Lock()
	idleStatus := idleEntry.tx.status
	tbl.mu.Unlock()
	if idleStatus != txnAborted {
		t.Errorf("the idle killed session's transaction is %d, want aborted", idleStatus)
	}
	if running.e.tx.status != txnOpen {
		t.Error("the transaction of the session in use was aborted under its command")
	}
	running.Release()
	if running.e.tx.status != txnAborted {
		t.Errorf("after the command released the killed session, its transaction is %d, want aborted", running.e.tx.status)
	}
}

// TestRetryRecordsOfOlderNumbersGo: the first write of a newer retryable
// transaction number deletes the session's records of older numbers, so a
// session keeps only its newest number's statements; a write that failed
// deleted nothing, and the next newer number's deletes what it left.
var errFailedWrite = errors.New("the write failed")

func TestRetryRecordsOfOlderNumbersGo(t *testing.T) {
	tbl, eng := openTable(t, nil)
	id := ID{UUID: [16]byte{4}}
	keys := func() (n map[int64]int) {
		n = map[int64]int{}
		it, err := eng.Storage().NewIter(retryPrefix(id), storage.PrefixEnd(retryPrefix(id)))
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()[len(retryPrefix(id)):]
			n[int64(binary.BigEndian.Uint64(k)^1<<63)]++
		}
		return n
	}
	for _, step := range []struct {
		txn   int64
		stmts []int32
		fail  bool
		want  map[int64]int
	}{
		{1, []int32{0, 1, 2}, false, map[int64]int{1: 3}},
		{1, []int32{3}, false, map[int64]int{1: 4}}, // the same number adds
		{2, []int32{0}, false, map[int64]int{2: 1}},
		{5, []int32{0, 1}, false, map[int64]int{5: 2}},
		{6, []int32{0}, true, map[int64]int{5: 2}},
		{6, []int32{0}, false, map[int64]int{5: 2, 6: 1}}, // not the first write of 6
		{7, []int32{0}, false, map[int64]int{7: 1}},
	} {
		use, err := tbl.Checkout(context.Background(), id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := use.BeginRetry(step.txn)
		if err != nil {
			t.Fatal(err)
		}
		err = eng.WriteRider(func(tx *storage.Txn) error {
			for _, s := range step.stmts {
				if err := r.Record(tx, Stmt{ID: s, Result: bsoncore.NewDocumentBuilder().Build()}); err != nil {
					return err
				}
			}
			if step.fail {
				return errFailedWrite
			}
			return nil
		})
		use.Release()
		if err != nil && !(step.fail && errors.Is(err, errFailedWrite)) {
			t.Fatal(err)
		}
		if got := keys(); !maps.Equal(got, step.want) {
			t.Errorf("after txn %d: records by number %v, want %v", step.txn, got, step.want)
		}
	}
}

// TestTransactionReuse: a session's next transaction reuses its last one's
// object once that ended, committed or aborted (engine.BeginReusing), and
// starts from a clean state: the new transaction sees what the last one
// committed, none of its writes as its own, and names its own number in
// its oplog entry.
func TestTransactionReuse(t *testing.T) {
	tbl, eng := openTable(t, nil)
	id := ID{UUID: [16]byte{2}}
	ns := engine.Namespace{DB: "db", Coll: "c"}
	if err := eng.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	use, err := tbl.Checkout(context.Background(), id, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer use.Release()
	idOf := func(n int32) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
	}
	first, err := use.Transaction(1, true)
	if err != nil {
		t.Fatal(err)
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	if _, err := eng.InsertWith(ns, []bsoncore.Document{doc}, engine.InsertOptions{Txn: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := use.CommitTransaction(1); err != nil {
		t.Fatal(err)
	}
	second, err := use.Transaction(2, true)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Error("the session's second transaction did not reuse its committed first")
	}
	if second.Writes() || second.Session == nil || second.Session.TxnNumber != 2 {
		t.Errorf("the reused transaction is not fresh: writes %v, session %+v", second.Writes(), second.Session)
	}
	if _, found, err := eng.GetIn(second, nil, ns, idOf(1)); !found || err != nil {
		t.Errorf("the second transaction does not see the first's commit: %v %v", found, err)
	}
	doc2 := bsoncore.NewDocumentBuilder().AppendInt32("_id", 2).Build()
	if _, err := eng.InsertWith(ns, []bsoncore.Document{doc2}, engine.InsertOptions{Txn: second}); err != nil {
		t.Fatal(err)
	}
	if err := use.AbortTransaction(2); err != nil {
		t.Fatal(err)
	}
	third, err := use.Transaction(3, true)
	if err != nil {
		t.Fatal(err)
	}
	if third != first {
		t.Error("the session's third transaction did not reuse its aborted second")
	}
	if _, found, err := eng.GetIn(third, nil, ns, idOf(2)); found || err != nil {
		t.Errorf("the aborted transaction's insert is visible to the next: %v %v", found, err)
	}
	if _, err := use.CommitTransaction(3); err != nil {
		t.Fatal(err)
	}
}
