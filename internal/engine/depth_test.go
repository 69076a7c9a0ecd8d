package engine

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestInsertNestingDepth checks MongoDB's storage depth on insert: the
// document is level 1, a container may sit at level MaxStorageDepth but
// not below it (Overflow, 15), for documents and arrays alike.
func TestInsertNestingDepth(t *testing.T) {
	nest := func(n int, array bool) any {
		var v any = 1
		for range n {
			if array {
				v = bson.A{v}
			} else {
				v = bson.D{{"a", v}}
			}
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		value any
		code  mongoerr.Code
	}{
		{"documents to the limit", nest(MaxStorageDepth-1, false), 0},
		{"documents past the limit", nest(MaxStorageDepth, false), mongoerr.Overflow},
		{"arrays to the limit", nest(MaxStorageDepth-1, true), 0},
		{"arrays past the limit", nest(MaxStorageDepth, true), mongoerr.Overflow},
		{"far past the limit", nest(150, false), mongoerr.Overflow},
		{"empty containers at the limit", nest(MaxStorageDepth-2, false), 0},
		{"past the limit after a shallow document", bson.D{{"shallow", bson.D{{"b", 1}}}, {"deep", nest(MaxStorageDepth-1, false)}}, mongoerr.Overflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := doc(t, bson.D{{"_id", 1}, {"x", tc.value}})
			_, err := prepareInsert(bsoncore.Document(d), nil)
			if got := mongoerr.CodeOf(err); got != tc.code {
				t.Fatalf("prepareInsert: %v (code %d), want code %d", err, got, tc.code)
			}
		})
	}
}
