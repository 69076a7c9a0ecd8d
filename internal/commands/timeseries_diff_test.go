package commands

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTimeseriesMatchesCollection is the differential test of time series
// collections: the same random measurements (meta documents, some
// missing; times over a few bucket spans, in random order) go into a time
// series collection and into a plain one; random filters on the meta
// field, the time field and the other fields, and random deletes, must
// give the same documents from both. The time series reads go through the
// buckets (with the meta and time predicates pushed down to their index);
// the plain ones are the reference.
func TestTimeseriesMatchesCollection(t *testing.T) {
	t.Parallel() // its own engine; the invariants pass runs these five side by side
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	_, run := commandRunner(t, "tsdiff")
	ok := func(r bson.Raw) {
		t.Helper()
		if r.Lookup("ok").Double() != 1 {
			t.Fatalf("seed %d: %s", seed, r)
		}
	}
	ok(bson.Raw(run(bson.D{{Key: "create", Value: "ts"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "m"}, {Key: "bucketMaxSpanSeconds", Value: 600}, {Key: "bucketRoundingSeconds", Value: 600}}}})))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func() bson.DateTime {
		return bson.NewDateTimeFromTime(base.Add(time.Duration(rng.IntN(4*3600)) * time.Second))
	}
	for batch := range 6 {
		var docs bson.A
		for i := range 150 {
			d := bson.D{{Key: "_id", Value: batch*1000 + i}, {Key: "t", Value: at()}, {Key: "v", Value: rng.IntN(20)}}
			if rng.IntN(6) > 0 {
				d = append(d, bson.E{Key: "m", Value: bson.D{{Key: "s", Value: rng.IntN(5)}, {Key: "r", Value: []string{"eu", "us"}[rng.IntN(2)]}}})
			}
			docs = append(docs, d)
		}
		for _, coll := range []string{"ts", "plain"} {
			r := bson.Raw(run(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}, {Key: "ordered", Value: rng.IntN(2) == 0}}))
			if n, _ := r.Lookup("n").Int32OK(); n != 150 {
				t.Fatalf("seed %d: insert into %s: %s", seed, coll, r)
			}
		}
	}
	ids := func(coll string, filter bson.D) []int32 {
		r := bson.Raw(run(bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 100000}, {Key: "projection", Value: bson.D{{Key: "_id", Value: 1}}}}))
		arr, isArr := r.Lookup("cursor", "firstBatch").ArrayOK()
		vals, err := arr.Values()
		if !isArr || err != nil {
			t.Fatalf("seed %d: find %v on %s: %s", seed, filter, coll, r)
		}
		out := make([]int32, len(vals))
		for i, v := range vals {
			out[i] = v.Document().Lookup("_id").Int32()
		}
		slices.Sort(out)
		return out
	}
	filter := func() bson.D {
		f := bson.D{}
		if rng.IntN(2) == 0 {
			f = append(f, bson.E{Key: "m.s", Value: rng.IntN(6)})
		}
		if rng.IntN(4) == 0 {
			f = append(f, bson.E{Key: "m", Value: bson.D{{Key: "$exists", Value: rng.IntN(2) == 0}}})
		}
		if rng.IntN(3) > 0 {
			op := []string{"$gt", "$gte", "$lt", "$lte", "$eq"}[rng.IntN(5)]
			f = append(f, bson.E{Key: "t", Value: bson.D{{Key: op, Value: at()}}})
		}
		if rng.IntN(3) == 0 {
			f = append(f, bson.E{Key: "v", Value: bson.D{{Key: "$lt", Value: rng.IntN(20)}}})
		}
		if rng.IntN(5) == 0 {
			f = bson.D{{Key: "$or", Value: bson.A{f, bson.D{{Key: "m.r", Value: "eu"}}}}}
		}
		return f
	}
	pushed, matched := 0, 0
	for i := range 300 {
		f := filter()
		a, b := ids("ts", f), ids("plain", f)
		matched += len(b)
		if !slices.Equal(a, b) {
			t.Fatalf("case %d (seed %d): %v\n time series: %d %v\n       plain: %d %v", i, seed, f, len(a), a, len(b), b)
		}
		ex := bson.Raw(run(bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "ts"}, {Key: "filter", Value: f}}}}))
		if x := ex.String(); strings.Contains(x, `"control.`) || strings.Contains(x, `"meta.`) || strings.Contains(x, `"meta": `) {
			pushed++
		}
		if i%30 == 29 {
			d := filter()
			limit := int32(rng.IntN(2))
			var n [2]int32
			for j, coll := range []string{"ts", "plain"} {
				r := bson.Raw(run(bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: d}, {Key: "limit", Value: limit}}}}}))
				n[j], _ = r.Lookup("n").Int32OK()
			}
			if n[0] != n[1] {
				t.Fatalf("delete %v limit %d (seed %d): %d from the time series, %d from the plain collection", d, limit, seed, n[0], n[1])
			}
			if limit == 1 {
				// Which one went may differ: delete, from each, the one the
				// other lost, so both lose both.
				inTS, inPlain := ids("ts", nil), ids("plain", nil)
				for _, pair := range [][2]any{{"plain", inTS}, {"ts", inPlain}} {
					for _, id := range diff(pair[1].([]int32), ids(pair[0].(string), nil)) {
						run(bson.D{{Key: "delete", Value: pair[0]}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: 0}}}}})
					}
				}
				if a, b := ids("ts", nil), ids("plain", nil); !slices.Equal(a, b) {
					t.Fatalf("seed %d: the collections differ after a limit: 1 delete: %v vs %v", seed, a, b)
				}
			}
		}
	}
	t.Logf("300 finds, %d pushed down, %d documents matched", pushed, matched)
	if pushed < 100 || matched < 3000 {
		t.Fatalf("only %d of 300 filters were pushed down to the buckets and %d documents matched (seed %d)", pushed, matched, seed)
	}
}

// diff is the ids of b missing from a (both sorted).
func diff(a, b []int32) []int32 {
	var out []int32
	for _, x := range b {
		if _, found := slices.BinarySearch(a, x); !found {
			out = append(out, x)
		}
	}
	return out
}

// TestTimeseriesBucketLimits: a bucket holds at most 1,000 measurements,
// within batches and across them, and measurements farther apart than the
// span open buckets of their own.
func TestTimeseriesBucketLimits(t *testing.T) {
	_, run := commandRunner(t, "tslimits")
	run(bson.D{{Key: "create", Value: "w"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "m"}}}})
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	insert := func(from, n int) {
		var docs bson.A
		for i := from; i < from+n; i++ {
			docs = append(docs, bson.D{{Key: "t", Value: bson.NewDateTimeFromTime(base.Add(time.Duration(i) * time.Millisecond))}, {Key: "m", Value: "a"}})
		}
		if r := bson.Raw(run(bson.D{{Key: "insert", Value: "w"}, {Key: "documents", Value: docs}})); r.Lookup("n").Int32() != int32(n) {
			t.Fatalf("insert: %s", r)
		}
	}
	insert(0, 1500)   // one batch: 1,000 + 500
	insert(1500, 700) // the 500-bucket fills to 1,000, 200 more open a third
	r := bson.Raw(run(bson.D{{Key: "aggregate", Value: "system.buckets.w"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$objectToArray", Value: "$data.t"}}}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}}}}}}, {Key: "cursor", Value: bson.D{}}}))
	vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	var sizes []int32
	for _, v := range vals {
		sizes = append(sizes, v.Document().Lookup("n").Int32())
	}
	if !slices.Equal(sizes, []int32{1000, 1000, 200}) {
		t.Fatalf("bucket sizes %v, want [1000 1000 200]", sizes)
	}
	if n := bson.Raw(run(bson.D{{Key: "count", Value: "w"}})).Lookup("n").Int32(); n != 2200 {
		t.Fatalf("count %d, want 2200", n)
	}
}
