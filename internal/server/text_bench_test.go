package server_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Issue 24's text search measurement, over the wire like BenchmarkIndexes:
// $text over many short documents against the same selection made by a
// collection scan with a case-insensitive whole-word $regex, in the same
// run. Run with `make bench-text` (1 M documents); TestTextBenchSmoke runs
// the same code on a few thousand documents in every `go test`.
var textBenchDocs = flag.Int("textbench.docs", 1_000_000, "documents in BenchmarkText's collection")

// textRareEvery: one document in this many holds the rare word the
// selective query looks for.
const textRareEvery = 10_000

func BenchmarkText(b *testing.B) {
	for b.Loop() {
		r := runTextBench(b, *textBenchDocs, 3*time.Second, 3)
		fmt.Println(r.table())
		b.ReportMetric(r.ratio(), "scan/text")
		b.ReportMetric(r.buildPerMillion.Seconds(), "build-s/M-docs")
	}
}

func TestTextBenchSmoke(t *testing.T) {
	r := runTextBench(t, 3000, 50*time.Millisecond, 2)
	if r.text <= 0 || r.scan <= 0 || r.buildPerMillion <= 0 {
		t.Fatalf("a measurement is not positive:\n%s", r.table())
	}
	t.Log("\n" + r.table())
}

type textBenchResult struct {
	docs, found     int
	text, scan      time.Duration // per query
	build           time.Duration
	buildPerMillion time.Duration
	loadRate        float64
}

func (r textBenchResult) ratio() float64 { return float64(r.scan) / float64(r.text) }

func (r textBenchResult) table() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d documents of 8 words (loaded at %.0f docs/s); text index built in %s (%.2f s per million)\n",
		r.docs, r.loadRate, r.build.Round(time.Millisecond), r.buildPerMillion.Seconds())
	fmt.Fprintf(&sb, "| query (%d documents) | $text | $regex collection scan | scan / text |\n|---|---|---|---|\n", r.found)
	fmt.Fprintf(&sb, "| one rare word | %s | %s | %.0f× |\n", r.text.Round(time.Microsecond), r.scan.Round(time.Microsecond), r.ratio())
	return sb.String()
}

// textWord is word n of a vocabulary of made-up lower-case words (two or
// three syllables), none a stop word.
func textWord(n int) string {
	syl := []string{"ka", "lo", "mi", "ne", "pu", "ro", "sa", "ti", "vu", "ze", "bar", "dol", "fen", "gor", "hul", "jas"}
	var sb strings.Builder
	for range 3 {
		sb.WriteString(syl[n%len(syl)])
		n /= len(syl)
	}
	return sb.String()
}

func textDoc(i int, rng *rand.Rand) bson.D {
	words := make([]string, 8)
	for j := range words {
		words[j] = textWord(rng.IntN(4096))
	}
	if i%textRareEvery == 0 {
		words[rng.IntN(len(words))] = "Quixotic"
	}
	return bson.D{{Key: "_id", Value: i}, {Key: "t", Value: strings.Join(words, " ")}}
}

func runTextBench(tb testing.TB, docs int, queryTime time.Duration, scanRuns int) textBenchResult {
	tb.Helper()
	s := startServer(tb)
	c := s.client(tb)
	ctx := context.Background()
	data := c.Database("textbench").Collection("data")
	r := textBenchResult{docs: docs, found: (docs + textRareEvery - 1) / textRareEvery}

	began := time.Now()
	rng := rand.New(rand.NewPCG(24, 1))
	batch := make([]any, 0, 1000)
	for i := range docs {
		batch = append(batch, textDoc(i, rng))
		if len(batch) == cap(batch) || i == docs-1 {
			if _, err := data.InsertMany(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	r.loadRate = float64(docs) / time.Since(began).Seconds()
	began = time.Now()
	if _, err := data.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "t", Value: "text"}}}); err != nil {
		tb.Fatal(err)
	}
	r.build = time.Since(began)
	r.buildPerMillion = time.Duration(float64(r.build) * 1e6 / float64(docs))

	find := func(filter bson.D) func() { return func() { findAll(tb, data, filter, r.found) } }
	r.text = timeFor(queryTime, 0, find(bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "quixotic"}}}}))
	r.scan = timeFor(0, scanRuns, find(bson.D{{Key: "t", Value: bson.D{{Key: "$regex", Value: `\bquixotic\b`}, {Key: "$options", Value: "i"}}}}))
	return r
}
