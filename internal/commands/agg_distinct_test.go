package commands

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
)

// TestDistinctScanMatchesPipeline is the differential test of the
// DISTINCT_SCAN push-down: on random versions (docId missing, null, numbers
// of several types, strings; arrays in other fields) and random pipelines
// "$match?, $sort on docId then v, $group on docId of $first, $match?",
// the answer equals that of the same pipeline behind a $match on $$ROOT,
// which nothing pushes down (so $sort and $group run in the pipeline over
// a collection scan). Collection "m" also has a docId array, so its index
// is multikey and must never be scanned distinct; on "c" the pipelines
// without a leading $match must be.
func TestDistinctScanMatchesPipeline(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	t.Logf("seed %d", seed)
	_, exec := commandRunner(t, "distinct")
	run := exec
	ok := func(r bsoncore.Document, what string) {
		t.Helper()
		if f, _ := r.Lookup("ok").AsFloat64OK(); f != 1 {
			t.Fatalf("%s: %s", what, r)
		}
	}
	docID := func() (any, bool) {
		switch n := rng.IntN(10); n {
		case 0:
			return nil, false // missing: grouped under null
		case 1:
			return nil, true
		case 2:
			return fmt.Sprintf("s%d", rng.IntN(4)), true
		case 3:
			return float64(rng.IntN(6)), true // 1.0 groups with 1
		case 4:
			return int64(rng.IntN(6)), true
		default:
			return int32(rng.IntN(12)), true
		}
	}
	for _, coll := range []string{"c", "m"} {
		ok(run(bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "docId", Value: 1}, {Key: "v", Value: -1}}}, {Key: "name", Value: "docId_v"}},
		}}}), "createIndexes")
		vs := rng.Perm(400) // versions unique: the sort is a total order
		docs := bson.A{}
		for i, v := range vs {
			d := bson.D{{Key: "_id", Value: i}}
			if id, present := docID(); present {
				d = append(d, bson.E{Key: "docId", Value: id})
			}
			d = append(d, bson.E{Key: "v", Value: v})
			if rng.IntN(2) == 0 {
				d = append(d, bson.E{Key: "tags", Value: bson.A{rng.IntN(3), rng.IntN(3)}})
			} else {
				d = append(d, bson.E{Key: "tags", Value: rng.IntN(3)})
			}
			docs = append(docs, d)
		}
		if coll == "m" {
			docs = append(docs, bson.D{{Key: "_id", Value: -1}, {Key: "docId", Value: bson.A{1, 2}}, {Key: "v", Value: 1000}})
		}
		ok(run(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}}), "insert")
	}
	leading := []bson.D{
		nil,
		{{Key: "v", Value: bson.D{{Key: "$lt", Value: 200}}}},
		{{Key: "docId", Value: bson.D{{Key: "$gte", Value: 3}}}},
		{{Key: "docId", Value: bson.D{{Key: "$in", Value: bson.A{nil, 2, "s1"}}}}},
		{{Key: "docId", Value: bson.D{{Key: "$lte", Value: 5}}}, {Key: "v", Value: bson.D{{Key: "$gte", Value: 100}}}},
		{{Key: "tags", Value: 1}}, // not in the index: no distinct scan
	}
	distinctSeen := 0
	for i := range 200 {
		coll := []string{"c", "m"}[rng.IntN(2)]
		dir := []int{1, -1}[rng.IntN(2)]
		var pipeline bson.A
		m := leading[rng.IntN(len(leading))]
		if m != nil {
			pipeline = append(pipeline, bson.D{{Key: "$match", Value: m}})
		}
		pipeline = append(pipeline,
			bson.D{{Key: "$sort", Value: bson.D{{Key: "docId", Value: dir}, {Key: "v", Value: -dir}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$docId"}, {Key: "doc", Value: bson.D{{Key: "$first", Value: "$$ROOT"}}}, {Key: "tags", Value: bson.D{{Key: "$first", Value: "$tags"}}}}}})
		if rng.IntN(2) == 0 {
			pipeline = append(pipeline, bson.D{{Key: "$match", Value: bson.D{{Key: "doc.v", Value: bson.D{{Key: "$gte", Value: 150}}}}}})
		}
		reference := append(bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$$ROOT", "$$ROOT"}}}}}}}}, pipeline...)
		got := aggregateAll(t, run, coll, pipeline)
		want := aggregateAll(t, run, coll, reference)
		if !sameGroups(got, want) {
			t.Fatalf("case %d (seed %d) on %s: %v\ngot  %v\nwant %v", i, seed, coll, pipeline, got, want)
		}
		ex := run(bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}}})
		ok(ex, "explain")
		distinct := strings.Contains(bson.Raw(ex).String(), `"DISTINCT_SCAN"`)
		switch {
		case distinct && (coll == "m" || m != nil && m[0].Key == "tags"):
			t.Fatalf("case %d (seed %d): distinct scan on %s for %v", i, seed, coll, pipeline)
		case !distinct && coll == "c" && m == nil:
			t.Fatalf("case %d (seed %d): no distinct scan for %v: %s", i, seed, pipeline, bson.Raw(ex))
		}
		if distinct {
			distinctSeen++
		}
	}
	if distinctSeen == 0 {
		t.Fatal("no case planned a distinct scan")
	}
}

// aggregateAll runs a pipeline and returns every result (one batch).
func aggregateAll(t *testing.T, run func(bson.D) bsoncore.Document, coll string, pipeline bson.A) []bsoncore.Document {
	t.Helper()
	r := run(bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 100000}}}})
	batch, err := r.LookupErr("cursor", "firstBatch")
	if err != nil {
		t.Fatalf("aggregate %v: %s", pipeline, r)
	}
	vals, _ := batch.Array().Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

// sameGroups compares two $group answers as multisets ($group's output
// order is unspecified).
func sameGroups(a, b []bsoncore.Document) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, bsonx.CompareDocuments)
	slices.SortFunc(b, bsonx.CompareDocuments)
	for i := range a {
		if bsonx.CompareDocuments(a[i], b[i]) != 0 {
			return false
		}
	}
	return true
}
