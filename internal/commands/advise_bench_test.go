package commands

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

var adviseBenchDocs = flag.Int("advisebench.docs", 100000, "BenchmarkAdvise's collection size (issue 26 asks for 1,000,000)")

// BenchmarkAdvise: one advise of a collection of advisebench.docs
// documents (a map keyed by ids in each, so findings are produced) with the
// default sample of 1,000: its cost is the sample's, not the collection's
// (random seeks), which issue 26 asks to stay within seconds at 1 M.
func BenchmarkAdvise(b *testing.B) {
	sess := testSession(b, engine.Options{})
	ctx := context.Background()
	start := time.Now()
	const batch = 1000
	for lo := 0; lo < *adviseBenchDocs; lo += batch {
		docs := bson.A{}
		for i := lo; i < min(lo+batch, *adviseBenchDocs); i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%20)},
				{Key: "nodes", Value: bson.D{{Key: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Value: bson.D{{Key: "up", Value: true}}}}}})
		}
		if r := Run(ctx, sess, testRequest(b, "b", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil); r.Lookup("ok").Double() != 1 {
			b.Fatalf("insert: %s", r)
		}
	}
	b.Logf("loaded %d documents in %v", *adviseBenchDocs, time.Since(start).Round(time.Millisecond))
	cmd := bson.D{{Key: "advise", Value: "c"}}
	for b.Loop() {
		r := Run(ctx, sess, testRequest(b, "b", cmd), nil)
		if r.Lookup("collections", "0", "sampled").AsInt64() != 1000 {
			b.Fatalf("advise: %s", r)
		}
		if _, err := r.LookupErr("collections", "0", "findings", "0", "kind"); err != nil {
			b.Fatalf("advise found nothing: %s", r)
		}
	}
}
