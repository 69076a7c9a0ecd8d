package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// winning explains a find and returns its winning plan and statistics.
func winning(t *testing.T, db *mongo.Database, find bson.D) (plan bson.Raw, ex bson.Raw) {
	t.Helper()
	ex = explainCmd(t, db, find, "allPlansExecution")
	return ex.Lookup("queryPlanner", "winningPlan").Document(), ex
}

func countFind(t *testing.T, db *mongo.Database, find bson.D) int {
	t.Helper()
	var out struct {
		Cursor struct {
			FirstBatch []bson.Raw `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(context.Background(), append(find, bson.E{Key: "batchSize", Value: 10000})).Decode(&out); err != nil {
		t.Fatalf("%v: %v", find, err)
	}
	return len(out.Cursor.FirstBatch)
}

// TestPlannerChoices checks $or plans, hints, min/max, and when sparse,
// partial and hidden indexes may be used.
func TestPlannerChoices(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("pl")
	docs := make([]any, 100)
	for i := range docs {
		d := bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: i}, {Key: "c", Value: i % 7}}
		if i%2 == 0 {
			d = append(d, bson.E{Key: "s", Value: i % 4})
		}
		docs[i] = d
	}
	if _, err := db.Collection("p").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []bson.D{
		{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}},
		{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}},
		{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: bson.D{{Key: "c", Value: 1}}}, {Key: "name", Value: "c_partial"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "c", Value: bson.D{{Key: "$gt", Value: 4}}}}}},
		{{Key: "key", Value: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}}, {Key: "name", Value: "hidden"}, {Key: "hidden", Value: true}},
	} {
		createIndex(t, db, "p", spec)
	}
	find := func(filter bson.D, more ...bson.E) bson.D {
		return append(bson.D{{Key: "find", Value: "p"}, {Key: "filter", Value: filter}}, more...)
	}

	// $or: one scan per branch under OR, each document once.
	or := find(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "b", Value: bson.D{{Key: "$lt", Value: 20}}}}}}})
	plan, ex := winning(t, db, or)
	orStage := findStage(plan, "OR")
	if orStage == nil || stageNames(plan)[0] != "FETCH" {
		t.Fatalf("$or planned as %s", plan)
	}
	branches, _ := orStage.Lookup("inputStages").Array().Values()
	if len(branches) != 2 || branches[0].Document().Lookup("indexName").StringValue() != "a_1" || branches[1].Document().Lookup("indexName").StringValue() != "b_1" {
		t.Errorf("$or branches %s", orStage)
	}
	if n, k, _ := execStats(ex); n != 28 || k != 30 {
		t.Errorf("$or: nReturned %d, keys %d; want 28, 30", n, k)
	}
	if dd := findStage(ex.Lookup("executionStats", "executionStages").Document(), "OR").Lookup("dupsDropped"); asInt(dd) != 2 {
		t.Errorf("$or dupsDropped %s, want 2", dd)
	}
	if n := countFind(t, db, or); n != 28 {
		t.Errorf("$or returned %d documents, want 28", n)
	}
	// A branch without an index makes the $or a collection scan.
	plan, _ = winning(t, db, find(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 3}}, bson.D{{Key: "z", Value: 1}}}}}))
	if st := plan.Lookup("stage").StringValue(); st != "COLLSCAN" {
		t.Errorf("$or with an unindexed branch planned as %s", plan)
	}

	// Hints: by name, by key pattern; unknown and hidden ones are BadValue.
	plan, _ = winning(t, db, find(bson.D{{Key: "a", Value: 3}}, bson.E{Key: "hint", Value: "b_1"}))
	if ix := findStage(plan, "IXSCAN"); ix == nil || ix.Lookup("indexName").StringValue() != "b_1" || ix.Lookup("indexBounds", "b").String() != `["[MinKey, MaxKey]"]` {
		t.Errorf("hint b_1: %s", plan)
	}
	plan, _ = winning(t, db, find(bson.D{{Key: "b", Value: 3}}, bson.E{Key: "hint", Value: bson.D{{Key: "a", Value: 1}}}))
	if ix := findStage(plan, "IXSCAN"); ix == nil || ix.Lookup("indexName").StringValue() != "a_1" {
		t.Errorf("hint {a: 1}: %s", plan)
	}
	for _, h := range []any{"nope", bson.D{{Key: "q", Value: 1}}, "hidden"} {
		err := db.RunCommand(ctx, find(bson.D{}, bson.E{Key: "hint", Value: h})).Err()
		if commandCode(err) != 2 {
			t.Errorf("hint %v: %v, want code 2", h, err)
		}
	}
	// The hidden index is never chosen.
	plan, _ = winning(t, db, find(bson.D{{Key: "b", Value: 3}, {Key: "a", Value: 3}}, bson.E{Key: "sort", Value: bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}}))
	if findStage(plan, "IXSCAN").Lookup("indexName").StringValue() == "hidden" {
		t.Errorf("hidden index chosen: %s", plan)
	}

	// min and max bound the hinted index.
	mm := find(bson.D{}, bson.E{Key: "hint", Value: "b_1"}, bson.E{Key: "min", Value: bson.D{{Key: "b", Value: 10}}}, bson.E{Key: "max", Value: bson.D{{Key: "b", Value: 15}}})
	plan, ex = winning(t, db, mm)
	if b := findStage(plan, "IXSCAN").Lookup("indexBounds", "b").String(); b != `["[10, 15)"]` {
		t.Errorf("min/max bounds %s", b)
	}
	if n, k, _ := execStats(ex); n != 5 || k != 5 {
		t.Errorf("min/max: nReturned %d, keys %d; want 5, 5", n, k)
	}
	if err := db.RunCommand(ctx, find(bson.D{}, bson.E{Key: "min", Value: bson.D{{Key: "b", Value: 10}}})).Err(); commandCode(err) != 2 {
		t.Errorf("min without hint: %v, want code 2", err)
	}

	// Sparse: not for null (it matches documents the index lacks), yes for
	// values; not for a sort alone.
	plan, _ = winning(t, db, find(bson.D{{Key: "s", Value: nil}}))
	if plan.Lookup("stage").StringValue() != "COLLSCAN" {
		t.Errorf("{s: null} planned as %s", plan)
	}
	if n := countFind(t, db, find(bson.D{{Key: "s", Value: nil}})); n != 50 {
		t.Errorf("{s: null} returned %d, want 50", n)
	}
	plan, _ = winning(t, db, find(bson.D{{Key: "s", Value: 2}}))
	if ix := findStage(plan, "IXSCAN"); ix == nil || ix.Lookup("indexName").StringValue() != "s_1" || !ix.Lookup("isSparse").Boolean() {
		t.Errorf("{s: 2} planned as %s", plan)
	}
	plan, _ = winning(t, db, find(bson.D{}, bson.E{Key: "sort", Value: bson.D{{Key: "s", Value: 1}}}))
	if findStage(plan, "IXSCAN") != nil {
		t.Errorf("sort on a sparse index alone used it: %s", plan)
	}

	// Partial: used only when the filter implies the expression.
	for _, tc := range []struct {
		filter bson.D
		uses   bool
		n      int
	}{
		{bson.D{{Key: "c", Value: 5}}, true, 14},
		{bson.D{{Key: "c", Value: bson.D{{Key: "$gte", Value: 6}}}}, true, 14},
		{bson.D{{Key: "c", Value: 3}}, false, 14},
		{bson.D{{Key: "c", Value: bson.D{{Key: "$gt", Value: 3}}}}, false, 42},
		{bson.D{{Key: "c", Value: bson.D{{Key: "$in", Value: bson.A{5, 6}}}}}, true, 28},
	} {
		plan, ex := winning(t, db, find(tc.filter))
		ix := findStage(plan, "IXSCAN")
		if uses := ix != nil && ix.Lookup("indexName").StringValue() == "c_partial"; uses != tc.uses {
			t.Errorf("%v: partial index used %v, want %v: %s", tc.filter, uses, tc.uses, plan)
		}
		if tc.uses && !ix.Lookup("isPartial").Boolean() {
			t.Errorf("%v: isPartial false", tc.filter)
		}
		if n, _, _ := execStats(ex); n != int64(tc.n) {
			t.Errorf("%v: nReturned %d, want %d", tc.filter, n, tc.n)
		}
	}
}
