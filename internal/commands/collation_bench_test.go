package commands

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// BenchmarkCollatedIndexLookup compares, in one run over one collection, an
// equality and a short range on a string field through a simple index
// with the same through an index of the query's collation (en, strength
// 2): what a collation costs a lookup (collation keys for the bounds, the
// filter compared by the collator in FETCH). Issue #24's target: within
// 1.5× of the simple lookup.
func BenchmarkCollatedIndexLookup(b *testing.B) {
	sess := testSession(b, engine.Options{})
	request := func(cmd bson.D) *Request { return testRequest(b, "b", cmd) }
	const n = 20000
	docs := bson.A{}
	for i := range n {
		name := fmt.Sprintf("User%05d", i)
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: name}, {Key: "t", Value: name}})
	}
	Run(context.Background(), sess, request(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil)
	en2 := bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}
	r := Run(context.Background(), sess, request(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_simple"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_en2"}, {Key: "collation", Value: en2}},
	}}}), nil)
	if ok, _ := r.Lookup("ok").DoubleOK(); ok != 1 {
		b.Fatalf("createIndexes: %s", r)
	}
	for _, bc := range []struct {
		name string
		cmd  bson.D
		want int
	}{
		{"eq/simple", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "s", Value: "User04242"}}}}, 1},
		{"eq/collated", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "t", Value: "user04242"}}}, {Key: "collation", Value: en2}}, 1},
		{"range10/simple", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$gte", Value: "User05000"}, {Key: "$lt", Value: "User05010"}}}}}}, 10},
		{"range10/collated", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: "user05000"}, {Key: "$lt", Value: "USER05010"}}}}}, {Key: "collation", Value: en2}}, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body, _ := bson.Marshal(append(bc.cmd, bson.E{Key: "singleBatch", Value: true}, bson.E{Key: "$db", Value: "b"}))
			var dst []byte
			b.ReportAllocs()
			// CPU time per lookup besides wall time: on a machine shared
			// with other work, wall time measures the others too.
			cpu0 := processCPU()
			for b.Loop() {
				req, err := NewRequest(body, "", nil)
				if err != nil {
					b.Fatal(err)
				}
				dst = Run(context.Background(), sess, req, dst[:0])
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			docs, code := firstBatchOf(dst)
			if code != 0 || len(docs) != bc.want {
				b.Fatalf("%d documents (code %d), want %d", len(docs), code, bc.want)
			}
		})
	}
}

// processCPU is the process's user and system CPU time so far, in
// nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
