package planner_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// longInEngine opens an engine in dir holding BenchmarkLongIn's
// collection: 100,000 documents {_id: i, v: i}, compacted.
func longInEngine(dir string) (*engine.Engine, error) {
	eng, err := engine.Open(dir, engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	var docs []bsoncore.Document
	for i := range 100000 {
		d, _ := bson.Marshal(bson.D{{"_id", i}, {"v", i}})
		docs = append(docs, d)
	}
	if _, err = eng.Insert(longInNS, docs, true); err != nil {
		return eng, err
	}
	// Compacted: no flush or compaction of the load runs during the
	// queries, so that their instruction counts repeat.
	_, _, err = eng.Compact(context.Background(), longInNS)
	return eng, err
}

var longInNS = engine.Namespace{DB: "bench", Coll: "longin"}

// BenchmarkLongIn runs find({_id: {$in: N distinct random ids}}) over
// 100,000 documents (built at each -count): planning (the filter parsed
// once, outside the loop)
// and draining the plan. Modes: "whole" is the scan before seeking (more
// than maxRanges values: the whole index, each key checked), "seek" the
// default (seek after one miss), "seekN" seeks after N misses in a row,
// "ranges" raises maxRanges so every value is its own key range (its own
// iterator), "oneCursor" lowers it to 1 so every N is read by one cursor
// that seeks. Reports keys examined per query. Run with -count for
// interleaved repetitions; the ids' seed is fixed (printed as the name).
func BenchmarkLongIn(b *testing.B) {
	eng, err := longInEngine(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	h := &planHarness{eng: eng, ns: longInNS}
	modes := []struct {
		name          string
		ranges, after int
	}{
		{"whole", 4096, 1 << 30},
		{"seek", 4096, 1},
		{"seek4", 4096, 4},
		{"seek16", 4096, 16},
		{"oneCursor", 1, 1},
		{"ranges", 1 << 30, 1},
	}
	for _, n := range []int{1000, 4000, 5000, 20000, 50000} {
		rng := rand.New(rand.NewPCG(uint64(n), 42))
		ids := rng.Perm(100000)[:n]
		slices.Sort(ids)
		in := bson.A{}
		for _, id := range ids {
			in = append(in, id)
		}
		raw, _ := bson.Marshal(bson.D{{"_id", bson.D{{"$in", in}}}})
		f, err := query.Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range modes {
			runtime.GC() // the garbage of what came before is not the mode's
			b.Run(fmt.Sprintf("n=%d/%s", n, m.name), func(b *testing.B) {
				restore := planner.SetScanLimits(m.ranges, m.after)
				defer restore()
				var keys int64
				for b.Loop() {
					ex, got, err := h.execute(&planner.Query{Filter: f, RawFilter: raw}, planner.Options{NS: longInNS.String(), Explain: true})
					if err != nil {
						b.Fatal(err)
					}
					keys, _ = ex.Examined()
					_ = ex.Close()
					if len(got) != n {
						b.Fatalf("%d results, want %d", len(got), n)
					}
				}
				b.ReportMetric(float64(keys), "keys/op")
			})
		}
	}
}
