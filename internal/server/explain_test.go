package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func explainFind(t *testing.T, db *mongo.Database, find bson.D) bson.Raw {
	t.Helper()
	var out bson.Raw
	if err := db.RunCommand(context.Background(), bson.D{{Key: "explain", Value: find}, {Key: "verbosity", Value: "executionStats"}}).Decode(&out); err != nil {
		t.Fatalf("explain %v: %v", find, err)
	}
	return out
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
	if err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	stats := func(ex bson.Raw) (nReturned, keys, docs int32) {
		return ex.Lookup("executionStats", "nReturned").Int32(), ex.Lookup("executionStats", "totalKeysExamined").Int32(), ex.Lookup("executionStats", "totalDocsExamined").Int32()
	}

	// A range on an indexed field examines exactly the matching keys.
	ex := explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 8}}}}}})
	plan := ex.Lookup("queryPlanner", "winningPlan")
	if plan.Document().Lookup("stage").StringValue() != "FETCH" || plan.Document().Lookup("inputStage", "stage").StringValue() != "IXSCAN" ||
		plan.Document().Lookup("inputStage", "indexName").StringValue() != "a_1" {
		t.Fatalf("winningPlan %s, want FETCH over IXSCAN a_1", plan)
	}
	if n, k, d := stats(ex); n != 20 || k != 20 || d != 20 {
		t.Fatalf("a >= 8: nReturned %d, keys %d, docs %d; want 20 each", n, k, d)
	}
	if b := plan.Document().Lookup("inputStage", "indexBounds", "a"); b.String() != `["[8, MaxKey]"]` {
		t.Errorf("indexBounds.a = %s", b)
	}

	// No usable index: a collection scan examines every document.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: 7}}}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "COLLSCAN" {
		t.Fatalf("b = 7 planned as %s, want COLLSCAN", st)
	}
	if n, _, d := stats(ex); n != 1 || d != 100 {
		t.Fatalf("b = 7: nReturned %d, docs %d; want 1 and 100", n, d)
	}

	// _id equality is IDHACK.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "IDHACK" {
		t.Fatalf("_id = 5 planned as %s, want IDHACK", st)
	}

	// Sort and limit wrap the scan.
	ex = explainFind(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}, {Key: "limit", Value: 2}})
	plan = ex.Lookup("queryPlanner", "winningPlan")
	if plan.Document().Lookup("stage").StringValue() != "LIMIT" || plan.Document().Lookup("inputStage", "stage").StringValue() != "SORT" {
		t.Fatalf("sorted, limited find: %s", plan)
	}
	if n, k, _ := stats(ex); n != 2 || k != 10 {
		t.Fatalf("a = 3 sorted, limit 2: nReturned %d, keys %d; want 2 and 10", n, k)
	}
	// Explain of a command it cannot explain yet says so with a code.
	err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{}}}}}).Err()
	if commandCode(err) != 115 {
		t.Fatalf("explain of update: %v, want 115", err)
	}
}
