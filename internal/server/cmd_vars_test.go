package server_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestLetInFilterExpr: the let of find, aggregate, update, delete and
// findAndModify reaches a filter's $expr (MongoDB 5.0+), including one
// nested in $or, which the pipeline cannot split off.
func TestLetInFilterExpr(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	db := s.client(t).Database("letexpr")
	coll := db.Collection("c")
	reset := func() {
		_ = coll.Drop(ctx)
		mustInsertJSON(t, coll, []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 5}`, `{"_id": 3, "a": 9}`})
	}
	let := bson.D{{Key: "lim", Value: 5}}
	below := bson.D{{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$a", "$$lim"}}}}}
	nested := bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: 100}}, below}}}

	ids := func(t *testing.T, cmd bson.D) []int32 {
		t.Helper()
		var reply struct {
			Cursor struct {
				FirstBatch []struct {
					ID int32 `bson:"_id"`
				} `bson:"firstBatch"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(ctx, cmd).Decode(&reply); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		var out []int32
		for _, d := range reply.Cursor.FirstBatch {
			out = append(out, d.ID)
		}
		return out
	}
	remaining := func(t *testing.T) int64 {
		t.Helper()
		n, err := coll.CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	reset()
	for _, f := range []bson.D{below, nested} {
		if got := ids(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: f}, {Key: "let", Value: let}}); len(got) != 1 || got[0] != 1 {
			t.Errorf("find %v: %v, want [1]", f, got)
		}
		pipeline := bson.A{bson.D{{Key: "$match", Value: f}}}
		if got := ids(t, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}, {Key: "let", Value: let}}); len(got) != 1 || got[0] != 1 {
			t.Errorf("aggregate $match %v: %v, want [1]", f, got)
		}
	}

	var upd struct {
		N         int32 `bson:"n"`
		NModified int32 `bson:"nModified"`
	}
	err := db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: nested}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "hit", Value: true}}}}}, {Key: "multi", Value: true}},
	}}, {Key: "let", Value: let}}).Decode(&upd)
	if err != nil || upd.N != 1 || upd.NModified != 1 {
		t.Errorf("update with let in q: %+v %v, want n 1", upd, err)
	}

	var fam struct {
		Value bson.M `bson:"value"`
	}
	err = db.RunCommand(ctx, bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: below},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 10}}}}}, {Key: "let", Value: let}}).Decode(&fam)
	if err != nil || fam.Value["_id"] != int32(1) {
		t.Errorf("findAndModify with let in query: %v %v, want _id 1", fam.Value, err)
	}

	// explain of the same findAndModify plans the query with the variables.
	err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: below},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 10}}}}}, {Key: "let", Value: let}}}}).Err()
	if err != nil {
		t.Errorf("explain findAndModify with let in query: %v", err)
	}

	reset()
	var del struct {
		N int32 `bson:"n"`
	}
	err = db.RunCommand(ctx, bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gte", Value: bson.A{"$a", "$$lim"}}}}}}, {Key: "limit", Value: 0}},
	}}, {Key: "let", Value: let}}).Decode(&del)
	if err != nil || del.N != 2 || remaining(t) != 1 {
		t.Errorf("delete with let in q: %+v %v, want n 2", del, err)
	}

	// Without let the variable is undefined: 17276, as in MongoDB.
	err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: below}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 17276 {
		t.Errorf("find without let: %v, want code 17276", err)
	}
}

// TestNowOnePerCommand: every statement of one update command sees the same
// $$NOW, in its pipeline and in its filter. Many statements make it likely
// that the clock moves between the first and the last.
func TestNowOnePerCommand(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	db := s.client(t).Database("nowcmd")
	const n = 300
	var stmts bson.A
	for i := 0; i < n; i++ {
		stmts = append(stmts, bson.D{
			// The filter's $$NOW and the pipeline's agree, or nothing matches
			// and the upsert inserts a document without "same".
			{Key: "q", Value: bson.D{{Key: "_id", Value: i}}},
			{Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "t", Value: "$$NOW"}}}}}},
			{Key: "upsert", Value: true},
		})
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: stmts}}).Err(); err != nil {
		t.Fatal(err)
	}
	var distinct []bson.DateTime
	res := db.Collection("c").Distinct(ctx, "t", bson.D{})
	if err := res.Decode(&distinct); err != nil {
		t.Fatal(err)
	}
	if len(distinct) != 1 {
		t.Fatalf("%d statements of one update saw %d values of $$NOW, want 1", n, len(distinct))
	}
	// A second pass whose filter compares with the stored $$NOW: a later
	// command's $$NOW is not earlier, and within it every statement agrees.
	stmts = stmts[:0]
	for i := 0; i < n; i++ {
		stmts = append(stmts, bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: i}, {Key: "$expr", Value: bson.D{{Key: "$gte", Value: bson.A{"$$NOW", "$t"}}}}}},
			{Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "t2", Value: "$$NOW"}}}}}},
		})
	}
	var upd struct {
		N int32 `bson:"n"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: stmts}}).Decode(&upd); err != nil || upd.N != n {
		t.Fatalf("second update: n %d %v, want %d", upd.N, err, n)
	}
	if err := db.Collection("c").Distinct(ctx, "t2", bson.D{}).Decode(&distinct); err != nil || len(distinct) != 1 {
		t.Fatalf("second update saw %d values of $$NOW (%v), want 1", len(distinct), err)
	}
}
