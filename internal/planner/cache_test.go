package planner

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/query"
)

// TestShapeOf checks which filters share a plan cache shape: values do
// not count, types do, and an array's scalars count once per type, so an
// $in's length neither splits shapes nor grows the key.
func TestShapeOf(t *testing.T) {
	shape := func(filter bson.D) string {
		raw, _ := bson.Marshal(filter)
		f, err := query.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return shapeOf(&Query{Filter: f, RawFilter: bsoncore.Document(raw)})
	}
	in := func(vals ...any) bson.D {
		return bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A(vals)}}}}
	}
	many := make([]any, 10000)
	for i := range many {
		many[i] = i
	}
	or := func(branches ...bson.D) bson.D {
		a := bson.A{}
		for _, b := range branches {
			a = append(a, b)
		}
		return bson.D{{Key: "$or", Value: a}}
	}
	a1, b1 := bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "b", Value: 1}}
	for _, tc := range []struct {
		name string
		x, y bson.D
		same bool
	}{
		{"values", bson.D{{Key: "a", Value: 5}}, bson.D{{Key: "a", Value: 7}}, true},
		{"null", bson.D{{Key: "a", Value: 5}}, bson.D{{Key: "a", Value: nil}}, false},
		{"$in length", in(1, 2), in(many...), true},
		{"$in types", in(1, 2), in(1, "x"), false},
		{"$in null", in(1), in(1, nil), false},
		{"$or branches", or(a1, b1), or(a1), false},
		{"$or fields", or(a1, b1), or(a1, a1), false},
	} {
		if got := shape(tc.x) == shape(tc.y); got != tc.same {
			t.Errorf("%s: %q vs %q: same %v, want %v", tc.name, shape(tc.x), shape(tc.y), got, tc.same)
		}
	}
	if n := len(shape(in(many...))); n > 100 {
		t.Errorf("shape of a 10,000-value $in is %d bytes", n)
	}
}
