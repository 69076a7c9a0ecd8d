package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExplainParsesAsCommand checks that a command and its explain read
// their options through the same parser: an option the command refuses is
// refused by its explain too, and the reverse.
func TestExplainParsesAsCommand(t *testing.T) {
	_, exec := commandRunner(t, "ep")
	run := func(cmd bson.D) (code int32) {
		r := bson.Raw(exec(cmd))
		if ok, _ := r.Lookup("ok").AsFloat64OK(); ok == 1 {
			return 0
		}
		c, _ := r.Lookup("code").AsInt64OK()
		return int32(c)
	}
	explain := func(cmd bson.D) int32 {
		return run(bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "executionStats"}})
	}
	if c := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}}}}); c != 0 {
		t.Fatalf("insert: code %d", c)
	}
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"findAndModify hint to no index", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}, {Key: "hint", Value: "nope"}}, 2},
		{"findAndModify unsupported locale", bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "remove", Value: true}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "xx"}}}}, 2},
		{"count negative skip", bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: -1}}, 2},
		{"count", bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: 1}}, 0},
	} {
		if c := explain(tc.cmd); c != tc.code {
			t.Errorf("explain %s: code %d, want %d", tc.name, c, tc.code)
		}
		if c := run(tc.cmd); c != tc.code {
			t.Errorf("%s: code %d, want %d", tc.name, c, tc.code)
		}
	}
}
