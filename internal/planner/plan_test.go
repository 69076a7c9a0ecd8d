package planner

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

func mustSpec(t *testing.T, d bson.D) *index.Spec {
	t.Helper()
	raw, _ := bson.Marshal(d)
	s, err := index.ParseSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestChoose(t *testing.T) {
	specs := []*index.Spec{
		mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}),
		mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "unique", Value: true}}),
		mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "c", Value: -1}}}, {Key: "name", Value: "c_-1"}}),
		mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}, {Key: "sparse", Value: true}}),
		mustSpec(t, bson.D{{Key: "key", Value: bson.D{{Key: "h", Value: "hashed"}}}, {Key: "name", Value: "h_hashed"}}),
	}
	names := []string{"a_1", "b_1", "c_-1", "s_1", "h_hashed"}
	enc := func(v any) []byte {
		t, d, _ := bson.MarshalValue(v)
		return keystring.Append(nil, bsoncore.Value{Type: bsoncore.Type(t), Data: d})
	}
	encDesc := func(v any) []byte {
		t, d, _ := bson.MarshalValue(v)
		return keystring.AppendDesc(nil, bsoncore.Value{Type: bsoncore.Type(t), Data: d})
	}
	cases := []struct {
		name   string
		filter bson.D
		want   Plan
	}{
		{"no usable field", bson.D{{Key: "z", Value: 1}}, Plan{}},
		{"equality", bson.D{{Key: "a", Value: 5}}, Plan{Index: "a_1", Lower: enc(5), Upper: enc(5)}},
		{"unique equality wins over equality", bson.D{{Key: "a", Value: 5}, {Key: "b", Value: 6}}, Plan{Index: "b_1", Lower: enc(6), Upper: enc(6)}},
		{"equality wins over range", bson.D{{Key: "b", Value: bson.D{{Key: "$gt", Value: 1}}}, {Key: "a", Value: 5}}, Plan{Index: "a_1", Lower: enc(5), Upper: enc(5)}},
		{"one side of a range only", bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}, {Key: "$lt", Value: 9}}}}, Plan{Index: "a_1", Lower: enc(1)}},
		{"descending index reverses bounds", bson.D{{Key: "c", Value: bson.D{{Key: "$gte", Value: 3}}}}, Plan{Index: "c_-1", Upper: encDesc(3)}},
		{"$in spans its values", bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{7, 2, 4}}}}}, Plan{Index: "a_1", Lower: enc(2), Upper: enc(7)}},
		{"null covers undefined", bson.D{{Key: "a", Value: nil}}, Plan{Index: "a_1", Lower: enc(bson.Undefined{}), Upper: enc(nil)}},
		{"arrays are not one key", bson.D{{Key: "a", Value: bson.A{1, 2}}}, Plan{}},
		{"regex is not a key", bson.D{{Key: "a", Value: bson.Regex{Pattern: "x"}}}, Plan{}},
		{"sparse indexes are not chosen", bson.D{{Key: "s", Value: 1}}, Plan{}},
		{"hashed indexes are not chosen", bson.D{{Key: "h", Value: 1}}, Plan{}},
		{"through $and", bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "a", Value: 3}}}}}, Plan{Index: "a_1", Lower: enc(3), Upper: enc(3)}},
		{"not through $or", bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 3}}}}}, Plan{}},
	}
	for _, c := range cases {
		raw, _ := bson.Marshal(c.filter)
		got := Choose(raw, names, specs)
		if got.Index != c.want.Index || string(got.Lower) != string(c.want.Lower) || string(got.Upper) != string(c.want.Upper) {
			t.Errorf("%s: Choose(%v) = %+v, want %+v", c.name, c.filter, got, c.want)
		}
	}
}
