package commands

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// BenchmarkFindPlans measures the command layer's cost of finds by plan
// shape, in process (no socket): an _id lookup, an indexed range of 10
// documents, an equality two indexes serve (a cached plan), and a sort by
// _id with a limit (YCSB-E's scan).
func BenchmarkFindPlans(b *testing.B) {
	sess := testSession(b, engine.Options{})
	request := func(cmd bson.D) *Request { return testRequest(b, "b", cmd) }
	docs := bson.A{}
	for i := range 10000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}, {Key: "name", Value: "user"}})
	}
	Run(context.Background(), sess, request(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil)
	Run(context.Background(), sess, request(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "name", Value: 1}}}, {Key: "name", Value: "name_1"}},
	}}}), nil)
	for _, bc := range []struct {
		name string
		cmd  bson.D
	}{
		{"by_id", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 42}}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}}},
		{"range10", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 500}, {Key: "$lt", Value: 510}}}}}, {Key: "singleBatch", Value: true}}},
		// Two indexes apply: the plan comes from the plan cache.
		{"cached_of_two", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 42}, {Key: "name", Value: "user"}}}, {Key: "singleBatch", Value: true}}},
		// A collection scan that matches nothing: the per-document cost of
		// a plan's work, context check included.
		{"scan_10000", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "name", Value: "nobody"}}}, {Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}}, {Key: "singleBatch", Value: true}}},
		{"id_scan_sorted", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 5000}}}}}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 10}, {Key: "singleBatch", Value: true}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body, _ := bson.Marshal(append(bc.cmd, bson.E{Key: "$db", Value: "b"}))
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				req, err := NewRequest(body, "", nil)
				if err != nil {
					b.Fatal(err)
				}
				dst = Run(context.Background(), sess, req, dst[:0])
			}
		})
	}
}
