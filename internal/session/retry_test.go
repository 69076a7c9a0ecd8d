package session

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
