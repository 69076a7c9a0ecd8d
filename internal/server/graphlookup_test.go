package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestGraphLookupIndexMatchesScan is a differential test of $graphLookup:
// the same random graph searched through an index on connectToField and
// by reading the whole collection must find the same documents at the
// same depths, for random starts, maxDepth and restrictSearchWithMatch.
// The seed is printed; set it to replay a failure.
func TestGraphLookupIndexMatchesScan(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("graph")

	const nodes = 150
	var docs []any
	for i := range nodes {
		d := bson.D{{Key: "_id", Value: i}}
		switch rng.IntN(4) {
		case 0: // an array key: the node answers to several values
			d = append(d, bson.E{Key: "k", Value: bson.A{i, nodes + rng.IntN(20)}})
		case 1: // no key: matched by a null frontier value only
		default:
			d = append(d, bson.E{Key: "k", Value: i})
		}
		var to bson.A
		for range rng.IntN(4) {
			to = append(to, rng.IntN(nodes+20))
		}
		if rng.IntN(5) == 0 {
			to = append(to, nil)
		}
		d = append(d, bson.E{Key: "to", Value: to}, bson.E{Key: "w", Value: rng.IntN(10)})
		docs = append(docs, d)
	}
	for _, coll := range []string{"scan", "indexed"} {
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "indexed"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}},
	}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var starts []any
	for i := range 30 {
		starts = append(starts, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: rng.IntN(nodes + 20)}})
	}
	if _, err := db.Collection("starts").InsertMany(ctx, starts); err != nil {
		t.Fatal(err)
	}
	search := func(from string, spec bson.D) map[int32][]string {
		t.Helper()
		g := append(bson.D{{Key: "from", Value: from}, {Key: "startWith", Value: "$s"}, {Key: "connectFromField", Value: "to"},
			{Key: "connectToField", Value: "k"}, {Key: "as", Value: "found"}, {Key: "depthField", Value: "d"}}, spec...)
		cur, err := db.Collection("starts").Aggregate(ctx, bson.A{bson.D{{Key: "$graphLookup", Value: g}}})
		if err != nil {
			t.Fatalf("%v: %v", g, err)
		}
		var out []struct {
			ID    int32 `bson:"_id"`
			Found []struct {
				ID int32 `bson:"_id"`
				D  int64 `bson:"d"`
			} `bson:"found"`
		}
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		res := map[int32][]string{}
		for _, o := range out {
			var f []string
			for _, x := range o.Found {
				f = append(f, fmt.Sprintf("%d@%d", x.ID, x.D))
			}
			slices.Sort(f)
			res[o.ID] = f
		}
		return res
	}
	specs := []bson.D{nil}
	for range 8 {
		var spec bson.D
		if rng.IntN(2) == 0 {
			spec = append(spec, bson.E{Key: "maxDepth", Value: rng.IntN(4)})
		}
		if rng.IntN(2) == 0 {
			spec = append(spec, bson.E{Key: "restrictSearchWithMatch", Value: bson.D{{Key: "w", Value: bson.D{{Key: "$lt", Value: 3 + rng.IntN(7)}}}}})
		}
		specs = append(specs, spec)
	}
	found := 0
	for _, spec := range specs {
		scan, indexed := search("scan", spec), search("indexed", spec)
		if len(scan) != len(starts) {
			t.Fatalf("spec %v: %d results, want %d", spec, len(scan), len(starts))
		}
		for id, want := range scan {
			found += len(want)
			if got := indexed[id]; !slices.Equal(got, want) {
				t.Errorf("spec %v, start %d: through the index %v, by scan %v", spec, id, got, want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no search found anything: the test proves nothing")
	}
	// The indexed searches did read through the index.
	cur, err := db.Collection("indexed").Aggregate(ctx, bson.A{bson.D{{Key: "$indexStats", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var stats []struct {
		Name     string `bson:"name"`
		Accesses struct {
			Ops int64 `bson:"ops"`
		} `bson:"accesses"`
	}
	if err := cur.All(ctx, &stats); err != nil {
		t.Fatal(err)
	}
	used := false
	for _, st := range stats {
		used = used || st.Name == "k_1" && st.Accesses.Ops > 0
	}
	if !used {
		t.Fatalf("the index on connectToField was never used: %+v", stats)
	}
}
