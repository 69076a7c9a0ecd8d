package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestPreparedSession checks invariant "Only commit or abort ends a
// prepared transaction", step by step: statements, a newer number, the
// lifetime limit, kills, a rebuild (a new primary) and commits without or
// with a commitTimestamp.
func TestPreparedSession(t *testing.T) {
	for _, end := range []string{"commit", "abort"} {
		t.Run(end, func(t *testing.T) {
			now := time.Unix(1000, 0)
			tbl, eng := openTable(t, func() time.Time { return now })
			id := ID{UUID: [16]byte{9}}
			ns := engine.Namespace{DB: "db", Coll: "c"}
			if err := eng.CreateCollection(ns, nil); err != nil {
				t.Fatal(err)
			}
			one := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
			var pts hlc.Timestamp
			for i, step := range []struct {
				op   string
				n    int64
				want mongoerr.Code
			}{
				{"prepare", 1, mongoerr.NoSuchTransaction},
				{"start", 2, 0},
				{"write", 2, 0},
				{"prepare", 2, 0},
				{"prepare", 2, 0}, // again: the same time
				{"stmt", 2, mongoerr.PreparedTransactionInProgress},
				{"start", 3, mongoerr.PreparedTransactionInProgress},
				{"retry", 3, mongoerr.PreparedTransactionInProgress},
				{"expire", 2, 0},
				{"kill", 2, 0},
				{"rebuild", 2, 0},
				{"stmt", 2, mongoerr.PreparedTransactionInProgress},
				{"commit", 2, mongoerr.InvalidOptions}, // a prepared commit needs its commitTimestamp
				{end, 2, 0},
				{end, 2, map[string]mongoerr.Code{"commit": 0, "abort": mongoerr.NoSuchTransaction}[end]}, // retried
				{"start", 3, 0},
				{"commitAt", 3, mongoerr.InvalidOptions}, // not prepared
			} {
				if step.op == "commit" && end == "commit" && step.want == 0 {
					step.op = "commitAt"
				}
				switch step.op {
				case "expire":
					now = now.Add(time.Hour)
					if n := tbl.AbortExpired(); n != 0 {
						t.Fatalf("step %d: AbortExpired aborted %d transactions", i, n)
					}
					tbl.Expire()
					continue
				case "kill":
					tbl.Kill(func(ID, string) bool { return true }, nil)
					tbl.End([]ID{id})
					continue
				case "rebuild":
					tbl.Forget()
					if err := tbl.RestoreError(); err != nil {
						t.Fatal(err)
					}
					continue
				}
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
						_, err = eng.InsertWith(ns, []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()}, engine.InsertOptions{Txn: tx})
					}
				case "prepare":
					var ts hlc.Timestamp
					ts, err = use.PrepareTransaction(step.n)
					if err == nil && pts != 0 && ts != pts {
						t.Fatalf("step %d: prepared again at %v, first at %v", i, ts, pts)
					}
					if err == nil {
						pts = ts
					}
				case "commit":
					_, err = use.CommitTransaction(step.n)
				case "commitAt":
					_, err = use.CommitPreparedTransaction(step.n, pts+1)
				case "abort":
					err = use.AbortTransaction(step.n)
				case "retry":
					_, err = use.BeginRetry(step.n)
				}
				use.Release()
				if got := mongoerr.CodeOf(err); got != step.want {
					t.Fatalf("step %d (%s %d): %v, want code %d", i, step.op, step.n, err, step.want)
				}
				if step.op == "prepare" && step.want == 0 {
					// the document is held: its reader waits (a prepare conflict)
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
					err := eng.WaitPreparedDoc(ctx, ns, one)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("step %d: a reader of the prepared document: %v, want it to wait", i, err)
					}
					if _, found, _ := eng.Get(nil, ns, one); found {
						t.Fatalf("step %d: a prepared insert is visible", i)
					}
				}
			}
			_, found, _ := eng.Get(nil, ns, one)
			if found != (end == "commit") {
				t.Fatalf("after the %s, _id 1 found = %v", end, found)
			}
		})
	}
}
