package planner

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestContainsOrderedMatchesContains: on ordered lists (points as an $in
// builds them, mixed types; disjoint ranges with open and closed ends) the
// binary search answers as the linear test does for every probe; lists
// that are not ordered are reported so (the scan then tests linearly).
// Randomized; the seed is printed.
func TestContainsOrderedMatchesContains(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	val := func() bsoncore.Value {
		switch r.IntN(4) {
		case 0:
			return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(rune('a'+r.IntN(26)))+string(rune('a'+r.IntN(26))))}
		case 1:
			return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, float64(r.IntN(200))/2)}
		case 2:
			return bsoncore.Value{Type: bsoncore.TypeNull}
		}
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(r.IntN(200)))}
	}
	for round := range 300 {
		var o OIL
		if round%2 == 0 { // an $in's points
			var vs []bsoncore.Value
			for range r.IntN(60) {
				vs = append(vs, val())
			}
			o = pointsOIL(vs)
		} else { // disjoint int ranges, ends open or closed at random
			o = OIL{}
			lo := int32(r.IntN(10))
			for range r.IntN(20) {
				hi := lo + int32(r.IntN(8))
				o = append(o, Interval{Lo: bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, lo)},
					Hi:     bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, hi)},
					LoIncl: r.IntN(2) == 0, HiIncl: r.IntN(2) == 0})
				lo = hi + 1 + int32(r.IntN(5))
			}
		}
		if !o.ordered() {
			t.Fatalf("round %d: a list built ordered is reported unordered: %v", round, o)
		}
		for range 200 {
			v := val()
			if got, want := o.containsOrdered(v), o.contains(v); got != want {
				t.Fatalf("round %d: %v in %v: search %v, linear %v", round, v, o, got, want)
			}
		}
	}
	i := func(n int32) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
	}
	for _, tc := range []struct {
		name string
		o    OIL
		want bool
	}{
		{"decreasing points", OIL{point(i(5)), point(i(3))}, false},
		{"overlapping ranges", OIL{{Lo: i(1), Hi: i(5), LoIncl: true, HiIncl: true}, {Lo: i(4), Hi: i(9), LoIncl: true, HiIncl: true}}, false},
		{"ranges sharing a closed end", OIL{{Lo: i(1), Hi: i(5), LoIncl: true, HiIncl: true}, {Lo: i(5), Hi: i(9), LoIncl: true, HiIncl: true}}, false},
		{"ranges meeting at an open end", OIL{{Lo: i(1), Hi: i(5), LoIncl: true, HiIncl: false}, {Lo: i(5), Hi: i(9), LoIncl: true, HiIncl: true}}, true},
		{"one interval", OIL{point(i(1))}, true},
		{"empty", OIL{}, true},
	} {
		if got := tc.o.ordered(); got != tc.want {
			t.Errorf("%s: ordered %v, want %v", tc.name, got, tc.want)
		}
	}
}
