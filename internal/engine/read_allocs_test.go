package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/invariants"
)

// TestGetHitAllocatesNothing: a point read that hits the document cache,
// into a buffer with room, allocates nothing — its key, built on Get's
// stack, stays there (keystring.AppendScalar, storage's GetDocument) — for
// the _id types YCSB and drivers use. 1 before session 19 (the key's
// buffer moved to the heap); a document _id, whose key is built on the
// heap, is read all the same.
func TestGetHitAllocatesNothing(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "hits"}
	ids := []any{int32(7), int64(1 << 40), "user6284781860667377211", bson.ObjectID{1, 2, 3}, 2.5, bson.D{{"a", 1}}}
	for _, id := range ids {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", id}, {"v", "x"}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	dst := make([]byte, 0, 256)
	for _, raw := range ids {
		id := val(t, raw)
		get := func() {
			got, found, err := e.Get(dst[:0], ns, id)
			if err != nil || !found || bsoncore.Document(got).Lookup("v").StringValue() != "x" {
				t.Fatalf("Get(%v): %v, %v, %v", raw, bsoncore.Document(got), found, err)
			}
		}
		get() // a miss, which installs the document
		n := testing.AllocsPerRun(200, get)
		switch {
		case raceEnabled || invariants.Enabled:
			t.Logf("Get(%v): allocations not compared in this build: %.1f", raw, n)
		case id.Type == bsoncore.TypeEmbeddedDocument:
			t.Logf("Get(%v): %.1f allocations (its key on the heap)", raw, n)
		case n != 0:
			t.Errorf("Get(%v) of a cached document allocates %.1f times, want 0", raw, n)
		}
	}
}
