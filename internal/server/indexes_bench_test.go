package server_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Issue 6's measurements, over the wire with the Go driver against an
// in-process server (durable commits): an indexed point query and a
// 100-document range query against the same queries answered by a
// collection scan, index build time per million documents, and insert
// throughput with 0, 1, 3 and 5 secondary indexes. Run with
// `make bench-indexes` (1 M documents); TestIndexBenchSmoke runs the same
// code on a few thousand documents in every `go test`, so it cannot rot.
var (
	ixBenchDocs    = flag.Int("ixbench.docs", 1_000_000, "documents in the query collection of BenchmarkIndexes")
	ixBenchInserts = flag.Int("ixbench.inserts", 200_000, "documents inserted per index count in BenchmarkIndexes")
)

func BenchmarkIndexes(b *testing.B) {
	for b.Loop() {
		r := runIndexBench(b, indexBenchConfig{docs: *ixBenchDocs, inserts: *ixBenchInserts, queryTime: 3 * time.Second, scanRuns: 5})
		fmt.Println(r.table()) // b.Log would cut the table at ten lines
		b.ReportMetric(r.pointRatio(), "point-scan/index")
		b.ReportMetric(r.rangeRatio(), "range-scan/index")
		b.ReportMetric(r.buildPerMillion.Seconds(), "build-s/M-docs")
		for i, n := range insertIndexCounts {
			b.ReportMetric(r.insertRate[i]/r.insertRate[0], fmt.Sprintf("insert-%dix/0ix", n))
		}
	}
}

// TestIndexBenchSmoke runs the benchmark small and checks what it measured
// is what it claims: the queries return one and 100 documents.
func TestIndexBenchSmoke(t *testing.T) {
	r := runIndexBench(t, indexBenchConfig{docs: 3000, inserts: 1000, queryTime: 50 * time.Millisecond, scanRuns: 2})
	for _, v := range []time.Duration{r.pointIndexed, r.pointScan, r.rangeIndexed, r.rangeScan, r.buildPerMillion} {
		if v <= 0 {
			t.Fatalf("a measurement is not positive:\n%s", r.table())
		}
	}
	for i, rate := range r.insertRate {
		if rate <= 0 {
			t.Fatalf("insert rate with %d indexes is %f", insertIndexCounts[i], rate)
		}
	}
	t.Log("\n" + r.table())
}

type indexBenchConfig struct {
	docs, inserts int
	queryTime     time.Duration // how long each indexed query runs
	scanRuns      int           // how many times each collection scan runs
}

// insertIndexCounts are the secondary index counts of the insert runs.
var insertIndexCounts = []int{0, 1, 3, 5}

type indexBenchResult struct {
	cfg                     indexBenchConfig
	pointIndexed, pointScan time.Duration // per query
	rangeIndexed, rangeScan time.Duration
	build, buildPerMillion  time.Duration
	insertRate              []float64 // documents/s, per insertIndexCounts
	loadRate                float64
}

func (r indexBenchResult) pointRatio() float64 { return float64(r.pointScan) / float64(r.pointIndexed) }
func (r indexBenchResult) rangeRatio() float64 { return float64(r.rangeScan) / float64(r.rangeIndexed) }

func (r indexBenchResult) table() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d documents (loaded at %.0f docs/s)\n", r.cfg.docs, r.loadRate)
	fmt.Fprintf(&sb, "| query | index | collection scan | scan / index |\n|---|---|---|---|\n")
	fmt.Fprintf(&sb, "| point (1 document) | %s | %s | %.0f× |\n", r.pointIndexed.Round(time.Microsecond), r.pointScan.Round(time.Microsecond), r.pointRatio())
	fmt.Fprintf(&sb, "| range (100 documents) | %s | %s | %.0f× |\n", r.rangeIndexed.Round(time.Microsecond), r.rangeScan.Round(time.Microsecond), r.rangeRatio())
	fmt.Fprintf(&sb, "index build {k: 1}: %s for %d documents = %.2f s per million\n", r.build.Round(time.Millisecond), r.cfg.docs, r.buildPerMillion.Seconds())
	fmt.Fprintf(&sb, "| secondary indexes | inserts/s (%d documents) | ratio to 0 |\n|---|---|---|\n", r.cfg.inserts)
	for i, n := range insertIndexCounts {
		fmt.Fprintf(&sb, "| %d | %.0f | %.2f |\n", n, r.insertRate[i], r.insertRate[i]/r.insertRate[0])
	}
	return sb.String()
}

// benchDoc is document i of the query collection: k is unique and indexed,
// u holds the same value without an index (the collection-scan twin).
func benchDoc(i int, rng *rand.Rand) bson.D {
	return bson.D{
		{Key: "_id", Value: i},
		{Key: "k", Value: i},
		{Key: "u", Value: i},
		{Key: "a", Value: rng.IntN(1_000_000)},
		{Key: "b", Value: rng.IntN(1000)},
		{Key: "c", Value: rng.IntN(100)},
		{Key: "d", Value: rng.Float64()},
		{Key: "e", Value: rng.IntN(1 << 30)},
		{Key: "s", Value: fmt.Sprintf("user-%08d", rng.IntN(100_000_000))},
	}
}

func runIndexBench(tb testing.TB, cfg indexBenchConfig) indexBenchResult {
	tb.Helper()
	s := startServer(tb)
	c := s.client(tb)
	ctx := context.Background()
	db := c.Database("ixbench")
	r := indexBenchResult{cfg: cfg}

	// Load, then build {k: 1} over the loaded collection.
	data := db.Collection("data")
	began := time.Now()
	loadParallel(tb, data, 0, cfg.docs, 2)
	r.loadRate = float64(cfg.docs) / time.Since(began).Seconds()
	began = time.Now()
	if _, err := data.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		tb.Fatal(err)
	}
	r.build = time.Since(began)
	r.buildPerMillion = time.Duration(float64(r.build) * 1e6 / float64(cfg.docs))

	rng := rand.New(rand.NewPCG(1, 2))
	find := func(filter bson.D, want int) { findAll(tb, data, filter, want) }
	point := func(field string) func() {
		return func() { find(bson.D{{Key: field, Value: rng.IntN(cfg.docs)}}, 1) }
	}
	rangeQ := func(field string) func() {
		return func() {
			lo := rng.IntN(cfg.docs - 100)
			find(bson.D{{Key: field, Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + 100}}}}, 100)
		}
	}
	r.pointIndexed = timeFor(cfg.queryTime, 0, point("k"))
	r.pointScan = timeFor(0, cfg.scanRuns, point("u"))
	r.rangeIndexed = timeFor(cfg.queryTime, 0, rangeQ("k"))
	r.rangeScan = timeFor(0, cfg.scanRuns, rangeQ("u"))

	// Inserts into collections with 0, 1, 3 and 5 secondary indexes.
	all := []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}}},
		{Keys: bson.D{{Key: "b", Value: 1}}},
		{Keys: bson.D{{Key: "c", Value: 1}, {Key: "d", Value: -1}}},
		{Keys: bson.D{{Key: "e", Value: 1}}},
		{Keys: bson.D{{Key: "s", Value: 1}}},
	}
	// The runs take turns, a tenth of the documents at a time, so a change
	// in the machine's load (it is shared) falls on all of them alike.
	colls := make([]*mongo.Collection, len(insertIndexCounts))
	for i, n := range insertIndexCounts {
		colls[i] = db.Collection(fmt.Sprintf("ins%d", n))
		if n > 0 {
			if _, err := colls[i].Indexes().CreateMany(ctx, all[:n]); err != nil {
				tb.Fatal(err)
			}
		}
	}
	const rounds = 10
	spent := make([]time.Duration, len(colls))
	step := max(1, cfg.inserts/rounds)
	for from := 0; from < cfg.inserts; from += step {
		to := min(cfg.inserts, from+step)
		for i, coll := range colls {
			began := time.Now()
			loadParallel(tb, coll, from, to, 1)
			spent[i] += time.Since(began)
		}
	}
	for i := range colls {
		r.insertRate = append(r.insertRate, float64(cfg.inserts)/spent[i].Seconds())
	}
	return r
}

// timeFor runs fn for at least d and at least runs times and returns the
// mean time per call.
func timeFor(d time.Duration, runs int, fn func()) time.Duration {
	began := time.Now()
	n := 0
	for n < runs || time.Since(began) < d {
		fn()
		n++
	}
	return time.Since(began) / time.Duration(n)
}

// loadParallel inserts documents [from, to) in ordered batches of 1,000
// from workers clients' goroutines.
func loadParallel(tb testing.TB, coll *mongo.Collection, from, to, workers int) {
	tb.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	per := (to - from + workers - 1) / workers
	for w := range workers {
		lo, hi := from+w*per, min(to, from+(w+1)*per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(lo), 3))
			batch := make([]any, 0, 1000)
			for i := lo; i < hi; i++ {
				batch = append(batch, benchDoc(i, rng))
				if len(batch) == cap(batch) || i == hi-1 {
					if _, err := coll.InsertMany(ctx, batch); err != nil {
						errs <- err
						return
					}
					batch = batch[:0]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
}

// findAll runs a find, reads every result, and checks how many came back.
func findAll(tb testing.TB, coll *mongo.Collection, filter bson.D, want int) {
	tb.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, filter)
	if err != nil {
		tb.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(ctx, &out); err != nil {
		tb.Fatal(err)
	}
	if len(out) != want {
		tb.Fatalf("%v returned %d documents, want %d", filter, len(out), want)
	}
}
