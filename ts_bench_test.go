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

// The benchmarks of issue 24's second half, through the embedded API, each
// query timed against a collection scan with the same answer in the same
// iteration (findPair): a 2d index ($geoWithin $box, $near with
// $maxDistance; its baseline the $center of the same radius), and a time
// series collection (a meta and time range, pushed down to the buckets'
// index; its baseline a plain collection of the same measurements,
// scanned). `go test -run XXX -bench 'BenchmarkGeo2d|BenchmarkTimeseries'
// -benchtime 1x .` runs them at full size (BENCHMARKS.md);
// TestTSBenchmarksTiny runs the same code on small data in `go test`.

var (
	benchGeo2dDocs = flag.Int("geo2dbench.docs", 1_000_000, "points for BenchmarkGeo2d")
	benchTSDocs    = flag.Int("tsbench.docs", 1_000_000, "measurements for BenchmarkTimeseries")
)

// geo2dLoad inserts n random legacy pairs over 20° x 20° and a 2d index.
func geo2dLoad(tb testing.TB, db *DB, n int) {
	rng := rand.New(rand.NewPCG(24, 2))
	benchLoad(tb, db, "geo2d", n, func(i int) bsoncore.Document {
		pt := bsoncore.NewArrayBuilder().AppendDouble(rng.Float64()*20 - 10).AppendDouble(rng.Float64()*20 - 10).Build()
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendArray("loc", pt).AppendInt32("k", int32(i%10)).Build()
	})
	benchIndex(tb, db, "geo2d", bson.D{{Key: "loc", Value: "2d"}})
}

const (
	geo2dBox     = `{"loc": {"$geoWithin": {"$box": [[1, 1], [1.2, 1.2]]}}}`
	geo2dNear    = `{"loc": {"$near": [2.35, 4.85], "$maxDistance": 0.045}}`
	geo2dNearRef = `{"loc": {"$geoWithin": {"$center": [[2.35, 4.85], 0.045]}}}`
)

// BenchmarkGeo2d loads the points once and times $geoWithin $box and
// $near against their collection scans.
func BenchmarkGeo2d(b *testing.B) {
	db := openBenchDB(b)
	start := time.Now()
	geo2dLoad(b, db, *benchGeo2dDocs)
	b.Logf("loaded and indexed %d points in %s", *benchGeo2dDocs, time.Since(start).Round(time.Second))
	b.Run("within", func(b *testing.B) {
		findPair(b, db, b.N**benchIters, "geo2d", geo2dBox, "geo2d", geo2dBox, 0).report(b, "geoWithin")
	})
	b.Run("near", func(b *testing.B) {
		findPair(b, db, b.N**benchIters, "geo2d", geo2dNear, "geo2d", geo2dNearRef, 0).report(b, "near")
	})
}

// tsLoad inserts n measurements, one a second from 2024-01-01, from 1,000
// sensors in turn, into the time series collection tsb (meta m, time t,
// an index on m.sensor and t) and the same documents into the plain
// collection tsplain.
func tsLoad(tb testing.TB, db *DB, n int) {
	if _, err := db.RunCommand(context.Background(), "bench", bson.D{{Key: "create", Value: "tsb"},
		{Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "m"}}}}); err != nil {
		tb.Fatal(err)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	mk := func(i int) bsoncore.Document {
		m := bsoncore.NewDocumentBuilder().AppendInt32("sensor", int32(i%1000)).Build()
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendDateTime("t", base+int64(i)*1000).
			AppendDocument("m", m).AppendDouble("v", float64(i%97)).Build()
	}
	benchLoad(tb, db, "tsb", n, mk)
	benchLoad(tb, db, "tsplain", n, mk)
	// The default index is on the whole meta field; queries by sensor
	// want one on m.sensor and t, as a MongoDB user would make.
	benchIndex(tb, db, "tsb", bson.D{{Key: "m.sensor", Value: 1}, {Key: "t", Value: 1}})
}

// tsRange is one sensor over one hour: 3-4 measurements of n.
const tsRange = `{"m.sensor": 7, "t": {"$gte": {"$date": "2024-01-01T02:00:00Z"}, "$lt": {"$date": "2024-01-01T03:00:00Z"}}}`

// BenchmarkTimeseries loads the measurements once and times a meta and
// time range on the time series collection against the plain
// collection's scan.
func BenchmarkTimeseries(b *testing.B) {
	db := openBenchDB(b)
	start := time.Now()
	tsLoad(b, db, *benchTSDocs)
	b.Logf("loaded %d measurements twice in %s", *benchTSDocs, time.Since(start).Round(time.Second))
	b.Run("range", func(b *testing.B) {
		findPair(b, db, b.N**benchIters, "tsb", tsRange, "tsplain", tsRange, 0).report(b, "metaTime")
	})
}

// TestTSBenchmarksTiny runs the benchmarks' code on small data.
func TestTSBenchmarksTiny(t *testing.T) {
	db := openBenchDB(t)
	geo2dLoad(t, db, 20_000)
	findPair(t, db, 1, "geo2d", `{"loc": {"$geoWithin": {"$box": [[1, 1], [2, 2]]}}}`, "geo2d", `{"loc": {"$geoWithin": {"$box": [[1, 1], [2, 2]]}}}`, 0)
	findPair(t, db, 1, "geo2d", `{"loc": {"$near": [2.35, 4.85], "$maxDistance": 0.5}}`, "geo2d", `{"loc": {"$geoWithin": {"$center": [[2.35, 4.85], 0.5]}}}`, 0)
	tsLoad(t, db, 20_000)
	findPair(t, db, 1, "tsb", tsRange, "tsplain", tsRange, 0)
}
