package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestTxnCreateCollection checks "Creation commits with the transaction":
// a collection created in a transaction (explicitly, by an insert, by
// createIndexes), its indexes and documents are seen by the transaction
// only, become visible together at commit (one applyOps entry holding the
// create, the createIndexes and the insert), and leave nothing on abort;
// a concurrent creation of the same name fails the transaction with
// WriteConflict.
func TestTxnCreateCollection(t *testing.T) {
	spec := func(field string) bsoncore.Document {
		return doc(t, bson.D{{Key: "key", Value: bson.D{{Key: field, Value: 1}}}, {Key: "name", Value: field + "_1"}})
	}
	insert := func(e *Engine, tx *Txn, ns Namespace, id int, a any) error {
		res, err := e.InsertWith(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: id}, {Key: "a", Value: a}})}, InsertOptions{Ordered: true, Txn: tx})
		if err == nil && len(res.WriteErrors) > 0 {
			err = res.WriteErrors[0].Err
		}
		return err
	}
	for _, how := range []string{"create", "createIndexes", "insert"} {
		t.Run(how, func(t *testing.T) {
			e := openEngine(t, "")
			ns := Namespace{"db", "new"}
			before := len(oplogEntries(t, e))
			tx := e.Begin()
			switch how {
			case "create":
				if err := e.CreateCollectionIn(tx, ns, nil); err != nil {
					t.Fatal(err)
				}
			case "createIndexes":
				res, err := e.CreateIndexesIn(tx, ns, []bsoncore.Document{spec("a")})
				if err != nil || !res.CreatedCollection || res.Before != 1 || res.After != 2 {
					t.Fatalf("createIndexes on a missing collection: %+v, %v", res, err)
				}
			}
			if how == "create" {
				if _, err := e.CreateIndexesIn(tx, ns, []bsoncore.Document{spec("a")}); how == "create" && err != nil {
					t.Fatal(err)
				}
			}
			if e.Catalog().Collection(ns.DB, ns.Coll) != nil {
				t.Fatalf("%s: the collection is visible outside the transaction before its commit", how)
			}
			if err := insert(e, tx, ns, 1, bson.A{1, 2}); err != nil {
				t.Fatal(err)
			}
			if how == "insert" {
				// On the transaction's non-empty new collection: refused.
				if _, err := e.CreateIndexesIn(tx, ns, []bsoncore.Document{spec("a")}); mongoerr.CodeOf(err) != mongoerr.OperationNotSupportedInTransaction {
					t.Fatalf("createIndexes on a non-empty new collection: %v, want OperationNotSupportedInTransaction", err)
				}
				tx.Abort()
				tx = e.Begin()
				if err := insert(e, tx, ns, 1, bson.A{1, 2}); err != nil {
					t.Fatal(err)
				}
			}
			if got := getA2(t, e, tx, ns, 1); got != 1 {
				t.Fatalf("the transaction reads its new collection's document: a[0]=%d", got)
			}
			if _, found, _ := e.Get(nil, ns, val(t, 1)); found {
				t.Fatal("the document is visible outside before the commit")
			}
			if _, err := tx.Commit(nil); err != nil {
				t.Fatal(err)
			}
			coll := e.Catalog().Collection(ns.DB, ns.Coll)
			if coll == nil {
				t.Fatal("the commit did not create the collection")
			}
			wantIdx := 1
			if how == "insert" {
				wantIdx = 0
			}
			if len(coll.Indexes) != wantIdx || wantIdx == 1 && !coll.Indexes[0].Multikey {
				t.Fatalf("committed indexes %+v, want %d (multikey)", coll.Indexes, wantIdx)
			}
			if _, found, _ := e.Get(nil, ns, val(t, 1)); !found {
				t.Fatal("the committed document is missing")
			}
			if err := e.CheckIndexes(ns); err != nil {
				t.Error(err)
			}
			ents := oplogEntries(t, e)
			if len(ents) != before+1 {
				t.Fatalf("%d oplog entries, want the transaction's one", len(ents)-before)
			}
			ops, _ := ents[len(ents)-1].Lookup("o", "applyOps").Array().Values()
			var kinds []string
			for _, op := range ops {
				d := op.Document()
				kind := d.Lookup("op").StringValue()
				if kind == "c" {
					el, _ := d.Lookup("o").Document().IndexErr(0)
					kind = el.Key()
				}
				kinds = append(kinds, kind)
			}
			want := map[string]string{"create": "[create createIndexes i]", "createIndexes": "[create createIndexes i]", "insert": "[create i]"}[how]
			if got := bsonString(kinds); got != want {
				t.Errorf("applyOps %s, want %s", got, want)
			}
		})
	}

	t.Run("abort", func(t *testing.T) {
		e := openEngine(t, "")
		ns := Namespace{"db", "gone"}
		tx := e.Begin()
		if err := insert(e, tx, ns, 1, 1); err != nil {
			t.Fatal(err)
		}
		tx.Abort()
		if e.Catalog().Collection(ns.DB, ns.Coll) != nil || len(e.Catalog().Collections(ns.DB)) != 0 {
			t.Fatalf("an aborted transaction's collection stayed: %v", e.Catalog().Collections(ns.DB))
		}
	})

	t.Run("existing", func(t *testing.T) {
		e := openEngine(t, "")
		ns := Namespace{"db", "old"}
		if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec("a")}); err != nil {
			t.Fatal(err)
		}
		tx := e.Begin()
		defer tx.Abort()
		if res, err := e.CreateIndexesIn(tx, ns, []bsoncore.Document{spec("a")}); err != nil || !res.AllExisted {
			t.Errorf("an existing index in a transaction: %+v, %v, want all indexes already exist", res, err)
		}
		if _, err := e.CreateIndexesIn(tx, ns, []bsoncore.Document{spec("b")}); mongoerr.CodeOf(err) != mongoerr.OperationNotSupportedInTransaction {
			t.Errorf("a new index on an existing (empty) collection: %v, want OperationNotSupportedInTransaction", err)
		}
		if err := e.CreateCollectionIn(tx, Namespace{"db", "system.js"}, nil); mongoerr.CodeOf(err) == 0 {
			t.Error("create of a system collection in a transaction succeeded")
		}
		capped, _ := bson.Marshal(bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 4096}})
		if err := e.CreateCollectionIn(tx, Namespace{"db", "capped"}, capped); mongoerr.CodeOf(err) != mongoerr.OperationNotSupportedInTransaction {
			t.Errorf("a capped create in a transaction: %v, want OperationNotSupportedInTransaction", err)
		}
	})

	for _, when := range []string{"statement", "commit"} {
		t.Run("concurrent create before the "+when, func(t *testing.T) {
			e := openEngine(t, "")
			ns := Namespace{"db", "race"}
			tx := e.Begin()
			if err := e.CreateCollectionIn(tx, ns, nil); err != nil {
				t.Fatal(err)
			}
			if err := e.CreateCollection(ns, nil); err != nil {
				t.Fatalf("the create outside goes first: %v", err)
			}
			var err error
			if when == "statement" {
				err = insert(e, tx, ns, 1, 1)
				tx.Abort()
			} else {
				_, err = tx.Commit(nil)
			}
			if mongoerr.CodeOf(err) != mongoerr.WriteConflict {
				t.Fatalf("the transaction after a concurrent create: %v, want WriteConflict", err)
			}
			if _, found, _ := e.Get(nil, ns, val(t, 1)); found {
				t.Fatal("the failed transaction's document is visible")
			}
		})
	}
}

// getA2 is the first element of the array a of ns's document id, as tx
// reads it through an index-less scan.
func getA2(t *testing.T, e *Engine, tx *Txn, ns Namespace, id int) int {
	t.Helper()
	d, found, err := e.GetIn(tx, nil, ns, val(t, id))
	if err != nil || !found {
		t.Fatalf("GetIn %v: found %v, %v", id, found, err)
	}
	return int(bsoncore.Document(d).Lookup("a", "0").AsInt64())
}

func bsonString(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
