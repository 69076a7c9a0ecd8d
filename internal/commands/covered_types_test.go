package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCoveredKeepsTypes checks that a covered plan returns each field as
// stored: index keys keep a number's value but not its type (5.0 and
// NumberLong(6) decode as int32), so such a key must not stand for the
// document.
func TestCoveredKeepsTypes(t *testing.T) {
	_, exec := commandRunner(t, "ct")
	run := func(cmd bson.D) bson.Raw { return bson.Raw(exec(cmd)) }
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 5.0}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: int64(6)}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.D{{Key: "x", Value: 7.0}}}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: "s"}},
	}}})
	run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	find := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}}, {Key: "projection", Value: bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: 0}}}, {Key: "hint", Value: "a_1"}}
	r := run(find)
	batch, err := r.LookupErr("cursor", "firstBatch")
	if err != nil {
		t.Fatalf("find: %s", r)
	}
	want := map[string]bool{"double": true, "64-bit integer": true, "embedded document": true, "string": true}
	vals, _ := batch.Array().Values()
	for _, v := range vals {
		typ := v.Document().Lookup("a").Type.String()
		if !want[typ] {
			t.Errorf("covered find returned a as %s: %s", typ, v)
		}
		delete(want, typ)
	}
	if len(want) != 0 {
		t.Errorf("types not returned: %v (batch %s)", want, batch)
	}
	ex := run(bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "queryPlanner"}})
	if st, _ := ex.LookupErr("queryPlanner", "winningPlan", "stage"); st.StringValue() != "PROJECTION_COVERED" {
		t.Fatalf("plan is not covered, the test tests nothing: %s", ex.Lookup("queryPlanner", "winningPlan"))
	}
}
