package server_test

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
)

// hashOf is the key a hashed index holds for v, as explain prints it.
func hashOf(v any) string {
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		panic(fmt.Sprintf("hashOf: %v", err))
	}
	h := index.Hash(bsoncore.Value{Type: bsoncore.Type(t), Data: data})
	return fmt.Sprintf("[%d, %d]", h, h)
}

// TestPlannerHashedIndexes checks that equality and $in on a hashed field,
// including one inside a compound _id, scan the hashed index with point
// bounds on the hashes, and that FETCH applies the filter again.
func TestPlannerHashedIndexes(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("hx")
	envs := []string{"prod", "test", "dev", "stage"}
	docs := make([]any, 80)
	for i := range docs {
		id := bson.D{{Key: "tenant", Value: i % 5}, {Key: "env", Value: envs[i%4]}, {Key: "n", Value: i}}
		// x: 2 and 2.5 share a hash (numbers hash as their int64 part).
		docs[i] = bson.D{{Key: "_id", Value: id}, {Key: "x", Value: []any{2, 2.5, 3, "s"}[i%4]}, {Key: "y", Value: i % 3}}
	}
	if _, err := db.Collection("h").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "_id.env", Value: "hashed"}}}, {Key: "name", Value: "_id.env_hashed"}})
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}}}, {Key: "name", Value: "x_hashed"}})
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "hashed"}}}, {Key: "name", Value: "y_1_x_hashed"}})
	find := func(filter bson.D, more ...bson.E) bson.D {
		return append(bson.D{{Key: "find", Value: "h"}, {Key: "filter", Value: filter}}, more...)
	}

	plan, ex := winning(t, db, find(bson.D{{Key: "_id.env", Value: "prod"}}))
	ix := findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("indexName").StringValue() != "_id.env_hashed" || stageNames(plan)[0] != "FETCH" {
		t.Fatalf("_id.env = prod planned as %s", plan)
	}
	if got := ix.Lookup("indexBounds", "_id.env").String(); got != `["`+hashOf("prod")+`"]` {
		t.Errorf("bounds %s, want the hash of \"prod\" %s", got, hashOf("prod"))
	}
	if f, ok := findStage(plan, "FETCH").Lookup("filter").DocumentOK(); !ok || f.String() == "{}" {
		t.Errorf("FETCH does not apply the filter again: %s", plan)
	}
	if n, k, d := execStats(ex); n != 20 || k != 20 || d != 20 {
		t.Errorf("_id.env = prod: nReturned %d, keys %d, docs %d; want 20 each", n, k, d)
	}

	// $in: one point per value, in hash order.
	_, ex = winning(t, db, find(bson.D{{Key: "_id.env", Value: bson.D{{Key: "$in", Value: bson.A{"dev", "prod", "nope"}}}}}))
	if n, k, _ := execStats(ex); n != 40 || k != 40 {
		t.Errorf("$in: nReturned %d, keys %d; want 40, 40", n, k)
	}
	bounds, _ := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN").Lookup("indexBounds", "_id.env").Array().Values()
	if len(bounds) != 3 {
		t.Errorf("$in of 3 values: bounds %v", bounds)
	}

	// A collision: 2 and 2.5 share a key; FETCH drops the 2.5s.
	_, ex = winning(t, db, find(bson.D{{Key: "x", Value: 2}}))
	if n, k, d := execStats(ex); n != 20 || k != 40 || d != 40 {
		t.Errorf("x = 2: nReturned %d, keys %d, docs %d; want 20, 40, 40", n, k, d)
	}

	// Ranges and sorts cannot use a hashed field.
	plan, _ = winning(t, db, find(bson.D{{Key: "_id.env", Value: bson.D{{Key: "$gt", Value: "d"}}}}))
	if plan.Lookup("stage").StringValue() != "COLLSCAN" {
		t.Errorf("a range on a hashed field planned as %s", plan)
	}
	plan, _ = winning(t, db, find(bson.D{{Key: "y", Value: 1}}, bson.E{Key: "sort", Value: bson.D{{Key: "x", Value: 1}}}))
	if findStage(plan, "SORT") == nil {
		t.Errorf("a sort on a hashed field without a SORT stage: %s", plan)
	}

	// Compound: a point on y, then the hash of x.
	plan, ex = winning(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "hint", Value: "y_1_x_hashed"}))
	ix = findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("indexBounds", "x").String() != `["`+hashOf("s")+`"]` || ix.Lookup("indexBounds", "y").String() != `["[1, 1]"]` {
		t.Errorf("compound hashed: %s", plan)
	}
	if n, _, _ := execStats(ex); int(n) != countFind(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}})) {
		t.Errorf("compound hashed: %d results, not the collection scan's", n)
	}
	// Never covered: the keys hold hashes, not values.
	plan, _ = winning(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "projection", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}, {Key: "_id", Value: 0}}}, bson.E{Key: "hint", Value: "y_1_x_hashed"}))
	if findStage(plan, "FETCH") == nil {
		t.Errorf("a hashed index plan without FETCH: %s", plan)
	}
}
