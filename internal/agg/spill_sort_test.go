package agg_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/agg"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestSortedSpillMatchesMemory is a differential test of the stages that
// spill through a sorted keyedSorter: run within their budget and spilled
// to many runs, $bucketAuto and $setWindowFields give the same output,
// order included. Keys mix types, arrays and missing values, with many
// ties, so that the spilled order must match expr.Compare and stay stable.
// The budget holds one partition but not the input.
func TestSortedSpillMatchesMemory(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	var input []bsoncore.Document
	for i := range 2000 {
		b := bsoncore.NewDocumentBuilder().AppendInt32("i", int32(i))
		switch r.IntN(5) {
		case 0:
			b.AppendDouble("k", float64(r.IntN(40))/2)
		case 1:
			b.AppendInt64("k", r.Int64N(30))
		case 2:
			b.AppendArray("k", bsoncore.NewArrayBuilder().AppendInt32(int32(r.IntN(5))).AppendInt32(int32(r.IntN(5))).Build())
		case 3:
			b.AppendString("k", string(rune('a'+r.IntN(5))))
		}
		b.AppendInt32("p", int32(r.IntN(12))).AppendInt32("v", int32(r.IntN(50)))
		input = append(input, b.Build())
	}
	pipelines := map[string][]string{
		"bucketAuto":             {`{"$bucketAuto": {"groupBy": "$k", "buckets": 7, "output": {"n": {"$sum": 1}, "ids": {"$push": "$i"}}}}`},
		"bucketAuto granularity": {`{"$bucketAuto": {"groupBy": "$v", "buckets": 5, "granularity": "E12", "output": {"ids": {"$push": "$i"}}}}`},
		"setWindowFields": {`{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"v": -1},
			"output": {"run": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}, "r": {"$rank": {}},
			"near": {"$push": "$i", "window": {"range": [-1, 1]}}}}}`},
		"setWindowFields by array keys": {`{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"k": 1},
			"output": {"first": {"$first": "$i"}, "n": {"$documentNumber": {}}}}}`},
	}
	for name, ss := range pipelines {
		t.Run(name, func(t *testing.T) {
			pipe := stages(t, ss...)
			want := runToStrings(t, pipe, agg.Options{}, input)
			dir := t.TempDir()
			got := runToStrings(t, pipe, agg.Options{MaxMemory: 32 << 10, AllowDiskUse: true, TempDir: dir}, input)
			if len(want) == 0 {
				t.Fatal("no output")
			}
			sameDocs(t, got, want)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d spill files left after the run", len(left))
			}
		})
	}
}

// runToStrings runs pipe over input and returns its output as Extended
// JSON, for differential tests.
func runToStrings(t *testing.T, pipe []bsoncore.Document, opts agg.Options, input []bsoncore.Document) []string {
	t.Helper()
	p, err := agg.Parse(pipe, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), agg.SliceSource(input))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, d := range docs {
		s = append(s, bson.Raw(d).String())
	}
	return s
}

// sameDocs fails at the first document where a spilled run's output got
// differs from the in-memory want.
func sameDocs(t *testing.T, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("document %d differs:\nspilled   %s\nin memory %s", i, got[i], want[i])
		}
	}
	t.Fatalf("spilled %d documents, in memory %d", len(got), len(want))
}
