package session

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/storage"
)

// TestStmtIDs: with a router's stmtIds, the statement at position i is
// recorded and found under ids[i] (its position in the client's batch), so
// a retry that sends the statements in another grouping finds them.
func TestStmtIDs(t *testing.T) {
	tbl, eng := openTable(t, nil)
	id := ID{UUID: [16]byte{7}}
	res := bsoncore.NewDocumentBuilder().AppendInt64("n", 1).Build()
	use, err := tbl.Checkout(context.Background(), id, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := use.BeginRetry(3)
	if err != nil {
		t.Fatal(err)
	}
	r.UseStmtIDs([]int32{5, 9})
	if err := eng.WriteRider(func(tx *storage.Txn) error { return r.Record(tx, Stmt{ID: 1, Result: res}) }); err != nil {
		t.Fatal(err)
	}
	if s := r.OplogSession(0, 1).StmtIDs; len(s) != 2 || s[0] != 5 || s[1] != 9 {
		t.Fatalf("oplog stmtIds %v, want [5 9]", s)
	}
	use.Release()

	use, err = tbl.Checkout(context.Background(), id, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer use.Release()
	again, err := use.BeginRetry(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stmt int32
		done bool
	}{{9, true}, {1, false}, {5, false}} {
		if _, done := again.Done(c.stmt); done != c.done {
			t.Errorf("statement %d done %v, want %v", c.stmt, done, c.done)
		}
	}
	again.UseStmtIDs([]int32{9})
	if _, done := again.Done(0); !done {
		t.Errorf("position 0 with stmtIds [9] is not done")
	}
}

// TestStaleKeysFromMemory walks invariant "Stale keys from memory": step
// by step, a session's retryable writes, retries, failures and the events
// after which its kept statement keys are not trusted. After each step the
// keys kept, when trusted, are exactly those the iterator reads; the
// store holds exactly the statement keys it should (a new number deletes
// every older one's, also those a failed group's deletions left); and a
// new number takes its stale keys from memory exactly when they are
// trusted.
func TestStaleKeysFromMemory(t *testing.T) {
	if txnPrefixLen := len(txnPrefix(ID{}, 0)); txnPrefixLen+4 != keyLen {
		t.Fatalf("keyLen %d, but a statement key is %d bytes", keyLen, txnPrefixLen+4)
	}
	tbl, eng := openTable(t, nil)
	id := ID{UUID: [16]byte{4}, UID: UIDOf("u")}
	res := bsoncore.NewDocumentBuilder().AppendInt64("n", 1).Build()
	errUndo := errors.New("the rest of the request failed")
	want := map[string]bool{} // the session's statement keys the store should hold
	keyOf := func(n int64, stmt int32) string {
		return string(binary.BigEndian.AppendUint32(txnPrefix(id, n), uint32(stmt)))
	}
	for i, st := range []struct {
		op      string // write, undo, groupfail, begin, txn, forget, restart, install
		n       int64  // the transaction number
		from, k int32  // write statements from..from+k-1
		mem     bool   // a write's BeginRetry takes its stale keys from memory
		trusted bool   // the kept keys are trusted after the step
	}{
		{op: "write", n: 1, k: 2, mem: false, trusted: true}, // a new session: nothing kept yet
		{op: "write", n: 2, k: 3, mem: true, trusted: true},
		{op: "write", n: 2, from: 3, k: 2, trusted: true}, // the same number: its keys grow
		{op: "begin", n: 3, mem: true, trusted: true},     // a command that never wrote
		{op: "write", n: 4, k: 1, mem: true, trusted: true},
		{op: "undo", n: 5, k: 2, mem: true, trusted: false},
		{op: "write", n: 6, k: 2, mem: false, trusted: true},
		{op: "groupfail", n: 7, k: 3, mem: true, trusted: false},
		{op: "write", n: 8, k: 1, mem: false, trusted: true}, // deletes 6's keys, which 7 left
		{op: "txn", n: 9, trusted: true},                     // a transaction writes no statement keys
		{op: "write", n: 10, k: 2, mem: true, trusted: true},
		{op: "forget", trusted: false},
		{op: "write", n: 11, k: 1, mem: false, trusted: true},
		{op: "restart", trusted: false},
		{op: "write", n: 12, k: 2, mem: false, trusted: true},
		{op: "install", n: 13, k: 2, trusted: false},
		{op: "write", n: 14, k: 1, mem: false, trusted: true},
		{op: "write", n: 15, k: maxKeptKeys + 1, mem: true, trusted: false}, // too many to keep
		{op: "write", n: 16, k: 1, mem: false, trusted: true},
		{op: "write", n: 17, k: 1, mem: true, trusted: true},
	} {
		ctx := context.Background()
		switch st.op {
		case "forget":
			tbl.Forget()
		case "restart":
			tbl = NewTable(eng, nil)
		case "install":
			h := RetryHistory{LSID: id.Doc(), Txn: st.n, Stmts: map[int32]bsoncore.Document{}}
			for s := st.from; s < st.from+st.k; s++ {
				h.Stmts[s] = res
				want[keyOf(st.n, s)] = true
			}
			if err := tbl.InstallRetryHistories(ctx, []RetryHistory{h}); err != nil {
				t.Fatalf("step %d: install: %v", i, err)
			}
		case "txn":
			use, err := tbl.Checkout(ctx, id, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := use.Transaction(st.n, true); err != nil {
				t.Fatalf("step %d: start transaction: %v", i, err)
			}
			if err := use.AbortTransaction(st.n); err != nil {
				t.Fatalf("step %d: abort transaction: %v", i, err)
			}
			use.Release()
		default: // write, undo, groupfail, begin
			use, err := tbl.Checkout(ctx, id, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := use.BeginRetry(st.n)
			if err != nil {
				t.Fatalf("step %d: BeginRetry(%d): %v", i, st.n, err)
			}
			if r.fresh && r.fromMem != st.mem {
				t.Errorf("step %d (%s %d): stale keys from memory %v, want %v", i, st.op, st.n, r.fromMem, st.mem)
			}
			if st.op == "groupfail" {
				fp, _ := eng.FailPoints().Lookup(failpoint.StorageFailBeforeCommit)
				fp.Set(failpoint.Config{Mode: failpoint.Times, N: 1})
			}
			if st.op != "begin" {
				stmts := make([]Stmt, 0, st.k)
				for s := st.from; s < st.from+st.k; s++ {
					stmts = append(stmts, Stmt{ID: s, Result: res})
				}
				err = eng.WriteRider(func(tx *storage.Txn) error {
					if err := r.Record(tx, stmts...); err != nil {
						return err
					}
					if st.op == "undo" {
						return errUndo
					}
					return nil
				})
				if (err == nil) != (st.op == "write") {
					t.Fatalf("step %d (%s %d): write: %v", i, st.op, st.n, err)
				}
				if err == nil {
					if r.fresh {
						clear(want)
					}
					for _, s := range stmts {
						want[keyOf(st.n, s.ID)] = true
					}
				}
			}
			use.Release()
		}

		use, err := tbl.Checkout(ctx, id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		e := use.e
		tbl.settleClear(e) // as the next BeginRetry does
		if got := tbl.keysValid(e); got != st.trusted {
			t.Errorf("step %d (%s %d): kept keys trusted %v, want %v", i, st.op, st.n, got, st.trusted)
		}
		if err := tbl.checkStaleKeys(id, e, 1<<40); err != nil {
			t.Errorf("step %d (%s %d): %v", i, st.op, st.n, err)
		}
		use.Release()
		stored := map[string]bool{}
		it, err := eng.Storage().NewIter(retryPrefix(id), storage.PrefixEnd(retryPrefix(id)))
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			stored[string(it.Key())] = true
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(stored, want) {
			t.Errorf("step %d (%s %d): the store holds %d statement keys, want %d", i, st.op, st.n, len(stored), len(want))
		}
	}
}

// TestRetryRecordShape: the config.transactions record appended field by
// field (appendRetryRecord) is byte for byte the document the builders
// make, {_id: lsid, txnNum, lastWriteOpTime: {ts, t}, lastWriteDate}, and
// retryRecordSize is its size less the lsid's.
func TestRetryRecordShape(t *testing.T) {
	for _, c := range []struct {
		name string
		id   ID
		txn  int64
		ot   OpTime
		date int64
	}{
		{"standalone (term -1)", ID{UUID: [16]byte{1, 2, 3}}, 7, OpTime{TS: 1<<32 | 5, Term: -1}, 1_700_000_000_000},
		{"replica set member", ID{UUID: [16]byte{9}, UID: [32]byte{4, 5}}, 1 << 40, OpTime{TS: 0xfedcba98_76543210, Term: 12}, 0},
		{"zeroes", ID{}, 0, OpTime{}, -1},
	} {
		lsid := c.id.Doc()
		want := bsoncore.NewDocumentBuilder().
			AppendDocument("_id", lsid).
			AppendInt64("txnNum", c.txn).
			AppendDocument("lastWriteOpTime", bsoncore.NewDocumentBuilder().
				AppendTimestamp("ts", uint32(c.ot.TS>>32), uint32(c.ot.TS)).
				AppendInt64("t", c.ot.Term).Build()).
			AppendDateTime("lastWriteDate", c.date).Build()
		got := appendRetryRecord(nil, lsid, c.txn, c.ot, c.date)
		if string(got) != string(want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
		if len(want) != retryRecordSize+len(lsid) {
			t.Errorf("%s: %d bytes, retryRecordSize says %d", c.name, len(want), retryRecordSize+len(lsid))
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		// Appended after other bytes, the record is the same.
		if got := appendRetryRecord([]byte("prefix"), lsid, c.txn, c.ot, c.date); string(got) != string(want) {
			t.Errorf("%s, after a prefix: %v, want %v", c.name, got, want)
		}
	}
}
