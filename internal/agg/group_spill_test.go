package agg_test

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/agg"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// spillPipeline groups with every accumulator that has a partial state,
// then rounds the standard deviation, whose merged form (Chan's parallel
// variance) may differ from the sequential one in the last bits.
const spillPipeline = `{"$group": {"_id": {"$mod": ["$k", 37]},
	"sum": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "min": {"$min": "$v"}, "max": {"$max": "$s"},
	"first": {"$first": "$i"}, "last": {"$last": "$i"}, "push": {"$push": "$i"}, "set": {"$addToSet": "$s"},
	"n": {"$count": {}}, "sd": {"$stdDevPop": "$v"}, "obj": {"$mergeObjects": "$o"},
	"fn": {"$firstN": {"n": 3, "input": "$i"}}, "ln": {"$lastN": {"n": 3, "input": "$i"}},
	"mn": {"$minN": {"n": 2, "input": "$v"}}, "mx": {"$maxN": {"n": 2, "input": "$s"}},
	"top": {"$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$i"}}, "bot": {"$bottom": {"sortBy": {"v": 1}, "output": "$i"}},
	"big": {"$sum": {"$multiply": ["$v", 4611686018427387904]}}}}`

// TestGroupSpillMatchesMemory is a differential test: the same $group run
// within its budget and spilled to many runs gives the same groups.
func TestGroupSpillMatchesMemory(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	var input []bsoncore.Document
	for i := range 3000 {
		b := bsoncore.NewDocumentBuilder().AppendInt32("i", int32(i)).AppendInt64("k", r.Int64N(1000))
		switch r.IntN(4) {
		case 0:
			b.AppendDouble("v", float64(r.IntN(64))/4)
		case 1:
			b.AppendInt64("v", r.Int64N(1000))
		case 2:
			b.AppendInt32("v", int32(r.IntN(100)))
		}
		b.AppendString("s", string(rune('a'+r.IntN(26))))
		b.AppendDocument("o", bsoncore.NewDocumentBuilder().AppendInt32(string(rune('p'+r.IntN(5))), int32(i)).Build())
		input = append(input, b.Build())
	}
	pipe := stages(t, spillPipeline, `{"$set": {"sd": {"$round": ["$sd", 6]}}}`, `{"$sort": {"_id": 1}}`)
	want := runToStrings(t, pipe, agg.Options{}, input)
	dir := t.TempDir()
	got := runToStrings(t, pipe, agg.Options{MaxMemory: 8 << 10, AllowDiskUse: true, TempDir: dir}, input)
	if len(want) != 37 {
		t.Fatalf("%d groups in memory, want 37", len(want))
	}
	sameDocs(t, got, want)
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d spill files left after the run", len(left))
	}
}

// TestGroupSpillWritesRuns checks that a spilling $group does write runs
// while it runs and removes them when closed.
func TestGroupSpillWritesRuns(t *testing.T) {
	var input []bsoncore.Document
	for i := range 2000 {
		input = append(input, bsoncore.NewDocumentBuilder().AppendInt32("k", int32(i)).Build())
	}
	dir := t.TempDir()
	p, err := agg.Parse(stages(t, `{"$group": {"_id": "$k", "n": {"$sum": 1}}}`), agg.Options{MaxMemory: 16 << 10, AllowDiskUse: true, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), agg.SliceSource(input))
	if err != nil {
		t.Fatal(err)
	}
	first, err := out.Next()
	if err != nil || first == nil {
		t.Fatalf("first group: %v", err)
	}
	// Spilled groups come out in key order: _id 0 first.
	if v, _ := first.Lookup("_id").Int32OK(); v != 0 {
		t.Errorf("first spilled group = %s, want _id 0", first)
	}
	runs, _ := os.ReadDir(dir)
	if len(runs) < 2 {
		t.Errorf("%d runs on disk, want several", len(runs))
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d runs left after Close", len(left))
	}
}
