package geo

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestCoveringIsASuperset checks the "covering is a superset" invariant
// (doc.go): for random geometries and regions, every geometry that the
// region contains or intersects has an index key inside the region's query
// ranges, so an index scan misses nothing a collection scan finds.
func TestCoveringIsASuperset(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	coord := func() float64 { return rng.Float64()*10 - 5 }
	value := func(d bson.D) bsoncore.Value {
		b, _ := bson.Marshal(d)
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
	}
	square := func(s float64) bson.A {
		x, y := coord(), coord()
		return bson.A{bson.A{bson.A{x, y}, bson.A{x + s, y}, bson.A{x + s, y + s}, bson.A{x, y + s}, bson.A{x, y}}}
	}
	for _, p := range []IndexParams{DefaultParams, {CoarsestLevel: 2, FinestLevel: 12, MaxCells: 8}} {
		checked := 0
		for range 3000 {
			var gd bson.D
			switch rng.IntN(3) {
			case 0:
				gd = bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{coord(), coord()}}}
			case 1:
				gd = bson.D{{Key: "type", Value: "LineString"}, {Key: "coordinates", Value: bson.A{bson.A{coord(), coord()}, bson.A{coord(), coord()}}}}
			default:
				gd = bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: square(rng.Float64())}}
			}
			g, ok, err := Parse(value(gd))
			if !ok || err != nil {
				t.Fatalf("seed %d: %v: %v", seed, gd, err)
			}
			var r *Region
			if rng.IntN(2) == 0 {
				r, err = ParseWithin(value(bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{coord(), coord()}, rng.Float64() * 0.1}}}))
			} else {
				r, err = ParseIntersects(value(bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: square(0.2 + rng.Float64()*4)}}}}))
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != RegionCenterSphere && !r.Intersects(g) || r.Kind == RegionCenterSphere && !r.Within(g) {
				continue
			}
			checked++
			ranges := r.QueryCells(p)
			found := false
			for _, c := range g.Covering(p) {
				for _, rg := range ranges {
					if k := Key(c); k >= rg.Lo && k <= rg.Hi {
						found = true
					}
				}
			}
			if !found {
				t.Fatalf("seed %d: %v matches the region but no key of it is in the query ranges", seed, gd)
			}
		}
		if checked < 100 {
			t.Fatalf("seed %d: only %d geometries matched their region", seed, checked)
		}
	}
}
