package server_test

import (
	"context"
	"errors"
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

// TestExplainFind checks explain's envelope for a find as a client sees
// it: the queryPlanner section (hashes, parsed query, winning plan) and
// executionStats with the totals and per-stage counters. Which plan the
// planner chooses and what it examines are the transcripts of
// internal/planner/testdata/plans.
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
	if ns := ex.Lookup("queryPlanner", "namespace").StringValue(); ns != "ex.c" {
		t.Errorf("queryPlanner.namespace = %q", ns)
	}

	// Two candidates: the loser is in rejectedPlans, and allPlansExecution
	// has both trials' statistics.
	createIndex(t, db, "c", bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}})
	ex = explainCmd(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}, {Key: "b", Value: bson.D{{Key: "$lt", Value: 60}}}}}}, "allPlansExecution")
	rejected, _ := ex.Lookup("queryPlanner", "rejectedPlans").Array().Values()
	if len(rejected) != 1 || findStage(rejected[0].Document(), "IXSCAN").Lookup("indexName").StringValue() != "b_1" {
		t.Errorf("rejectedPlans %v", rejected)
	}
	all, _ := ex.Lookup("executionStats", "allPlansExecution").Array().Values()
	if len(all) != 2 || all[0].Document().Lookup("executionStages", "stage").StringValue() != "FETCH" {
		t.Errorf("allPlansExecution %v", all)
	}
}

// TestExplainCommands checks the shapes of count, distinct, update, delete,
// findAndModify and aggregate explains (the stages the commands wrap
// around the plan, and their counters), and that explaining a write does
// not write. The plans themselves are transcripts in
// internal/planner/testdata/plans (count_distinct.txt).
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
	if got := stageNames(stages); !sameStages(got, "DELETE", "FETCH", "IXSCAN") || asInt(stages.Lookup("nWouldDelete")) != 13 {
		t.Errorf("delete explain: %v %s", got, stages)
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

// TestWriteStatementHints checks that update and delete statements take
// hints: an unknown one fails the statement with a write error (code 2),
// and explain shows the hinted index under the DELETE stage. Which plan a
// hint forces is a planner transcript (choices.txt).
func TestWriteStatementHints(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("pl")
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: i}}
	}
	if _, err := db.Collection("p").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "p", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	createIndex(t, db, "p", bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}})

	err := db.RunCommand(ctx, bson.D{{Key: "update", Value: "p"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}, {Key: "hint", Value: "nope"}}}}}).Err()
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Errorf("update with an unknown hint: %v, want a write error with code 2", err)
	}
	ex := explainCmd(t, db, bson.D{{Key: "delete", Value: "p"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "limit", Value: 0}, {Key: "hint", Value: "b_1"}}}}}, "queryPlanner")
	if ix := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN"); ix == nil || ix.Lookup("indexName").StringValue() != "b_1" {
		t.Errorf("hinted delete plan %s", ex.Lookup("queryPlanner", "winningPlan"))
	}
	// A find's unknown hint is a command error with the same code.
	if err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "p"}, {Key: "hint", Value: "nope"}}).Err(); commandCode(err) != 2 {
		t.Errorf("find with an unknown hint: %v, want code 2", err)
	}
}
