package commands

import (
	"fmt"
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

// TestGeoPlannerMatchesCollectionScan is the planner's differential test
// for 2dsphere indexes: random points, lines and polygons (some missing,
// some in arrays of subdocuments), random $geoWithin and $geoIntersects
// regions, alone or beside another condition: the index plan returns the
// collection scan's documents. Random $near and $nearSphere queries, which
// only an index can run, are checked against brute force: every document
// within the distance bounds that matches the rest of the filter, in
// distance order.
func TestGeoPlannerMatchesCollectionScan(t *testing.T) {
	t.Parallel() // its own engine; the invariants pass runs these five side by side
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 24))
	t.Logf("seed %d", seed)
	_, run := commandRunner(t, "geodiff")
	idx := bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}, {Key: "name", Value: "loc"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}, {Key: "loc", Value: "2dsphere"}}}, {Key: "name", Value: "k_loc"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "p.g", Value: "2dsphere"}}}, {Key: "name", Value: "pg"}, {Key: "finestIndexedLevel", Value: 16}},
	}
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: idx}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	// A small area so that regions catch some of it.
	coord := func() float64 { return math.Round((rng.Float64()*20-10)*1000) / 1000 }
	pt := func() bson.A { return bson.A{coord(), coord()} }
	geom := func() any {
		switch rng.IntN(6) {
		case 0:
			return bson.D{{Key: "type", Value: "LineString"}, {Key: "coordinates", Value: bson.A{pt(), pt()}}}
		case 1:
			x, y, s := coord(), coord(), 0.1+rng.Float64()*2
			return bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{x, y}, bson.A{x + s, y}, bson.A{x + s, y + s}, bson.A{x, y + s}, bson.A{x, y}}}}}
		case 2:
			return pt() // a legacy pair
		case 3:
			return bson.D{{Key: "type", Value: "MultiPoint"}, {Key: "coordinates", Value: bson.A{pt(), pt()}}}
		}
		return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: pt()}}
	}
	docs := bson.A{}
	for i := range 600 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: rng.IntN(4)}}
		if rng.IntN(8) > 0 {
			d = append(d, bson.E{Key: "loc", Value: geom()})
		}
		switch rng.IntN(3) {
		case 0:
			d = append(d, bson.E{Key: "p", Value: bson.D{{Key: "g", Value: geom()}}})
		case 1:
			d = append(d, bson.E{Key: "p", Value: bson.A{bson.D{{Key: "g", Value: geom()}}, bson.D{{Key: "g", Value: geom()}}}})
		}
		docs = append(docs, d)
	}
	if r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}); r.Lookup("n").Int32() != 600 {
		t.Fatalf("insert: %s", r)
	}
	find := func(filter bson.D, hint any) ([]bsoncore.Document, int32, string) {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 10000}}
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		r := run(cmd)
		if code, ok := r.Lookup("code").Int32OK(); ok {
			return nil, code, ""
		}
		ex := run(bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}})
		vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
		out := make([]bsoncore.Document, len(vals))
		for i, v := range vals {
			out[i] = v.Document()
		}
		return out, 0, ex.Lookup("queryPlanner", "winningPlan").String()
	}
	ids := func(ds []bsoncore.Document) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.Lookup("_id").String()
		}
		return out
	}
	region := func() bson.D {
		switch rng.IntN(4) {
		case 0:
			return bson.D{{Key: "$centerSphere", Value: bson.A{pt(), rng.Float64() * 0.1}}}
		case 1:
			x, y, s := coord(), coord(), 0.5+rng.Float64()*8
			return bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{x, y}, bson.A{x + s, y}, bson.A{x + s, y + s}, bson.A{x, y + s}, bson.A{x, y}}}}}}}
		case 2:
			x, y, s := coord(), coord(), 0.5+rng.Float64()*8
			return bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{x, y}, bson.A{x + s, y}, bson.A{x, y + s}, bson.A{x, y}}}}}}}
		}
		return bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "LineString"}, {Key: "coordinates", Value: bson.A{pt(), pt()}}}}}
	}
	indexed, matched, nears := 0, 0, 0
	for i := range 400 {
		path := "loc"
		if rng.IntN(3) == 0 {
			path = "p.g"
		}
		r := region()
		op := "$geoIntersects"
		if _, ok := r[0].Value.(bson.D); !ok || r[0].Key != "$geometry" || rng.IntN(2) == 0 {
			if r[0].Key == "$centerSphere" || strings.Contains(fmt.Sprint(r), "Polygon") {
				op = "$geoWithin"
			}
		}
		filter := bson.D{{Key: path, Value: bson.D{{Key: op, Value: r}}}}
		if rng.IntN(2) == 0 {
			filter = append(filter, bson.E{Key: "k", Value: rng.IntN(4)})
		}
		planned, code1, plan := find(filter, nil)
		scanned, code2, _ := find(filter, bson.D{{Key: "$natural", Value: 1}})
		a, b := ids(planned), ids(scanned)
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
			path = "p.g"
		}
		var cond bson.D
		if rng.IntN(2) == 0 {
			g := bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: pt()}}}}
			if rng.IntN(2) == 0 {
				g = append(g, bson.E{Key: "$maxDistance", Value: rng.Float64() * 800000})
			}
			if rng.IntN(3) == 0 {
				g = append(g, bson.E{Key: "$minDistance", Value: rng.Float64() * 200000})
			}
			cond = bson.D{{Key: []string{"$near", "$nearSphere"}[rng.IntN(2)], Value: g}}
		} else {
			cond = bson.D{{Key: "$nearSphere", Value: pt()}}
			if rng.IntN(2) == 0 {
				cond = append(cond, bson.E{Key: "$maxDistance", Value: rng.Float64() * 0.15})
			}
		}
		filter := bson.D{{Key: path, Value: cond}}
		if rng.IntN(2) == 0 {
			filter = append(filter, bson.E{Key: "k", Value: rng.IntN(4)})
		}
		planned, code, plan := find(filter, nil)
		if code != 0 || !strings.Contains(plan, "GEO_NEAR_2DSPHERE") {
			t.Fatalf("near %d (seed %d): %v: code %d, plan %s", i, seed, filter, code, plan)
		}
		want, dist := bruteNear(t, run, filter, path)
		got := ids(planned)
		sortedGot := slices.Clone(got)
		slices.Sort(sortedGot)
		sortedWant := slices.Clone(want)
		slices.Sort(sortedWant)
		if !slices.Equal(sortedGot, sortedWant) {
			t.Fatalf("near %d (seed %d): %v\n planner: %v\n  brute: %v", i, seed, filter, got, want)
		}
		// In distance order; documents at the same distance (a point
		// inside two polygons) may come in any order.
		for j := 1; j < len(got); j++ {
			if dist[got[j]] < dist[got[j-1]] {
				t.Fatalf("near %d (seed %d): %v: %s (%g) after %s (%g)\n planner: %v\n  brute: %v", i, seed, filter, got[j], dist[got[j]], got[j-1], dist[got[j-1]], got, want)
			}
		}
		nears++
	}
	t.Logf("%d geo finds, %d on an index, %d matched documents; %d near queries", 400, indexed, matched, nears)
	if indexed < 200 || matched < 100 {
		t.Fatalf("only %d of 400 finds used an index and %d matched anything (seed %d)", indexed, matched, seed)
	}
}

// bruteNear answers a $near filter by brute force: every document (a
// collection scan of the filter, which keeps the distance bounds) sorted
// by its distance from the point to the nearest geometry at path, and
// each one's distance.
func bruteNear(t *testing.T, run func(bson.D) bsoncore.Document, filter bson.D, path string) ([]string, map[string]float64) {
	raw, _ := bson.Marshal(filter)
	f, err := query.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	cond, _ := bson.Marshal(filter[0].Value)
	cv := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: cond}
	first, _ := bsoncore.Document(cond).IndexErr(0)
	near, err := query.ParseNear(first.Key(), first.Value(), cv)
	if err != nil {
		t.Fatal(err)
	}
	r := run(bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 10000}})
	vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	type hit struct {
		id string
		d  float64
	}
	var hits []hit
	for _, v := range vals {
		doc := v.Document()
		if !f.Match(doc) {
			continue
		}
		best := math.Inf(1)
		for _, g := range geo.ValuesAt(doc, strings.Split(path, ".")) {
			if gm, ok, err := geo.Parse(g); ok && err == nil {
				if d, ok := near.DistanceTo(gm); ok {
					best = min(best, d)
				}
			}
		}
		hits = append(hits, hit{doc.Lookup("_id").String(), best})
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return 0
	})
	out := make([]string, len(hits))
	dist := map[string]float64{}
	for i, h := range hits {
		out[i] = h.id
		dist[h.id] = h.d
	}
	return out, dist
}
