package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExplainNestedArrayIndex is issue 6's modelling example: documents
// holding arrays of subdocuments holding arrays, indexed on a path through
// both. The index is multikey, explain says so, and an equality on the
// path reads only the matching keys.
func TestExplainNestedArrayIndex(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("model")
	coll := db.Collection("graphs")
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "arrays", Value: bson.A{
			bson.D{{Key: "nodes", Value: bson.A{
				bson.D{{Key: "nodeIdentifier", Value: i}},
				bson.D{{Key: "nodeIdentifier", Value: 100 + i}},
			}}},
			bson.D{{Key: "nodes", Value: bson.A{bson.D{{Key: "nodeIdentifier", Value: 200 + i}}}}},
		}}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "graphs", bson.D{{Key: "key", Value: bson.D{{Key: "arrays.nodes.nodeIdentifier", Value: 1}}}, {Key: "name", Value: "nodes"}})

	ex := explainFind(t, db, bson.D{{Key: "find", Value: "graphs"}, {Key: "filter", Value: bson.D{{Key: "arrays.nodes.nodeIdentifier", Value: 107}}}})
	ixscan := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN")
	if ixscan == nil || ixscan.Lookup("indexName").StringValue() != "nodes" {
		t.Fatalf("winningPlan %s, want an IXSCAN of nodes", ex.Lookup("queryPlanner", "winningPlan"))
	}
	if !ixscan.Lookup("isMultiKey").Boolean() {
		t.Errorf("isMultiKey = %s, want true", ixscan.Lookup("isMultiKey"))
	}
	if n, k, d := execStats(ex); n != 1 || k != 1 || d != 1 {
		t.Errorf("nReturned %d, keys %d, docs %d; want 1 each", n, k, d)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "arrays.nodes.nodeIdentifier", Value: 107}}).Decode(&got); err != nil || got["_id"] != int32(7) {
		t.Errorf("find = %v, %v; want _id 7", got, err)
	}
}

// TestExplainCoveredReadsNoDocument is issue 6's covered query: a projection
// of index fields only, here strings (whose keys give back the stored value
// exactly; numbers are fetched until index entries record their BSON type,
// see planner.keyValueExact), examines no document at all.
func TestExplainCoveredReadsNoDocument(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("cov")
	coll := db.Collection("people")
	var docs []any
	for i := range 30 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "team", Value: []string{"red", "green", "blue"}[i%3]},
			{Key: "name", Value: "p" + string(rune('a'+i))}, {Key: "other", Value: i}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "people", bson.D{{Key: "key", Value: bson.D{{Key: "team", Value: 1}, {Key: "name", Value: 1}}}, {Key: "name", Value: "team_name"}})
	find := bson.D{{Key: "find", Value: "people"}, {Key: "filter", Value: bson.D{{Key: "team", Value: "green"}}},
		{Key: "projection", Value: bson.D{{Key: "_id", Value: 0}, {Key: "team", Value: 1}, {Key: "name", Value: 1}}}}
	ex := explainFind(t, db, find)
	if got := stageNames(ex.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "PROJECTION_COVERED", "IXSCAN") {
		t.Fatalf("covered find planned as %v", got)
	}
	if n, k, d := execStats(ex); n != 10 || k != 10 || d != 0 {
		t.Errorf("covered find: nReturned %d, keys %d, docs %d; want 10, 10, 0", n, k, d)
	}
	var out struct {
		Cursor struct {
			FirstBatch []bson.D `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(ctx, find).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Cursor.FirstBatch) != 10 {
		t.Fatalf("covered find returned %d documents, want 10", len(out.Cursor.FirstBatch))
	}
	for _, d := range out.Cursor.FirstBatch {
		if len(d) != 2 || d[0].Key != "team" || d[0].Value != "green" || d[1].Key != "name" {
			t.Errorf("covered result %v, want {team: green, name: …}", d)
		}
	}
}
