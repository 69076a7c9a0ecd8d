package engine

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestOpenDropsTempOutCollections: a $out interrupted by a crash leaves its
// temporary collection; reopening the engine drops it and nothing else,
// however its name resembles the prefix.
func TestOpenDropsTempOutCollections(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	kept := []Namespace{users, {"app", "tmp.agg_outx"}, {"app", "tmp.other"}}
	temp := []Namespace{{"app", TempOutPrefix + "0f3a"}, {"other", TempOutPrefix + "b71c"}}
	for _, ns := range append(append([]Namespace(nil), kept...), temp...) {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
			t.Fatalf("insert into %s: %v", ns, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	var names []string
	for _, c := range e.cat.Current().Collections("") {
		names = append(names, c.Namespace())
	}
	got := strings.Join(names, " ")
	if want := "app.tmp.agg_outx app.tmp.other app.users local.oplog.rs"; got != want {
		t.Fatalf("collections after reopen: %q, want %q", got, want)
	}
	if ids := scanIDs(t, e, users); len(ids) != 1 {
		t.Fatalf("users lost its document: %v", ids)
	}
}
