package commands

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// TestQueriesOnCompoundIDFieldUseTheirIndex covers issue 7: with an index
// on a field inside a subdocument _id, a query on that field alone is
// planned on the index and returns what a collection scan returns.
func TestQueriesOnCompoundIDFieldUseTheirIndex(t *testing.T) {
	env, exec := commandRunner(t, "t")
	run := func(cmd bson.D) bson.Raw { return bson.Raw(exec(cmd)) }
	run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_id.env", Value: 1}}}, {Key: "name", Value: "_id.env_1"}}}}})
	docs := bson.A{}
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: bson.D{{Key: "env", Value: []string{"prod", "dev", "test"}[i%3]}, {Key: "name", Value: fmt.Sprint(i)}}}})
	}
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	filter, _ := bson.Marshal(bson.D{{Key: "_id.env", Value: "prod"}})
	plan, err := plannedIndexes(env, engine.Namespace{DB: "t", Coll: "c"}, filter)
	if err != nil || plan != "_id.env_1" {
		t.Fatalf("plan for {_id.env: prod} = %q %v, want the _id.env_1 index", plan, err)
	}
	count := func(hint any) int32 {
		cmd := bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.Raw(filter)}}
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		return run(cmd).Lookup("n").Int32()
	}
	if planned, scanned := count(nil), count(bson.D{{Key: "$natural", Value: 1}}); planned != 17 || scanned != 17 {
		t.Fatalf("prod documents: planned %d, scanned %d, want 17", planned, scanned)
	}
}
