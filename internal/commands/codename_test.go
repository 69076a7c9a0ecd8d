package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestErrorRepliesCarryCodeName: every error reply carries a codeName,
// MongoDB's name for a named code and Location<code> for the rest — the
// codes below once went out without one.
func TestErrorRepliesCarryCodeName(t *testing.T) {
	_, exec := commandRunner(t, "t")
	agg := func(stage bson.D) bson.D {
		return bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{stage}}, {Key: "cursor", Value: bson.D{}}}
	}
	for _, tc := range []struct {
		name     string
		cmd      bson.D
		code     int32
		codeName string
	}{
		{"unknown stage", agg(bson.D{{Key: "$foo", Value: 1}}), 40324, "Location40324"},
		{"unknown expression operator", agg(bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$foo", Value: 1}}}}}}), 168, "InvalidPipelineOperator"},
		{"unknown $unwind option", agg(bson.D{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$a"}, {Key: "bad", Value: 1}}}}), 28811, "Location28811"},
		{"unknown accumulator", agg(bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$foo", Value: 1}}}}}}), 15952, "Location15952"},
		{"unknown command", bson.D{{Key: "noSuchCommand", Value: 1}}, 59, "CommandNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := bson.Raw(exec(tc.cmd))
			code, _ := reply.Lookup("code").Int32OK()
			name, ok := reply.Lookup("codeName").StringValueOK()
			if code != tc.code || !ok || name != tc.codeName {
				t.Fatalf("got code %d codeName %q (present %v), want %d %q; reply %s", code, name, ok, tc.code, tc.codeName, reply)
			}
		})
	}
}
