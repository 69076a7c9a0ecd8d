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
