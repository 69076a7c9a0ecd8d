package engine

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestConvertToUnique walks MongoDB 7.0's conversion of an index to
// unique: prepareUnique refuses new duplicates (within one batch too) while
// the old ones stay; unique: true lists the documents that share a key,
// grouped by key, then, once they are resolved, rewrites the entries in the
// unique layout so that the index checks out ("Indexes follow documents").
func TestConvertToUnique(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"cu", "c"}
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})}); err != nil {
		t.Fatal(err)
	}
	var docs []bsoncore.Document
	for i, a := range []any{1, 1, int64(2), 2.0, 2, 3} {
		docs = append(docs, doc(t, bson.D{{"_id", i + 1}, {"a", a}}))
	}
	if _, err := e.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	on := true
	if _, err := e.ModifyIndex(ns, IndexChange{Name: "a_1", Unique: &on}); code(err) != mongoerr.InvalidOptions {
		t.Fatalf("unique without prepareUnique: %v, want InvalidOptions", err)
	}
	res, err := e.ModifyIndex(ns, IndexChange{Name: "a_1", PrepareUnique: &on})
	if err != nil || res.NewPrepareUnique == nil || !*res.NewPrepareUnique {
		t.Fatalf("prepareUnique: %+v, %v", res, err)
	}
	// A new duplicate is refused, of an old key or within the batch.
	ins, err := e.Insert(ns, []bsoncore.Document{
		doc(t, bson.D{{"_id", 7}, {"a", 3}}),
		doc(t, bson.D{{"_id", 8}, {"a", 9}}),
		doc(t, bson.D{{"_id", 9}, {"a", 9}}),
	}, false)
	if err != nil || ins.Inserted != 1 || len(ins.WriteErrors) != 2 {
		t.Fatalf("inserts under prepareUnique: %+v, %v; want 1 inserted, 2 duplicate keys", ins, err)
	}
	_, err = e.ModifyIndex(ns, IndexChange{Name: "a_1", Unique: &on})
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.CannotConvertIndexToUnique {
		t.Fatalf("conversion with duplicates: %v, want CannotConvertIndexToUnique", err)
	}
	got := bson.Raw(me.Extra[0].Value.(bson.RawArray)).String()
	want := `{"0": {"ids": [{"$numberInt":"1"},{"$numberInt":"2"}]},"1": {"ids": [{"$numberInt":"3"},{"$numberInt":"4"},{"$numberInt":"5"}]}}`
	if me.Extra[0].Name != "violations" || got != want {
		t.Fatalf("violations %s = %s, want %s", me.Extra[0].Name, got, want)
	}
	for _, id := range []int{2, 4, 5} {
		if _, err := e.Delete(ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(id))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ModifyIndex(ns, IndexChange{Name: "a_1", Unique: &on, DryRun: true}); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if _, spec, _ := e.Indexes(ns); spec[0].Unique {
		t.Fatal("a dry run converted the index")
	}
	res, err = e.ModifyIndex(ns, IndexChange{Name: "a_1", Unique: &on})
	if err != nil || res.NewUnique == nil {
		t.Fatalf("conversion: %+v, %v", res, err)
	}
	if _, spec, _ := e.Indexes(ns); !spec[0].Unique || spec[0].PrepareUnique {
		t.Fatalf("after conversion: unique %v, prepareUnique %v", spec[0].Unique, spec[0].PrepareUnique)
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Fatal(err)
	}
	ins, err = e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 10}, {"a", 1}})}, true)
	if err != nil || len(ins.WriteErrors) != 1 {
		t.Fatalf("insert of a duplicate into the unique index: %+v, %v", ins, err)
	}
}

func code(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}
