//go:build invariants

package update

import (
	"errors"
	"testing"

	"github.com/cairndb/cairn/internal/invariants"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestFlatSetInvariantCheck: in an invariants build, a flat path that
// disagrees with the tree (here its value made to differ from the tree's
// leaf) fails invariant "Flat sets splice".
func TestFlatSetInvariantCheck(t *testing.T) {
	u, err := ParseDocument(flatDoc(t, `{"$set": {"a": 1}}`), Options{})
	if err != nil || u.flat == nil {
		t.Fatalf("%v, flat %v", err, u.flat)
	}
	u.tree() // the tree as parsed, before the flat list is made to differ
	u.flat[0].val = bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}
	defer func() {
		var v *invariants.Violation
		if e, ok := recover().(error); !ok || !errors.As(e, &v) || v.Invariant != "Flat sets splice" {
			t.Fatalf("recovered %v, want a violation of \"Flat sets splice\"", e)
		}
	}()
	_, _, _ = u.Apply(flatDoc(t, `{"_id": 1, "a": 0}`), ApplyContext{ArrayPos: -1})
}
