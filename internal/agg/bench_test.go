package agg_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/collation"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// benchInput is n documents {_id, k: i%keys, v: i, docId, ver}.
func benchInput(n, keys int) []bsoncore.Document {
	out := make([]bsoncore.Document, n)
	for i := range out {
		out[i] = bsoncore.NewDocumentBuilder().
			AppendInt32("_id", int32(i)).
			AppendInt32("k", int32(i%keys)).
			AppendInt32("v", int32(i)).
			AppendString("docId", fmt.Sprintf("d%06d", i%(n/10+1))).
			AppendInt32("ver", int32(i/(n/10+1))).
			Build()
	}
	return out
}

func runBench(b *testing.B, input []bsoncore.Document, pipeline ...string) {
	runBenchOpts(b, agg.Options{}, input, pipeline...)
}

func runBenchOpts(b *testing.B, opts agg.Options, input []bsoncore.Document, pipeline ...string) {
	p, err := agg.Parse(stages(b, pipeline...), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		out, err := p.Run(context.Background(), agg.SliceSource(input))
		if err != nil {
			b.Fatal(err)
		}
		for {
			d, err := out.Next()
			if err != nil {
				b.Fatal(err)
			}
			if d == nil {
				break
			}
		}
		out.Close()
	}
	b.ReportMetric(float64(len(input))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkGroup groups 100k documents by a 1,000-value key.
func BenchmarkGroup(b *testing.B) {
	runBench(b, benchInput(100_000, 1000), `{"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$v"}, "m": {"$max": "$v"}}}`)
}

// BenchmarkGroupSpill groups 100k documents by a 50,000-value key within
// the budget and, with a 1 MB budget and allowDiskUse, spilling runs: the
// ratio of the two is the cost of spilling.
func BenchmarkGroupSpill(b *testing.B) {
	input := benchInput(100_000, 50_000)
	const group = `{"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$v"}, "f": {"$first": "$v"}}}`
	b.Run("memory", func(b *testing.B) { runBenchOpts(b, agg.Options{}, input, group) })
	b.Run("spilled", func(b *testing.B) {
		runBenchOpts(b, agg.Options{MaxMemory: 1 << 20, AllowDiskUse: true, TempDir: b.TempDir()}, input, group)
	})
}

// BenchmarkSetWindowFields computes a running sum and a 5-document moving
// average over 100k documents in 1,000 partitions.
func BenchmarkSetWindowFields(b *testing.B) {
	runBench(b, benchInput(100_000, 1000), `{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"v": 1}, "output": {
		"run": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
		"avg": {"$avg": "$v", "window": {"documents": [-2, 2]}}}}}`)
}

// BenchmarkLatestVersion is the latest-version pipeline over 100k
// versions of 10k documents, sorted in memory (no index).
func BenchmarkLatestVersion(b *testing.B) {
	runBench(b, benchInput(100_000, 1000),
		`{"$sort": {"docId": 1, "ver": -1}}`,
		`{"$group": {"_id": "$docId", "doc": {"$first": "$$ROOT"}}}`,
		`{"$match": {"doc.k": {"$lt": 500}}}`)
}

// BenchmarkProject is a streaming $match+$project.
func BenchmarkProject(b *testing.B) {
	runBench(b, benchInput(100_000, 1000),
		`{"$match": {"k": {"$lt": 500}}}`,
		`{"$project": {"k": 1, "twice": {"$multiply": ["$v", 2]}}}`)
}

// compareStrings is a $project of string comparisons: the expression path
// that every collation-aware operator takes.
var compareStrings = []string{`{"$project": {
	"eq": {"$eq": ["$docId", "d000042"]},
	"in": {"$in": ["$docId", ["d000001", "d000002", "d000003"]]},
	"max": {"$max": ["$docId", "d005000"]},
	"c": {"$cond": [{"$lt": ["$docId", "d005000"]}, "lo", "hi"]}}}`}

// BenchmarkCompareStrings runs compareStrings over 100k documents under
// the simple collation; compare it with main's to see what carrying a
// collator costs when there is none.
func BenchmarkCompareStrings(b *testing.B) {
	runBench(b, benchInput(100_000, 1000), compareStrings...)
}

// BenchmarkCompareStringsCollated is BenchmarkCompareStrings under
// {locale: "en", strength: 2}: the cost of collating each comparison.
func BenchmarkCompareStringsCollated(b *testing.B) {
	coll, err := collation.Parse(bsoncore.NewDocumentBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Build())
	if err != nil {
		b.Fatal(err)
	}
	runBenchOpts(b, agg.Options{Collation: coll}, benchInput(100_000, 1000), compareStrings...)
}
