package query_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The benchmarks evaluate filters over one million in-memory documents
// (a collection scan without storage) and report documents per second,
// next to BenchmarkScanBaseline, which only walks each document's
// elements: the ratio is the cost of matching over the cost of reading.

const benchDocs = 1_000_000

var (
	benchOnce sync.Once
	benchSet  []bsoncore.Document
)

// benchCorpus builds documents shaped like a small user record:
// {_id, a: int, name: string, b: {c: string, d: int}, tags: [3 strings], score: double}.
func benchCorpus() []bsoncore.Document {
	benchOnce.Do(func() {
		benchSet = make([]bsoncore.Document, benchDocs)
		colors := []string{"red", "green", "blue", "cyan", "black"}
		for i := range benchSet {
			benchSet[i] = bsoncore.NewDocumentBuilder().
				AppendInt32("_id", int32(i)).
				AppendInt32("a", int32(i%1000)).
				AppendString("name", fmt.Sprintf("user%07d", i)).
				AppendDocument("b", bsoncore.NewDocumentBuilder().
					AppendString("c", colors[i%len(colors)]).
					AppendInt32("d", int32(i%97)).Build()).
				AppendArray("tags", bsoncore.NewArrayBuilder().
					AppendString(colors[i%5]).AppendString(colors[(i+1)%5]).AppendString(colors[(i+2)%5]).Build()).
				AppendDouble("score", float64(i%500)/7).
				Build()
		}
	})
	return benchSet
}

func reportDocsPerSecond(b *testing.B, start time.Time) {
	b.ReportMetric(float64(benchDocs)*float64(b.N)/time.Since(start).Seconds(), "docs/s")
}

// BenchmarkScanBaseline reads every element of every document, touching
// each value's type, and nothing else.
func BenchmarkScanBaseline(b *testing.B) {
	docs := benchCorpus()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for range b.N {
		for _, d := range docs {
			rest := d[4 : len(d)-1]
			for len(rest) > 0 {
				e, r, ok := bsoncore.ReadElement(rest)
				if !ok {
					break
				}
				if e[0] == byte(bsoncore.TypeInt32) {
					n++
				}
				rest = r
			}
		}
	}
	reportDocsPerSecond(b, start)
	if n == 0 {
		b.Fatal("scanned nothing")
	}
}

func benchFilter(b *testing.B, filter string, wantMatches int) {
	docs := benchCorpus()
	f := mustParse(b, filter)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		n := 0
		for _, d := range docs {
			if f.Match(d) {
				n++
			}
		}
		if n != wantMatches {
			b.Fatalf("%s matched %d documents, want %d", filter, n, wantMatches)
		}
	}
	reportDocsPerSecond(b, start)
}

// BenchmarkFilterGT is a collection scan of {a: {$gt: 900}}.
func BenchmarkFilterGT(b *testing.B) {
	benchFilter(b, `{"a": {"$gt": 900}}`, benchDocs/1000*99)
}

// BenchmarkFilterAnd3 is a collection scan of a three-clause $and with
// dotted paths.
func BenchmarkFilterAnd3(b *testing.B) {
	want := 0
	for i := range benchDocs {
		if i%1000 >= 100 && i%5 == 2 && i%97 < 50 {
			want++
		}
	}
	benchFilter(b, `{"$and": [{"a": {"$gte": 100}}, {"b.c": "blue"}, {"b.d": {"$lt": 50}}]}`, want)
}
