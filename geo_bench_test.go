package cairn

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The geospatial benchmarks of issue 24, through the embedded API: n
// random points over a 20° x 20° area with a 2dsphere index, and for each
// query the same filter's collection scan ({$natural: 1}) in the same
// iteration, reported as a ratio. $near cannot run without its index, so
// its baseline is the collection scan of the $centerSphere of the same
// radius: the same documents, unordered. `go test -run XXX -bench BenchmarkGeo
// -benchtime 1x .` runs them at full size (BENCHMARKS.md);
// TestGeoBenchmarksTiny runs the same code on small data in `go test`.

var benchGeoDocs = flag.Int("geobench.docs", 1_000_000, "points for BenchmarkGeo*")

// geoLoad inserts n random points (seeded, so runs compare) and the index.
func geoLoad(tb testing.TB, db *DB, n int) {
	rng := rand.New(rand.NewPCG(24, 24))
	benchLoad(tb, db, "geo", n, func(i int) bsoncore.Document {
		pt := bsoncore.NewArrayBuilder().AppendDouble(rng.Float64()*20 - 10).AppendDouble(rng.Float64()*20 - 10).Build()
		loc := bsoncore.NewDocumentBuilder().AppendString("type", "Point").AppendArray("coordinates", pt).Build()
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendDocument("loc", loc).AppendInt32("k", int32(i%10)).Build()
	})
	benchIndex(tb, db, "geo", bson.D{{Key: "loc", Value: "2dsphere"}})
}

// timeFind runs a find to the end and returns its wall and CPU time and
// the number of documents.
func timeFind(tb testing.TB, db *DB, filter string, hint any, limit int64) (time.Duration, time.Duration, int) {
	tb.Helper()
	return timeFindIn(tb, db, "geo", filter, hint, limit)
}

// timeFindIn is timeFind over the collection coll.
func timeFindIn(tb testing.TB, db *DB, coll, filter string, hint any, limit int64) (time.Duration, time.Duration, int) {
	tb.Helper()
	var f bson.D
	if err := bson.UnmarshalExtJSON([]byte(filter), false, &f); err != nil {
		tb.Fatal(err)
	}
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: f}, {Key: "batchSize", Value: 1_000_000}}
	if hint != nil {
		cmd = append(cmd, bson.E{Key: "hint", Value: hint})
	}
	if limit > 0 {
		cmd = append(cmd, bson.E{Key: "limit", Value: limit})
	}
	start, cpu := time.Now(), processCPU()
	reply, err := db.RunCommand(context.Background(), "bench", cmd)
	took, tookCPU := time.Since(start), processCPU()-cpu
	if err != nil {
		tb.Fatal(err)
	}
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	return took, tookCPU, len(vals)
}

// geoPair times a query on the index and its collection scan baseline,
// checking that both find the same number of documents (and some).
func geoPair(tb testing.TB, db *DB, iters int, work, base string, limit int64) aggTiming {
	return findPair(tb, db, iters, "geo", work, "geo", base, limit)
}

// findPair times a find on workColl and its collection scan baseline on
// baseColl (the same collection, or one holding the same documents),
// checking that both find the same number of documents (and some).
func findPair(tb testing.TB, db *DB, iters int, workColl, work, baseColl, base string, limit int64) aggTiming {
	t := aggTiming{runs: iters}
	for range iters {
		var nw, nb int
		t.add(func() (time.Duration, time.Duration) {
			w, c, n := timeFindIn(tb, db, baseColl, base, bson.D{{Key: "$natural", Value: 1}}, 0)
			nb = n
			return w, c
		}, func() (time.Duration, time.Duration) {
			w, c, n := timeFindIn(tb, db, workColl, work, nil, limit)
			nw = n
			return w, c
		})
		if limit > 0 {
			nb = min(nb, int(limit))
		}
		if nw != nb || nw == 0 {
			tb.Fatalf("%s found %d, its baseline %s %d", work, nw, base, nb)
		}
		tb.Logf("%s: %d documents", work, nw)
	}
	return t
}

const (
	geoWithinBox = `{"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[1, 1], [1.2, 1], [1.2, 1.2], [1, 1.2], [1, 1]]]}}}}`
	geoNear5km   = `{"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [2.35, 4.85]}, "$maxDistance": 5000}}}`
	geoNearScan  = `{"loc": {"$geoWithin": {"$centerSphere": [[2.35, 4.85], 0.000783932]}}}` // 5000 m / 6378100 m

)

// BenchmarkGeo loads the points once and times $geoWithin (a 0.2° square)
// and $near (5 km) against their collection scans.
func BenchmarkGeo(b *testing.B) {
	db := openBenchDB(b)
	start := time.Now()
	geoLoad(b, db, *benchGeoDocs)
	b.Logf("loaded and indexed %d points in %s", *benchGeoDocs, time.Since(start).Round(time.Second))
	b.Run("within", func(b *testing.B) {
		geoPair(b, db, b.N**benchIters, geoWithinBox, geoWithinBox, 0).report(b, "geoWithin")
	})
	b.Run("near", func(b *testing.B) {
		geoPair(b, db, b.N**benchIters, geoNear5km, geoNearScan, 0).report(b, "near")
	})
}

// TestGeoBenchmarksTiny runs the benchmarks' code on small data.
func TestGeoBenchmarksTiny(t *testing.T) {
	db := openBenchDB(t)
	geoLoad(t, db, 20_000)
	geoPair(t, db, 1, `{"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}}}}`, `{"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}}}}`, 0)
	geoPair(t, db, 1, `{"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [2.35, 4.85]}, "$maxDistance": 50000}}}`, `{"loc": {"$geoWithin": {"$centerSphere": [[2.35, 4.85], 0.00783932]}}}`, 0)
}
