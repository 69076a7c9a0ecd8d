package commands

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/query"
)

// TestGeo2dPlannerMatchesCollectionScan is the planner's differential test
// for 2d indexes: random legacy pairs (some missing, some arrays of pairs)
// under a 2d index with a random grid and a compound one; random $box,
// $center, $polygon and $centerSphere regions, alone or beside another
// condition: the index plan returns the collection scan's documents.
// Random $near and $nearSphere on legacy points, which only an index can
// run, are checked against brute force: every matching document within
// the bounds, in distance order.
func TestGeo2dPlannerMatchesCollectionScan(t *testing.T) {
	t.Parallel() // its own engine; the invariants pass runs these five side by side
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 2))
	t.Logf("seed %d", seed)
	_, run := commandRunner(t, "geo2ddiff")
	bits := 8 + rng.IntN(19)
	idx := bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2d"}}}, {Key: "name", Value: "loc"}, {Key: "bits", Value: bits}},
		bson.D{{Key: "key", Value: bson.D{{Key: "q", Value: "2d"}, {Key: "k", Value: 1}}}, {Key: "name", Value: "q_k"}, {Key: "min", Value: -20}, {Key: "max", Value: 20}},
	}
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: idx}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	coord := func() float64 { return math.Round((rng.Float64()*20-10)*1000) / 1000 }
	pt := func() bson.A { return bson.A{coord(), coord()} }
	docs := bson.A{}
	for i := range 800 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: rng.IntN(4)}}
		switch rng.IntN(6) {
		case 0:
		case 1:
			d = append(d, bson.E{Key: "loc", Value: bson.A{pt(), pt()}})
		default:
			d = append(d, bson.E{Key: "loc", Value: pt()})
		}
		if rng.IntN(5) > 0 {
			d = append(d, bson.E{Key: "q", Value: pt()})
		}
		docs = append(docs, d)
	}
	if r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}); r.Lookup("n").Int32() != 800 {
		t.Fatalf("insert: %s", r)
	}
	find := func(filter bson.D, hint any) ([]string, int32, string) {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 10000}, {Key: "projection", Value: bson.D{{Key: "_id", Value: 1}}}}
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		r := run(cmd)
		if code, ok := r.Lookup("code").Int32OK(); ok {
			return nil, code, ""
		}
		ex := run(bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}})
		vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = v.Document().Lookup("_id").String()
		}
		return out, 0, ex.Lookup("queryPlanner", "winningPlan").String()
	}
	region := func() bson.D {
		x, y, s := coord(), coord(), 0.2+rng.Float64()*5
		switch rng.IntN(4) {
		case 0:
			return bson.D{{Key: "$box", Value: bson.A{bson.A{x, y}, bson.A{x + s, y + s}}}}
		case 1:
			return bson.D{{Key: "$center", Value: bson.A{bson.A{x, y}, s}}}
		case 2:
			return bson.D{{Key: "$polygon", Value: bson.A{bson.A{x, y}, bson.A{x + s, y}, bson.A{x, y + s}}}}
		}
		return bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{x, y}, rng.Float64() * 0.1}}}
	}
	indexed, matched := 0, 0
	for i := range 400 {
		path := "loc"
		if rng.IntN(3) == 0 {
			path = "q"
		}
		filter := bson.D{{Key: path, Value: bson.D{{Key: "$geoWithin", Value: region()}}}}
		if rng.IntN(2) == 0 {
			filter = append(filter, bson.E{Key: "k", Value: rng.IntN(4)})
		}
		a, code1, plan := find(filter, nil)
		b, code2, _ := find(filter, bson.D{{Key: "$natural", Value: 1}})
		slices.Sort(a)
		slices.Sort(b)
		if code1 != code2 || !slices.Equal(a, b) {
			t.Fatalf("case %d (seed %d): %v\n planner: %v (code %d)\n   scan: %v (code %d)\n plan: %s", i, seed, filter, a, code1, b, code2, plan)
		}
		if strings.Contains(plan, "IXSCAN") {
			indexed++
		}
		if len(b) > 0 {
			matched++
		}
	}
	for i := range 150 {
		path := "loc"
		if rng.IntN(3) == 0 {
			path = "q"
		}
		op := []string{"$near", "$nearSphere"}[rng.IntN(2)]
		cond := bson.D{{Key: op, Value: pt()}}
		scale := 6.0
		if op == "$nearSphere" {
			scale = 0.1
		}
		if rng.IntN(2) == 0 {
			cond = append(cond, bson.E{Key: "$maxDistance", Value: rng.Float64() * scale})
		}
		if rng.IntN(3) == 0 {
			cond = append(cond, bson.E{Key: "$minDistance", Value: rng.Float64() * scale / 3})
		}
		filter := bson.D{{Key: path, Value: cond}}
		if rng.IntN(2) == 0 {
			filter = append(filter, bson.E{Key: "k", Value: rng.IntN(4)})
		}
		got, code, plan := find(filter, nil)
		if code != 0 || !strings.Contains(plan, "GEO_NEAR_2D") {
			t.Fatalf("near %d (seed %d): %v: code %d, plan %s", i, seed, filter, code, plan)
		}
		want, dist := brute2dNear(t, run, filter, path)
		sg, sw := slices.Clone(got), slices.Clone(want)
		slices.Sort(sg)
		slices.Sort(sw)
		if !slices.Equal(sg, sw) {
			t.Fatalf("near %d (seed %d): %v\n planner: %v\n  brute: %v", i, seed, filter, got, want)
		}
		for j := 1; j < len(got); j++ {
			if dist[got[j]] < dist[got[j-1]] {
				t.Fatalf("near %d (seed %d): %v: %s (%g) after %s (%g)", i, seed, filter, got[j], dist[got[j]], got[j-1], dist[got[j-1]])
			}
		}
	}
	t.Logf("%d 2d finds, %d on an index, %d matched documents", 400, indexed, matched)
	if indexed < 300 || matched < 100 {
		t.Fatalf("only %d of 400 finds used an index and %d matched anything (seed %d)", indexed, matched, seed)
	}
}

// brute2dNear answers a legacy-point $near filter by brute force: the
// documents the filter matches, each at its distance to the nearest pair
// at path, in distance order.
func brute2dNear(t *testing.T, run func(bson.D) bsoncore.Document, filter bson.D, path string) ([]string, map[string]float64) {
	raw, _ := bson.Marshal(filter)
	f, err := query.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cond, _ := bson.Marshal(filter[0].Value)
	first, _ := bsoncore.Document(cond).IndexErr(0)
	near, err := query.ParseNear(first.Key(), first.Value(), bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: cond})
	if err != nil {
		t.Fatal(err)
	}
	r := run(bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 10000}})
	vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	var out []string
	dist := map[string]float64{}
	for _, v := range vals {
		doc := v.Document()
		best := math.Inf(1)
		for _, x := range geo.ValuesAt(doc, strings.Split(path, ".")) {
			pts := []bsoncore.Value{x}
			if _, ok := geo.ParseFlat(x); !ok && x.Type == bsoncore.TypeArray {
				pts, _ = bsoncore.Document(x.Data).Values()
			}
			for _, p := range pts {
				if fp, ok := geo.ParseFlat(p); ok {
					best = min(best, near.FlatPointDistance(fp))
				}
			}
		}
		if math.IsInf(best, 1) || !near.InRange(best) || !f.Match(doc) {
			continue
		}
		id := doc.Lookup("_id").String()
		out = append(out, id)
		dist[id] = best
	}
	slices.SortStableFunc(out, func(a, b string) int {
		switch {
		case dist[a] < dist[b]:
			return -1
		case dist[a] > dist[b]:
			return 1
		}
		return 0
	})
	return out, dist
}
