package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestSample: a collection of up to sampleKeyWalk keys is sampled
// uniformly (each document at most once, every fifth of the _id range
// represented), a larger one by seeks (n distinct documents; their known
// bias toward gaps in the key space is not asserted against), and a
// cancelled context ends the sampling.
func TestSample(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	e := openEngine(t, "")
	ns := Namespace{DB: "t", Coll: "c"}
	const total = 5000
	var docs []bsoncore.Document
	for i := range total {
		docs = append(docs, doc(t, bson.D{{Key: "_id", Value: int64(i * 7)}, {Key: "n", Value: i}}))
	}
	if _, err := e.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		n       int
		minGot  int
		spreads bool // every fifth of the _id range is sampled
		walk    int  // sampleKeyWalk for the case
	}{
		{"whole collection when it is small", total, total, false, 1 << 20},
		{"reservoir over the keys", 100, 100, true, 1 << 20},
		{"reservoir below four times the sample", 2000, 2000, true, 100},
		{"seeks beyond the key walk", 100, 90, false, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(was int) { sampleKeyWalk = was }(sampleKeyWalk)
			sampleKeyWalk = tc.walk
			r, err := e.NewReader(ns)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := r.Sample(context.Background(), tc.n, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < tc.minGot || len(got) > tc.n {
				t.Fatalf("%d documents, want %d..%d", len(got), tc.minGot, tc.n)
			}
			seen := map[int64]bool{}
			var fifths [5]int
			for _, d := range got {
				id := d.Lookup("_id").Int64()
				if seen[id] {
					t.Fatalf("document %d sampled twice", id)
				}
				seen[id] = true
				fifths[id/7*5/total]++
			}
			if tc.spreads {
				for i, n := range fifths {
					if n == 0 {
						t.Fatalf("no document from fifth %d of the _id range: %v", i, fifths)
					}
				}
			}
		})
	}
	r, err := e.NewReader(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Sample(ctx, 100, rand.New(rand.NewPCG(seed, 2))); err == nil {
		t.Fatal("a cancelled sample returned no error")
	}
}
