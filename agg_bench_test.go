package cairn

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The aggregation benchmarks of issue 8, through the embedded API (the
// same command code a server runs, without the socket). Each reports its
// workload next to a baseline measured in the same iteration, as a ratio;
// `make bench-agg` runs them at full size (see BENCHMARKS.md), and
// TestAggBenchmarksTiny runs the same code on small data in `go test`.

var (
	benchGroupDocs    = flag.Int("aggbench.groupdocs", 1_000_000, "documents for BenchmarkAggGroup")
	benchLookupDocs   = flag.Int("aggbench.lookupdocs", 10_000, "input and foreign documents for BenchmarkAggLookup")
	benchVersions     = flag.Int("aggbench.versions", 1_000_000, "versions for BenchmarkAggLatestVersion")
	benchVersionsDocs = flag.Int("aggbench.versiondocs", 100_000, "documents those versions belong to")
	benchIters        = flag.Int("aggbench.iters", 3, "timed runs per benchmark iteration (the data loads once)")
)

// aggTiming is one workload and its baseline, summed over runs.
type aggTiming struct {
	work, base       time.Duration // wall
	workCPU, baseCPU time.Duration // this process's CPU
	runs             int
}

// add times one run of each, baseline first.
func (a *aggTiming) add(base, work func() (time.Duration, time.Duration)) {
	w, c := base()
	a.base, a.baseCPU = a.base+w, a.baseCPU+c
	w, c = work()
	a.work, a.workCPU = a.work+w, a.workCPU+c
}

func (a aggTiming) report(b *testing.B, unit string) {
	n := float64(a.runs)
	b.ReportMetric(a.work.Seconds()/n, "s/"+unit)
	b.ReportMetric(a.base.Seconds()/n, "s/baseline")
	b.ReportMetric(a.work.Seconds()/a.base.Seconds(), "ratio")
	if a.baseCPU > 0 {
		b.ReportMetric(a.workCPU.Seconds()/n, "cpu-s/"+unit)
		b.ReportMetric(a.baseCPU.Seconds()/n, "cpu-s/baseline")
		b.ReportMetric(a.workCPU.Seconds()/a.baseCPU.Seconds(), "cpu-ratio")
	}
}

func openBenchDB(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(tb.TempDir(), &Options{SyncInterval: 100 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// benchLoad inserts n documents made by mk, in batches.
func benchLoad(tb testing.TB, db *DB, coll string, n int, mk func(i int) bsoncore.Document) {
	tb.Helper()
	const batch = 10_000
	for start := 0; start < n; start += batch {
		arr := bson.A{}
		for i := start; i < min(n, start+batch); i++ {
			arr = append(arr, bson.Raw(mk(i)))
		}
		if _, err := db.RunCommand(context.Background(), "bench", bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: arr}}); err != nil {
			tb.Fatal(err)
		}
	}
}

func benchIndex(tb testing.TB, db *DB, coll string, key bson.D) {
	tb.Helper()
	_, err := db.RunCommand(context.Background(), "bench", bson.D{{Key: "createIndexes", Value: coll},
		{Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: key}, {Key: "name", Value: "bench"}}}}})
	if err != nil {
		tb.Fatal(err)
	}
}

// timeAgg runs pipeline (which ends in {$count: "n"}) over coll and checks
// the count, so a benchmark cannot time a wrong answer. It returns the wall
// and CPU time of the command.
func timeAgg(tb testing.TB, db *DB, coll, pipeline string, want int64) (time.Duration, time.Duration) {
	tb.Helper()
	var p bson.A
	if err := bson.UnmarshalExtJSON([]byte(pipeline), false, &p); err != nil {
		tb.Fatal(err)
	}
	start, cpu := time.Now(), processCPU()
	reply, err := db.RunCommand(context.Background(), "bench", bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: p},
		{Key: "allowDiskUse", Value: true}, {Key: "cursor", Value: bson.D{}}})
	took, tookCPU := time.Since(start), processCPU()-cpu
	if err != nil {
		tb.Fatal(err)
	}
	var got int64
	if batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK(); ok {
		if vals, _ := batch.Values(); len(vals) == 1 {
			got, _ = vals[0].Document().Lookup("n").AsInt64OK()
		}
	}
	if got != want {
		tb.Fatalf("%s over %s counted %d, want %d", pipeline, coll, got, want)
	}
	return took, tookCPU
}

// groupBench: $group by a 1,000-value key over n documents; baseline: the
// same documents counted ({$count}), i.e. the scan alone.
func groupBench(tb testing.TB, db *DB, n, iters int) aggTiming {
	benchLoad(tb, db, "g", n, func(i int) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("k", int32(i%1000)).AppendInt32("v", int32(i)).Build()
	})
	t := aggTiming{runs: iters}
	for range iters {
		t.add(func() (time.Duration, time.Duration) { return timeAgg(tb, db, "g", `[{"$count": "n"}]`, int64(n)) },
			func() (time.Duration, time.Duration) {
				return timeAgg(tb, db, "g", `[{"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$v"}}}, {"$count": "n"}]`, min(int64(n), 1000))
			})
	}
	return t
}

// lookupBench: $lookup of n documents against n foreign documents with an
// index on foreignField (work) and the same without it (baseline); each
// input document joins exactly one foreign document.
func lookupBench(tb testing.TB, db *DB, n, iters int) aggTiming {
	benchLoad(tb, db, "orders", n, func(i int) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("cust", int32((i*7919)%n)).Build()
	})
	customer := func(i int) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("cid", int32(i)).AppendString("name", fmt.Sprintf("customer %d", i)).Build()
	}
	benchLoad(tb, db, "customers", n, customer)
	benchLoad(tb, db, "customers_ix", n, customer)
	benchIndex(tb, db, "customers_ix", bson.D{{Key: "cid", Value: 1}})
	pipeline := func(from string) string {
		return `[{"$lookup": {"from": "` + from + `", "localField": "cust", "foreignField": "cid", "as": "c"}}, {"$match": {"c": {"$size": 1}}}, {"$count": "n"}]`
	}
	t := aggTiming{runs: iters}
	for range iters {
		t.add(func() (time.Duration, time.Duration) {
			return timeAgg(tb, db, "orders", pipeline("customers"), int64(n))
		},
			func() (time.Duration, time.Duration) {
				return timeAgg(tb, db, "orders", pipeline("customers_ix"), int64(n))
			})
	}
	return t
}

// latestVersionBench: the latest-version pipeline over versions of docs
// documents (version v of document d is _id v*docs+d), with an index on
// {docId: 1, v: -1}; the final $match keeps documents whose latest version
// is the newest there is, which is all of them, so the count checks that
// $first took the latest. Baseline: the versions counted (the scan alone).
func latestVersionBench(tb testing.TB, db *DB, versions, docs, iters int) aggTiming {
	benchLoad(tb, db, "versions", versions, func(i int) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("docId", int32(i%docs)).
			AppendInt32("v", int32(i/docs)).AppendString("status", "active").Build()
	})
	benchIndex(tb, db, "versions", bson.D{{Key: "docId", Value: 1}, {Key: "v", Value: -1}})
	latest := versions/docs - 1
	pipeline := fmt.Sprintf(`[{"$sort": {"docId": 1, "v": -1}}, {"$group": {"_id": "$docId", "doc": {"$first": "$$ROOT"}}},
		{"$match": {"doc.v": %d, "doc.status": "active"}}, {"$count": "n"}]`, latest)
	t := aggTiming{runs: iters}
	for range iters {
		t.add(func() (time.Duration, time.Duration) {
			return timeAgg(tb, db, "versions", `[{"$count": "n"}]`, int64(versions))
		},
			func() (time.Duration, time.Duration) { return timeAgg(tb, db, "versions", pipeline, int64(docs)) })
	}
	return t
}

func BenchmarkAggGroup(b *testing.B) {
	t := groupBench(b, openBenchDB(b), *benchGroupDocs, b.N**benchIters)
	t.report(b, "group")
}

func BenchmarkAggLookup(b *testing.B) {
	t := lookupBench(b, openBenchDB(b), *benchLookupDocs, b.N**benchIters)
	t.report(b, "lookup")
}

func BenchmarkAggLatestVersion(b *testing.B) {
	t := latestVersionBench(b, openBenchDB(b), *benchVersions, *benchVersionsDocs, b.N**benchIters)
	t.report(b, "latest")
}

// TestAggBenchmarksTiny runs the benchmarks' code on small data, checking
// their answers, so they cannot rot between full runs.
func TestAggBenchmarksTiny(t *testing.T) {
	db := openBenchDB(t)
	groupBench(t, db, 3000, 1)
	lookupBench(t, db, 300, 1)
	latestVersionBench(t, db, 2000, 200, 1)
}
