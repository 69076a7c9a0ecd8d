package catalog

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

func pipeline(t *testing.T, stages ...bson.D) bson.Raw {
	t.Helper()
	arr := bsoncore.NewArrayBuilder()
	for _, st := range stages {
		b, err := bson.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		arr.AppendDocument(b)
	}
	return bson.Raw(arr.Build())
}

// TestViewLifecycle creates, modifies and drops views, checks that views and
// collections share one namespace ("Views and collections share one
// namespace") and that definitions survive a reopen.
func TestViewLifecycle(t *testing.T) {
	dir := t.TempDir()
	db, cat := openCatalog(t, dir)
	match := pipeline(t, bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}})
	write := func(fn func(tx *storage.Txn) error) error { return db.Write(fn) }
	if err := write(func(tx *storage.Txn) error {
		if _, err := cat.CreateCollection(tx, "db", "c", nil); err != nil {
			return err
		}
		return cat.CreateView(tx, View{ID: "db.v", ViewOn: "c", Pipeline: match})
	}); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"view over collection": write(func(tx *storage.Txn) error { return cat.CreateView(tx, View{ID: "db.c", ViewOn: "x", Pipeline: match}) }),
		"collection over view": write(func(tx *storage.Txn) error { _, err := cat.CreateCollection(tx, "db", "v", nil); return err }),
		"view over view":       write(func(tx *storage.Txn) error { return cat.CreateView(tx, View{ID: "db.v", ViewOn: "x", Pipeline: match}) }),
	} {
		if mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
			t.Errorf("%s: got %v, want NamespaceExists", name, err)
		}
	}
	if err := write(func(tx *storage.Txn) error {
		return cat.CreateView(tx, View{ID: "db.w", ViewOn: "v", Pipeline: pipeline(t)})
	}); err != nil {
		t.Fatal(err)
	}
	coll, stages, _, isView := cat.Current().Resolve("db", "w")
	if !isView || coll != "c" || len(stages) != 1 {
		t.Fatalf("Resolve(w) = %s, %d stages, view %v; want c, 1 stage (v's $match)", coll, len(stages), isView)
	}
	if dbs := cat.Current().Databases(); len(dbs) != 1 || dbs[0] != "db" {
		t.Errorf("Databases() = %v", dbs)
	}
	_ = db.Close()

	db, cat = openCatalog(t, dir)
	defer db.Close()
	if v := cat.Current().View("db", "v"); v == nil || v.ViewOn != "c" || string(v.Pipeline) != string(match) {
		t.Fatalf("view v after reopen: %+v", v)
	}
	if err := db.Write(func(tx *storage.Txn) error {
		if !cat.DropView(tx, "db", "v") {
			t.Error("DropView(v) found no view")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if cat.Current().View("db", "v") != nil || len(cat.Current().Views("db")) != 1 {
		t.Errorf("after drop: views %v", cat.Current().Views("db"))
	}
}

// TestCheckViews covers the view graph's rules: no cycle, through viewOn or
// any stage that reads a namespace, and no chain deeper than MaxViewDepth.
func TestCheckViews(t *testing.T) {
	st := &State{byNS: map[nsKey]*Collection{}}
	add := func(name, on string, stages ...bson.D) error {
		v := &View{ID: "db." + name, ViewOn: on, Pipeline: pipeline(t, stages...)}
		if err := st.CheckViews(v); err != nil {
			return err
		}
		st.setView("db", name, v)
		return nil
	}
	lookup := func(from string) bson.D {
		return bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: from}, {Key: "as", Value: "x"}}}}
	}
	if err := add("a", "a"); mongoerr.CodeOf(err) != mongoerr.GraphContainsCycle {
		t.Errorf("a on a: %v", err)
	}
	if err := add("a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := add("b", "c", lookup("a")); mongoerr.CodeOf(err) != mongoerr.GraphContainsCycle {
		t.Errorf("b reading a through $lookup: %v", err)
	}
	facet := bson.D{{Key: "$facet", Value: bson.D{{Key: "f", Value: bson.A{bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "a"}}}}}}}}}
	if err := add("b", "c", facet); mongoerr.CodeOf(err) != mongoerr.GraphContainsCycle {
		t.Errorf("b reading a through $facet's $unionWith: %v", err)
	}
	st = &State{byNS: map[nsKey]*Collection{}}
	for i := 1; i <= MaxViewDepth; i++ {
		if err := add(name(i), name(i+1), lookup(name(i+1))); err != nil {
			t.Fatalf("v%d: %v", i, err)
		}
	}
	if err := add(name(0), name(1)); mongoerr.CodeOf(err) != mongoerr.ViewDepthLimitExceeded {
		t.Errorf("a chain of %d views: %v", MaxViewDepth+1, err)
	}
	if err := add("mid", name(10)); err != nil {
		t.Errorf("a view in the middle: %v", err)
	}
}

func name(i int) string { return "v" + string(rune('a'+i)) }
