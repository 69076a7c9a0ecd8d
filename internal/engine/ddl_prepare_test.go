package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// TestDDLAwaitsPrepared checks AwaitPrepared for each DDL operation of a
// collection a prepared transaction wrote: it waits while the transaction
// is prepared, ends with MaxTimeMSExpired at the operation's maxTimeMS and
// with LockTimeout at preparedDDLWait without one, and applies once the
// transaction ends.
func TestDDLAwaitsPrepared(t *testing.T) {
	ns := Namespace{"db", "c"}
	cases := []struct {
		name  string
		nss   []Namespace
		ddl   func(e *Engine) error
		after func(e *Engine) bool // the DDL's effect is there
	}{
		{"drop", []Namespace{ns}, func(e *Engine) error {
			_, err := e.DropCollection(ns)
			return err
		}, func(e *Engine) bool { return e.Catalog().Collection(ns.DB, ns.Coll) == nil }},
		{"dropIndexes", []Namespace{ns}, func(e *Engine) error {
			_, err := e.DropIndexes(ns, []string{"a_1"})
			return err
		}, func(e *Engine) bool {
			c := e.Catalog().Collection(ns.DB, ns.Coll)
			return c != nil && len(c.Indexes) == 0
		}},
		{"collMod", []Namespace{ns}, func(e *Engine) error {
			set, _ := bsoncore.NewDocumentBuilder().AppendString("validationLevel", "off").Build().Elements()
			_, err := e.CollMod(ns, set, nil)
			return err
		}, func(e *Engine) bool {
			c := e.Catalog().Collection(ns.DB, ns.Coll)
			if c == nil {
				return false
			}
			lvl, _ := bson.Raw(c.Options).Lookup("validationLevel").StringValueOK()
			return lvl == "off"
		}},
		{"renameCollection", []Namespace{ns, {"db", "d"}}, func(e *Engine) error {
			return e.RenameCollection(ns, Namespace{"db", "d"}, false)
		}, func(e *Engine) bool {
			return e.Catalog().Collection("db", "c") == nil && e.Catalog().Collection("db", "d") != nil
		}},
		{"dropDatabase", []Namespace{{DB: "db"}}, func(e *Engine) error {
			_, err := e.DropDatabase("db")
			return err
		}, func(e *Engine) bool { return e.Catalog().Collection(ns.DB, ns.Coll) == nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, "")
			if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
				t.Fatal(err)
			}
			if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{mustRaw(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})}); err != nil {
				t.Fatal(err)
			}
			tx := e.Begin()
			tx.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 1}
			if err := txnSet(t, e, tx, ns, 1, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Prepare(nil); err != nil {
				t.Fatal(err)
			}
			run := func(ctx context.Context) error {
				return e.AwaitPrepared(ctx, tc.nss, func() error { return tc.ddl(e) })
			}
			ctx, cancel := opctx.WithMaxTime(context.Background(), 30*time.Millisecond)
			err := run(ctx)
			cancel()
			if mongoerr.CodeOf(err) != mongoerr.MaxTimeMSExpired {
				t.Fatalf("with maxTimeMS: %v, want MaxTimeMSExpired", err)
			}
			old := preparedDDLWait
			preparedDDLWait = 30 * time.Millisecond
			err = run(context.Background())
			preparedDDLWait = old
			if mongoerr.CodeOf(err) != mongoerr.LockTimeout {
				t.Fatalf("without maxTimeMS: %v, want LockTimeout", err)
			}
			if tc.after(e) {
				t.Fatal("the DDL applied while the transaction was prepared")
			}
			done := make(chan error, 1)
			go func() { done <- run(context.Background()) }()
			select {
			case err := <-done:
				t.Fatalf("the DDL did not wait for the prepared transaction: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			if err := tx.AbortPrepared(nil); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the DDL after the abort: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the DDL still waits after the abort")
			}
			if !tc.after(e) {
				t.Fatal("the DDL's effect is missing after it returned")
			}
		})
	}
}
