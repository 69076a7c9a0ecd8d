package session

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// TestRetryHistoryMoves: a session's newest retryable write, read on one
// node and installed on another, makes a retry there find its statements
// done with their replies; a number older than the one the recipient has
// begun is not installed; a statement the recipient ran itself stays.
func TestRetryHistoryMoves(t *testing.T) {
	donor, donorEng := openTable(t, nil)
	recipient, recipientEng := openTable(t, nil)
	ctx := context.Background()
	reply := func(n int64) bsoncore.Document { return bsoncore.NewDocumentBuilder().AppendInt64("n", n).Build() }
	// begin checks session id out of tbl and begins its retryable
	// number txn; the caller releases it.
	begin := func(tbl *Table, id ID, txn int64) (*Retry, func()) {
		t.Helper()
		use, err := tbl.Checkout(ctx, id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := use.BeginRetry(txn)
		if err != nil {
			use.Release()
			t.Fatal(err)
		}
		return r, use.Release
	}
	// record runs statements stmts of number txn of session id on tbl.
	record := func(tbl *Table, eng interface {
		WriteRider(func(*storage.Txn) error) error
	}, id ID, txn int64, stmts ...Stmt) {
		t.Helper()
		r, release := begin(tbl, id, txn)
		defer release()
		if err := eng.WriteRider(func(tx *storage.Txn) error { return r.Record(tx, stmts...) }); err != nil {
			t.Fatal(err)
		}
	}
	// done reports which of stmts a retry of number txn finds done on
	// tbl, with the reply's n (-1: not done).
	done := func(tbl *Table, id ID, txn int64, stmts ...int32) []int64 {
		t.Helper()
		r, release := begin(tbl, id, txn)
		defer release()
		var out []int64
		for _, s := range stmts {
			res, ok := r.Done(s)
			n := int64(-1)
			if ok {
				n, _ = res.Lookup("n").AsInt64OK()
			}
			out = append(out, n)
		}
		return out
	}
	a, b, c := ID{UUID: [16]byte{1}}, ID{UUID: [16]byte{2}}, ID{UUID: [16]byte{3}}
	record(donor, donorEng, a, 4, Stmt{ID: 0, Result: reply(1)}, Stmt{ID: 1, Result: reply(0)})
	record(donor, donorEng, b, 2, Stmt{ID: 0, Result: reply(1)})
	record(recipient, recipientEng, b, 5, Stmt{ID: 0, Result: reply(7)}) // newer here
	record(donor, donorEng, c, 3, Stmt{ID: 0, Result: reply(1)})
	record(recipient, recipientEng, c, 3, Stmt{ID: 1, Result: reply(9)}) // the same number, another statement

	hs, err := donor.RetryHistories([]bsoncore.Document{a.Doc(), b.Doc(), c.Doc(), ID{UUID: [16]byte{4}}.Doc()})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 3 {
		t.Fatalf("histories of 3 sessions with records and one without: %d", len(hs))
	}
	if err := recipient.InstallRetryHistories(ctx, hs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		id    ID
		txn   int64
		stmts []int32
		want  []int64
	}{
		{"moved", a, 4, []int32{0, 1, 2}, []int64{1, 0, -1}},
		{"the recipient's newer number stays", b, 5, []int32{0}, []int64{7}},
		{"the same number merges", c, 3, []int32{0, 1}, []int64{1, 9}},
	} {
		if got := done(recipient, tc.id, tc.txn, tc.stmts...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: done %v, want %v", tc.name, got, tc.want)
		}
	}
	// b's older number is too old on the recipient, as it was before.
	use, err := recipient.Checkout(ctx, b, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = use.BeginRetry(2)
	use.Release()
	if mongoerr.CodeOf(err) != mongoerr.TransactionTooOld {
		t.Errorf("b's number 2 on the recipient: %v, want TransactionTooOld", err)
	}
}
