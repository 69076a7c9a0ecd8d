package engine

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
)

// TestMultikeyPathsRecorded checks that writes and builds record which
// paths of an index held arrays, merged across documents, and that the
// record survives a reopen.
func TestMultikeyPathsRecorded(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	ns := Namespace{"mk", "c"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"x", bson.D{{"y", bson.A{1, 2}}, {"z", 1}}}})}, true); err != nil {
		t.Fatal(err)
	}
	// The build sees x.y's array; a later write adds x as an array.
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{
		spec(t, bson.D{{"key", bson.D{{"x.y", 1}, {"x.z", 1}}}, {"name", "xy_xz"}}),
		spec(t, bson.D{{"key", bson.D{{"x.z", 1}}}, {"name", "xz"}}),
		spec(t, bson.D{{"key", bson.D{{"$**", 1}}}, {"name", "all"}}),
	}); err != nil {
		t.Fatal(err)
	}
	check := func(e *Engine, name string, comps [][]int, paths []string) {
		t.Helper()
		ix := e.Catalog().Collection("mk", "c").Index(name)
		got := catalog.Index{Multikey: len(comps)+len(paths) > 0}
		if ix == nil || ix.Multikey != got.Multikey || !ix.MultikeyPathsKnown() {
			t.Fatalf("%s: %+v", name, ix)
		}
		for i, c := range comps {
			if i >= len(ix.MultikeyComponents) && len(c) > 0 || i < len(ix.MultikeyComponents) && !slices.Equal(ix.MultikeyComponents[i], c) {
				t.Errorf("%s: components %v, want %v", name, ix.MultikeyComponents, comps)
			}
		}
		if !slices.Equal(ix.MultikeyPaths, paths) {
			t.Errorf("%s: paths %v, want %v", name, ix.MultikeyPaths, paths)
		}
	}
	check(e, "xy_xz", [][]int{{1}, nil}, nil)
	check(e, "xz", nil, nil)
	check(e, "all", nil, []string{"x.y"})
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 2}, {"x", bson.A{bson.D{{"y", 1}, {"z", 2}}}}})}, true); err != nil {
		t.Fatal(err)
	}
	check(e, "xy_xz", [][]int{{0, 1}, {0}}, nil)
	check(e, "xz", [][]int{{0}}, nil)
	check(e, "all", nil, []string{"x", "x.y"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	check(e, "xy_xz", [][]int{{0, 1}, {0}}, nil)
	check(e, "all", nil, []string{"x", "x.y"})
}

// TestMultikeyPathsUnknown checks that an index record from before
// multikey paths were kept (multikey, no paths) reads as unknown, and
// that later writes do not make it look known.
func TestMultikeyPathsUnknown(t *testing.T) {
	key := doc(t, bson.D{{"a", 1}})
	old := catalog.Index{Name: "a_1", Key: bson.Raw(key), Spec: bson.Raw(key), Multikey: true}
	raw, err := bson.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var back catalog.Index
	if err := bson.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.MultikeyPathsKnown() {
		t.Fatal("an old multikey record claims to know its paths")
	}
	if !(&catalog.Index{}).MultikeyPathsKnown() {
		t.Fatal("a non-multikey index does not know it has no multikey paths")
	}
	if growsMultikey(&back, multikeyOf(&catalog.Index{MultikeyComponents: [][]int{{0}}})) {
		t.Fatal("a write would record partial paths on an index whose paths are unknown")
	}
}
