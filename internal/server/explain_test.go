package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func explainFind(t *testing.T, db *mongo.Database, find bson.D) bson.Raw {
	t.Helper()
	return explainCmd(t, db, find, "executionStats")
}

func explainCmd(t *testing.T, db *mongo.Database, cmd bson.D, verbosity string) bson.Raw {
	t.Helper()
	var out bson.Raw
	if err := db.RunCommand(context.Background(), bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: verbosity}}).Decode(&out); err != nil {
		t.Fatalf("explain %v: %v", cmd, err)
	}
	return out
}

// stageNames lists a plan's stages from the root down (the first input of
// each stage).
func stageNames(plan bson.Raw) []string {
	var out []string
	for plan != nil {
		out = append(out, plan.Lookup("stage").StringValue())
		next, ok := plan.Lookup("inputStage").DocumentOK()
		if !ok {
			break
		}
		plan = next
	}
	return out
}

// findStage returns the first stage named name in a plan (depth first).
func findStage(plan bson.Raw, name string) bson.Raw {
	if plan.Lookup("stage").StringValue() == name {
		return plan
	}
	if in, ok := plan.Lookup("inputStage").DocumentOK(); ok {
		if s := findStage(in, name); s != nil {
			return s
		}
	}
	if arr, ok := plan.Lookup("inputStages").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if s := findStage(v.Document(), name); s != nil {
				return s
			}
		}
	}
	return nil
}

func asInt(v bson.RawValue) int64 {
	switch v.Type {
	case bson.TypeInt32:
		return int64(v.Int32())
	case bson.TypeInt64:
		return v.Int64()
	case bson.TypeDouble:
		return int64(v.Double())
	}
	return -1
}

func execStats(ex bson.Raw) (nReturned, keys, docs int64) {
	return asInt(ex.Lookup("executionStats", "nReturned")), asInt(ex.Lookup("executionStats", "totalKeysExamined")), asInt(ex.Lookup("executionStats", "totalDocsExamined"))
}

func createIndex(t *testing.T, db *mongo.Database, coll string, spec bson.D) {
	t.Helper()
	if err := db.RunCommand(context.Background(), bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{spec}}}).Err(); err != nil {
		t.Fatalf("createIndexes %v: %v", spec, err)
	}
}

func sameStages(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func TestExplainFind(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("ex")
	coll := db.Collection("c")
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "c", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})

	// A range on an indexed field examines exactly the matching keys.
	ex := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 8}}}}}})
	plan := ex.Lookup("queryPlanner", "winningPlan").Document()
	if !sameStages(stageNames(plan), "FETCH", "IXSCAN") || plan.Lookup("inputStage", "indexName").StringValue() != "a_1" {
		t.Fatalf("winningPlan %s, want FETCH over IXSCAN a_1", plan)
	}
	if n, k, d := execStats(ex); n != 20 || k != 20 || d != 20 {
		t.Fatalf("a >= 8: nReturned %d, keys %d, docs %d; want 20 each", n, k, d)
	}
	if b := plan.Lookup("inputStage", "indexBounds", "a"); b.String() != `["[8, inf.0]"]` {
		t.Errorf("indexBounds.a = %s", b)
	}
	// The bounds are exact: FETCH has no filter left to apply, as in MongoDB.
	if f, err := plan.LookupErr("filter"); err == nil {
		t.Errorf("FETCH filter %s, want none", f)
	}
	ixscan := findStage(ex.Lookup("executionStats", "executionStages").Document(), "IXSCAN")
	if asInt(ixscan.Lookup("keysExamined")) != 20 || asInt(ixscan.Lookup("nReturned")) != 20 || ixscan.Lookup("isEOF").Int32() != 1 {
		t.Errorf("IXSCAN stats: %s", ixscan)
	}
	for _, f := range []string{"queryHash", "planCacheKey"} {
		if h, ok := ex.Lookup("queryPlanner", f).StringValueOK(); !ok || len(h) != 8 {
			t.Errorf("queryPlanner.%s = %s, want 8 hex digits", f, ex.Lookup("queryPlanner", f))
		}
	}
	if pq := ex.Lookup("queryPlanner", "parsedQuery").String(); pq != `{"a": {"$gte": {"$numberInt":"8"}}}` {
		t.Errorf("parsedQuery = %s", pq)
	}

	// A two-sided range on a non-multikey field intersects its bounds.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 2}, {Key: "$lte", Value: 4}}}}}})
	if b := ex.Lookup("queryPlanner", "winningPlan", "inputStage", "indexBounds", "a"); b.String() != `["(2, 4]"]` {
		t.Errorf("indexBounds.a = %s", b)
	}
	if n, k, _ := execStats(ex); n != 20 || k != 20 {
		t.Errorf("2 < a <= 4: nReturned %d, keys %d; want 20, 20", n, k)
	}
	// $in: one point per value, each read exactly.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{7, 1}}}}}}})
	if b := ex.Lookup("queryPlanner", "winningPlan", "inputStage", "indexBounds", "a"); b.String() != `["[1, 1]","[7, 7]"]` {
		t.Errorf("indexBounds.a = %s", b)
	}
	if n, k, _ := execStats(ex); n != 20 || k != 20 {
		t.Errorf("a in [7, 1]: nReturned %d, keys %d; want 20, 20", n, k)
	}

	// FETCH applies what the bounds do not guarantee.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}, {Key: "b", Value: bson.D{{Key: "$gt", Value: 50}}}}}})
	if f := ex.Lookup("queryPlanner", "winningPlan", "filter").String(); f != `{"b": {"$gt": {"$numberInt":"50"}}}` {
		t.Errorf("FETCH filter %s, want the b condition only", f)
	}
	if n, k, d := execStats(ex); n != 5 || k != 10 || d != 10 {
		t.Errorf("a = 3, b > 50: nReturned %d, keys %d, docs %d; want 5, 10, 10", n, k, d)
	}

	// No usable index: a collection scan examines every document.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: 7}}}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "COLLSCAN" {
		t.Fatalf("b = 7 planned as %s, want COLLSCAN", st)
	}
	if n, _, d := execStats(ex); n != 1 || d != 100 {
		t.Fatalf("b = 7: nReturned %d, docs %d; want 1 and 100", n, d)
	}

	// _id equality is IDHACK.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "IDHACK" {
		t.Fatalf("_id = 5 planned as %s, want IDHACK", st)
	}
	if n, k, d := execStats(ex); n != 1 || k != 1 || d != 1 {
		t.Fatalf("_id = 5: nReturned %d, keys %d, docs %d; want 1 each", n, k, d)
	}

	// A blocking sort with a limit is a top-k SORT (limitAmount).
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}, {Key: "limit", Value: 2}})
	plan = ex.Lookup("queryPlanner", "winningPlan").Document()
	if !sameStages(stageNames(plan), "SORT", "FETCH", "IXSCAN") || asInt(plan.Lookup("limitAmount")) != 2 {
		t.Fatalf("sorted, limited find: %s", plan)
	}
	if n, k, _ := execStats(ex); n != 2 || k != 10 {
		t.Fatalf("a = 3 sorted, limit 2: nReturned %d, keys %d; want 2 and 10", n, k)
	}
	// Skip and limit without a sort: LIMIT over SKIP.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: bson.D{{Key: "$gte", Value: 0}}}}}, {Key: "skip", Value: 3}, {Key: "limit", Value: 4}})
	if got := stageNames(ex.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "LIMIT", "SKIP", "COLLSCAN") {
		t.Errorf("skip/limit plan %v", got)
	}
	if n, _, d := execStats(ex); n != 4 || d != 7 {
		t.Errorf("skip 3 limit 4: nReturned %d, docs %d; want 4, 7", n, d)
	}
}

// TestExplainIndexOrder checks sorts served by index order: an equality
// prefix then the sort field, reverse scans, descending key parts, and the
// _id index.
func TestExplainIndexOrder(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("ex")
	coll := db.Collection("o")
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: (i * 7) % 200}, {Key: "c", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "o", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "a_1_b_1"}})
	createIndex(t, db, "o", bson.D{{Key: "key", Value: bson.D{{Key: "c", Value: -1}}}, {Key: "name", Value: "c_-1"}})

	sortedBy := func(filter, sort bson.D, limit int64) []bson.Raw {
		opts := bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: filter}, {Key: "sort", Value: sort}}
		if limit > 0 {
			opts = append(opts, bson.E{Key: "limit", Value: limit})
		}
		var out struct {
			Cursor struct {
				FirstBatch []bson.Raw `bson:"firstBatch"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(ctx, opts).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Cursor.FirstBatch
	}

	// {a: 3} sorted by b: the compound index gives the order.
	find := bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: 1}}}}
	ex := explainFind(t, db, find)
	plan := ex.Lookup("queryPlanner", "winningPlan").Document()
	if got := stageNames(plan); !sameStages(got, "FETCH", "IXSCAN") {
		t.Fatalf("{a: 3} sort {b: 1}: %v, want FETCH over IXSCAN and no SORT", got)
	}
	if b := plan.Lookup("inputStage", "indexBounds").String(); b != `{"a": ["[3, 3]"],"b": ["[MinKey, MaxKey]"]}` {
		t.Errorf("bounds %s", b)
	}
	if n, k, _ := execStats(ex); n != 20 || k != 20 {
		t.Errorf("{a: 3}: nReturned %d, keys %d; want 20, 20", n, k)
	}
	res := sortedBy(bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "b", Value: 1}}, 0)
	for i := 1; i < len(res); i++ {
		if res[i-1].Lookup("b").Int32() > res[i].Lookup("b").Int32() {
			t.Fatalf("not sorted by b at %d: %v", i, res)
		}
	}

	// Reversed: a backward scan, bounds read from the top.
	find[2] = bson.E{Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}
	ex = explainFind(t, db, find)
	ixscan := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN")
	if findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "SORT") != nil || ixscan.Lookup("direction").StringValue() != "backward" {
		t.Fatalf("{a: 3} sort {b: -1}: %s", ex.Lookup("queryPlanner", "winningPlan"))
	}
	if b := ixscan.Lookup("indexBounds").String(); b != `{"a": ["[3, 3]"],"b": ["[MaxKey, MinKey]"]}` {
		t.Errorf("backward bounds %s", b)
	}

	// Equality then a range on the next field: compound bounds, exact keys.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}, {Key: "b", Value: bson.D{{Key: "$gte", Value: 100}}}}}})
	ixscan = findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN")
	if b := ixscan.Lookup("indexBounds").String(); b != `{"a": ["[3, 3]"],"b": ["[100, inf.0]"]}` {
		t.Errorf("compound bounds %s", b)
	}
	if n, k, _ := execStats(ex); n != 10 || k != 10 {
		t.Errorf("{a: 3, b >= 100}: nReturned %d, keys %d; want 10, 10", n, k)
	}

	// A descending key part lists its bounds from high to low.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{{Key: "c", Value: bson.D{{Key: "$gt", Value: 150}}}}}})
	ixscan = findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN")
	if b := ixscan.Lookup("indexBounds", "c").String(); b != `["[inf.0, 150)"]` {
		t.Errorf("descending bounds %s", b)
	}
	if n, k, _ := execStats(ex); n != 49 || k != 49 {
		t.Errorf("c > 150: nReturned %d, keys %d; want 49, 49", n, k)
	}

	// A projection of index fields only is covered: no document read.
	cov := bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}, {Key: "b", Value: bson.D{{Key: "$lt", Value: 100}}}}}, {Key: "projection", Value: bson.D{{Key: "b", Value: 1}, {Key: "_id", Value: 0}}}}
	ex = explainFind(t, db, cov)
	if got := stageNames(ex.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "PROJECTION_COVERED", "IXSCAN") {
		t.Fatalf("covered find planned as %v", got)
	}
	// Known divergence: MongoDB reads no document here (docs 0). Cairn's
	// keys keep a number's value but not its type, so a numeric key part
	// cannot stand for the stored field and each document is read
	// (planner.keyValueExact); the plan is still the covered one.
	if n, k, d := execStats(ex); n != 10 || k != 10 || d != 10 {
		t.Errorf("covered find: nReturned %d, keys %d, docs %d; want 10, 10, 10", n, k, d)
	}
	var covOut struct {
		Cursor struct {
			FirstBatch []bson.Raw `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(ctx, cov).Decode(&covOut); err != nil {
		t.Fatal(err)
	}
	for _, d := range covOut.Cursor.FirstBatch {
		elems, _ := d.Elements()
		if b := asInt(d.Lookup("b")); len(elems) != 1 || b < 0 || b >= 100 {
			t.Errorf("covered result %s", d)
		}
	}
	if len(covOut.Cursor.FirstBatch) != 10 {
		t.Errorf("covered find returned %d documents, want 10", len(covOut.Cursor.FirstBatch))
	}
	// Including _id, which the index lacks, needs the documents.
	cov[2] = bson.E{Key: "projection", Value: bson.D{{Key: "b", Value: 1}}}
	ex = explainFind(t, db, cov)
	if got := stageNames(ex.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "PROJECTION_SIMPLE", "FETCH", "IXSCAN") {
		t.Errorf("projection with _id planned as %v", got)
	}

	// _id ranges and sorts use the _id index.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 50}}}}}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 5}})
	plan = ex.Lookup("queryPlanner", "winningPlan").Document()
	if got := stageNames(plan); !sameStages(got, "LIMIT", "FETCH", "IXSCAN") || findStage(plan, "IXSCAN").Lookup("indexName").StringValue() != "_id_" {
		t.Fatalf("_id range sorted by _id: %v %s", got, plan)
	}
	if n, k, _ := execStats(ex); n != 5 || k != 5 {
		t.Errorf("_id >= 50 limit 5: nReturned %d, keys %d; want 5, 5", n, k)
	}
	res = sortedBy(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 50}}}}, bson.D{{Key: "_id", Value: -1}}, 3)
	if len(res) != 3 || res[0].Lookup("_id").Int32() != 199 || res[2].Lookup("_id").Int32() != 197 {
		t.Errorf("_id >= 50 sorted descending, limit 3: %v", res)
	}
}

// TestExplainCommands checks the shapes of count, distinct, update, delete,
// findAndModify and aggregate explains, and that explaining a write does
// not write.
func TestExplainCommands(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("ex")
	coll := db.Collection("w")
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 5}, {Key: "tags", Value: bson.A{i % 3, 10 + i%4}}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "w", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	createIndex(t, db, "w", bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags_1"}})

	ex := explainCmd(t, db, bson.D{{Key: "count", Value: "w"}, {Key: "query", Value: bson.D{{Key: "a", Value: 2}}}}, "executionStats")
	stages := ex.Lookup("executionStats", "executionStages").Document()
	// Exact bounds: the keys are counted, no document is read.
	if got := stageNames(stages); !sameStages(got, "COUNT", "COUNT_SCAN") || asInt(stages.Lookup("nCounted")) != 10 {
		t.Errorf("count explain: %v %s", got, stages)
	}
	if _, k, d := execStats(ex); k != 10 || d != 0 {
		t.Errorf("count explain: keys %d, docs %d; want 10, 0", k, d)
	}
	// A condition the bounds do not decide needs the documents.
	ex = explainCmd(t, db, bson.D{{Key: "count", Value: "w"}, {Key: "query", Value: bson.D{{Key: "a", Value: 2}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: 20}}}}}}, "executionStats")
	stages = ex.Lookup("executionStats", "executionStages").Document()
	if got := stageNames(stages); !sameStages(got, "COUNT", "FETCH", "IXSCAN") || asInt(stages.Lookup("nCounted")) != 4 {
		t.Errorf("count explain: %v %s", got, stages)
	}

	ex = explainCmd(t, db, bson.D{{Key: "distinct", Value: "w"}, {Key: "key", Value: "a"}, {Key: "query", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: 2}}}}}}, "executionStats")
	if n, k, _ := execStats(ex); n != 20 || k != 20 {
		t.Errorf("distinct explain: nReturned %d, keys %d; want 20, 20", n, k)
	}

	ex = explainCmd(t, db, bson.D{{Key: "update", Value: "w"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}, {Key: "multi", Value: true}}}}}, "executionStats")
	stages = ex.Lookup("executionStats", "executionStages").Document()
	if got := stageNames(stages); !sameStages(got, "UPDATE", "FETCH", "IXSCAN") || asInt(stages.Lookup("nMatched")) != 10 || asInt(stages.Lookup("nWouldModify")) != 10 {
		t.Errorf("update explain: %v %s", got, stages)
	}
	if ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue() != "UPDATE" {
		t.Errorf("update winningPlan: %s", ex.Lookup("queryPlanner", "winningPlan"))
	}

	ex = explainCmd(t, db, bson.D{{Key: "delete", Value: "w"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "tags", Value: 11}}}, {Key: "limit", Value: 0}}}}}, "executionStats")
	stages = ex.Lookup("executionStats", "executionStages").Document()
	ixscan := findStage(stages, "IXSCAN")
	if got := stageNames(stages); !sameStages(got, "DELETE", "FETCH", "IXSCAN") || asInt(stages.Lookup("nWouldDelete")) != 13 {
		t.Errorf("delete explain: %v %s", got, stages)
	}
	// A multikey index says so, and never covers.
	if ixscan == nil || !ixscan.Lookup("isMultiKey").Boolean() {
		t.Errorf("tags_1 should be multikey: %s", ixscan)
	}
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "w"}, {Key: "filter", Value: bson.D{{Key: "tags", Value: 11}}}, {Key: "projection", Value: bson.D{{Key: "tags", Value: 1}, {Key: "_id", Value: 0}}}})
	if got := stageNames(ex.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "PROJECTION_SIMPLE", "FETCH", "IXSCAN") {
		t.Errorf("projection of a multikey field planned as %v", got)
	}

	ex = explainCmd(t, db, bson.D{{Key: "findAndModify", Value: "w"}, {Key: "query", Value: bson.D{{Key: "a", Value: 4}}}, {Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "remove", Value: true}}, "executionStats")
	stages = ex.Lookup("executionStats", "executionStages").Document()
	if stages.Lookup("stage").StringValue() != "DELETE" || asInt(stages.Lookup("nWouldDelete")) != 1 {
		t.Errorf("findAndModify explain: %s", stages)
	}

	// Nothing was written.
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: 1}}); n != 0 {
		t.Errorf("explain of update wrote %d documents", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 50 {
		t.Errorf("explain of delete deleted: %d documents left", n)
	}

	// aggregate: the pushed-down $match and $sort as a $cursor stage.
	pipeline := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 2}}}}, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}
	ex = explainCmd(t, db, bson.D{{Key: "aggregate", Value: "w"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}, "executionStats")
	st, ok := ex.Lookup("stages").ArrayOK()
	if !ok {
		t.Fatalf("aggregate explain has no stages: %s", ex)
	}
	vals, _ := st.Values()
	cursor := vals[0].Document().Lookup("$cursor").Document()
	if got := stageNames(cursor.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "SORT", "FETCH", "IXSCAN") || len(vals) != 2 {
		t.Errorf("aggregate explain: %v %s", got, ex)
	}
	if asInt(cursor.Lookup("executionStats", "nReturned")) != 10 {
		t.Errorf("$cursor nReturned: %s", cursor.Lookup("executionStats"))
	}
	// explain: true on the aggregate command itself.
	var out bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "w"}, {Key: "pipeline", Value: pipeline[:1]}, {Key: "explain", Value: true}}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if got := stageNames(out.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "FETCH", "IXSCAN") {
		t.Errorf("aggregate explain: true: %s", out)
	}
}
