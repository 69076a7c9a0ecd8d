package commands

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
)

var diffCases = flag.Int("diff.cases", 3000, "random filters in TestPlannerMatchesCollectionScan")

// TestPlannerMatchesCollectionScan is the planner's differential test: for
// random documents, indexes and filters, every find returns the same
// documents with the planner's choice as with a forced collection scan.
func TestPlannerMatchesCollectionScan(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("seed %d", seed)
	log := slog.New(slog.DiscardHandler)
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(eng, Config{}, log)
	defer func() { env.Close(); _ = eng.Close() }()
	sess := &Session{Env: env}
	run := func(cmd bson.D) bsoncore.Document {
		body, err := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: "diff"}))
		if err != nil {
			t.Fatal(err)
		}
		req, err := NewRequest(body, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return Run(context.Background(), sess, req, nil)
	}
	indexes := bson.A{}
	for _, k := range []bson.D{{{Key: "a", Value: 1}}, {{Key: "b", Value: -1}}, {{Key: "c.d", Value: 1}}, {{Key: "a", Value: 1}, {Key: "b", Value: -1}}, {{Key: "e", Value: -1}, {Key: "a", Value: 1}}} {
		name := fmt.Sprint(k)
		indexes = append(indexes, bson.D{{Key: "key", Value: k}, {Key: "name", Value: name}})
	}
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: indexes}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	docs := bson.A{}
	for i := range 300 {
		d := bson.D{{Key: "_id", Value: i}}
		for _, f := range []string{"a", "b", "e"} {
			if v, ok := randomValue(rng); ok {
				d = append(d, bson.E{Key: f, Value: v})
			}
		}
		if rng.IntN(2) == 0 {
			if rng.IntN(3) == 0 {
				sub := bson.A{}
				for range rng.IntN(3) {
					v, _ := randomValue(rng)
					sub = append(sub, bson.D{{Key: "d", Value: v}})
				}
				d = append(d, bson.E{Key: "c", Value: sub})
			} else {
				v, _ := randomValue(rng)
				d = append(d, bson.E{Key: "c", Value: bson.D{{Key: "d", Value: v}}})
			}
		}
		docs = append(docs, d)
	}
	// Unordered: the compound {a, b} index refuses documents where both are
	// arrays (171 CannotIndexParallelArrays, as MongoDB); the rest go in.
	r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "ordered", Value: false}})
	if n := r.Lookup("n").Int32(); n < 200 {
		t.Fatalf("insert: only %d documents went in: %s", n, r)
	}
	if werrs, ok := r.Lookup("writeErrors").ArrayOK(); ok {
		vals, _ := werrs.Values()
		for _, v := range vals {
			if code := v.Document().Lookup("code").Int32(); code != 171 {
				t.Fatalf("unexpected insert error %s", v)
			}
		}
	}
	ids := func(filter bson.D, hint any) ([]string, int32) {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 1000}}
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		r := run(cmd)
		if code, ok := r.Lookup("code").Int32OK(); ok {
			return nil, code
		}
		vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = v.Document().Lookup("_id").String()
		}
		sort.Strings(out)
		return out, 0
	}
	fields := []string{"a", "b", "c.d", "e"}
	used, indexed := 0, 0
	ns := engine.Namespace{DB: "diff", Coll: "c"}
	for i := range *diffCases {
		filter := randomFilter(rng, fields)
		raw, _ := bson.Marshal(filter)
		if plan, err := plannedIndexes(eng, ns, raw); err == nil && plan != "" {
			indexed++
		}
		planned, code1 := ids(filter, nil)
		scanned, code2 := ids(filter, bson.D{{Key: "$natural", Value: 1}})
		if code1 != code2 || fmt.Sprint(planned) != fmt.Sprint(scanned) {
			t.Fatalf("case %d (seed %d): filter %v\n planner: %v (code %d)\n   scan: %v (code %d)", i, seed, filter, planned, code1, scanned, code2)
		}
		if len(scanned) > 0 {
			used++
		}
	}
	if indexed < *diffCases/4 {
		t.Fatalf("only %d of %d filters were planned on an index (seed %d); the test would not see planner bugs", indexed, *diffCases, seed)
	}
	t.Logf("%d filters, %d planned on an index, %d matched documents", *diffCases, indexed, used)
	if used < *diffCases/10 {
		t.Fatalf("only %d of %d filters matched anything (seed %d); the generator is too narrow to test the planner", used, *diffCases, seed)
	}
}

// randomValue draws from a small, type-mixed domain so filters collide with
// documents; ok is false for "missing".
func randomValue(rng *rand.Rand) (any, bool) {
	switch rng.IntN(12) {
	case 0:
		return nil, false
	case 1:
		return nil, true // null
	case 2:
		return int32(rng.IntN(5)), true
	case 3:
		return float64(rng.IntN(5)) + 0.5*float64(rng.IntN(2)), true
	case 4:
		return int64(rng.IntN(5)), true
	case 5:
		return []string{"x", "y", "z"}[rng.IntN(3)], true
	case 6:
		a := bson.A{}
		for range rng.IntN(4) {
			a = append(a, rng.IntN(5))
		}
		return a, true
	case 7:
		return bson.A{bson.A{rng.IntN(3)}, rng.IntN(5)}, true
	case 8:
		return bson.D{{Key: "k", Value: rng.IntN(2)}}, true
	case 9:
		return rng.IntN(2) == 0, true
	case 10:
		return bson.Undefined{}, true
	}
	return bson.A{nil, rng.IntN(5)}, true
}

func randomFilter(rng *rand.Rand, fields []string) bson.D {
	var f bson.D
	for range 1 + rng.IntN(2) {
		field := fields[rng.IntN(len(fields))]
		v, ok := randomValue(rng)
		if !ok {
			v = nil
		}
		switch rng.IntN(9) {
		case 0, 1:
			f = append(f, bson.E{Key: field, Value: v})
		case 2:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$eq", Value: v}}})
		case 3:
			w, _ := randomValue(rng)
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$in", Value: bson.A{v, w}}}})
		case 4:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$gt", Value: rng.IntN(5)}}})
		case 5:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$gte", Value: rng.IntN(5)}, {Key: "$lt", Value: rng.IntN(5)}}})
		case 6:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$lte", Value: []string{"x", "y"}[rng.IntN(2)]}}})
		case 7:
			f = append(f, bson.E{Key: "$and", Value: bson.A{bson.D{{Key: field, Value: v}}, bson.D{{Key: field, Value: bson.D{{Key: "$ne", Value: rng.IntN(5)}}}}}})
		case 8:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$exists", Value: rng.IntN(2) == 0}, {Key: "$gte", Value: 1.5}}})
		}
	}
	return f
}
