package commands

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// TestAdviseReadsRecordedShapes: without the profiler, the server's own
// sampled record of query shapes (QueryShapes) lets advise name the index
// a scanning query needs; the record stays bounded.
func TestAdviseReadsRecordedShapes(t *testing.T) {
	s := testSession(t, engine.Options{})
	ctx := context.Background()
	docs := bson.A{}
	for i := range 200 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 50}, {Key: "b", Value: i}})
	}
	run := func(cmd bson.D) {
		t.Helper()
		if r := Run(ctx, s, testRequest(t, "shapes", cmd), nil); r.Lookup("ok").Double() != 1 {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	for range 4 * shapeSampleEvery {
		run(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 7}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: 1}}}})
	}
	r := Run(ctx, s, testRequest(t, "shapes", bson.D{{Key: "advise", Value: "c"}}), nil)
	if from := r.Lookup("collections", "0", "queryShapesFrom").StringValue(); from != "server" {
		t.Fatalf("shapes from %q, want the server's record: %s", from, r)
	}
	found := false
	fs, _ := r.Lookup("collections", "0", "findings").Array().Values()
	for _, f := range fs {
		d := f.Document()
		if d.Lookup("kind").StringValue() == "unindexedQuery" && d.Lookup("evidence", "index").StringValue() == `{"a": 1, "b": 1}` {
			found = true
		}
	}
	if !found {
		t.Fatalf("no unindexedQuery finding naming {a: 1, b: 1}: %s", r)
	}
	// Bounded: more distinct shapes than the cap keep the cap.
	q := newQueryShapes()
	st := &opStats{reads: true, docsExamined: 10, nreturned: 1}
	for i := range maxShapes + 50 {
		body, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "f" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)), Value: 1}}}})
		q.record("db.c", body, st)
	}
	if n := len(q.shapes); n != maxShapes {
		t.Fatalf("%d shapes kept, want the cap %d", n, maxShapes)
	}
}
