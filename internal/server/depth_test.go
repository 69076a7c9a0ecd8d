package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestStoredNestingDepthOverTheWire checks MongoDB's two depth limits as a
// driver meets them: a stored document may nest 100 levels (the document
// itself is level 1) and an insert, update, replacement or upsert that
// would store a deeper one fails with Overflow (15) as a write error,
// while a command may nest to 200 levels (a filter deeper than 100 is
// fine: it is not stored).
func TestStoredNestingDepthOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("depth")
	nest := func(n int) any {
		var v any = 1
		for range n {
			v = bson.D{{Key: "a", Value: v}}
		}
		return v
	}
	writeCode := func(cmd bson.D) int32 {
		t.Helper()
		err := db.RunCommand(ctx, cmd).Err()
		var we mongo.WriteException
		switch {
		case err == nil:
			return 0
		case errors.As(err, &we) && len(we.WriteErrors) == 1:
			return int32(we.WriteErrors[0].Code)
		}
		t.Fatalf("%v: %v, want a reply with at most one write error", cmd, err)
		return 0
	}
	deepPath := "x" + strings.Repeat(".a", 99) // a field at level 100
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"insert at the limit", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: nest(99)}}}}}, 0},
		{"insert past the limit", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: nest(100)}}}}}, 15},
		{"insert far past the limit, within a command's 200", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: nest(190)}}}}}, 15},
		{"$set a document at the deepest level", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: deepPath, Value: bson.D{{Key: "b", Value: 1}}}}}}}}}}}, 15},
		{"$set a scalar at the deepest level", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: deepPath, Value: 2}}}}}}}}}, 0},
		{"replacement past the limit", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "x", Value: nest(100)}}}}}}}, 15},
		{"upsert past the limit", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 9}}}, {Key: "u", Value: bson.D{{Key: "x", Value: nest(100)}}}, {Key: "upsert", Value: true}}}}}, 15},
	} {
		if got := writeCode(tc.cmd); got != tc.code {
			t.Errorf("%s: write error code %d, want %d", tc.name, got, tc.code)
		}
	}
	n, err := db.Collection("c").CountDocuments(ctx, bson.D{{Key: "x", Value: nest(150)}})
	if err != nil || n != 0 {
		t.Fatalf("a filter nested 150 levels: n %d, %v; want 0 and no error", n, err)
	}
	var got []int32
	if err := db.Collection("c").Distinct(ctx, "_id", bson.D{}).Decode(&got); err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("stored ids %v (%v), want only 1: nothing too deep was stored", got, err)
	}
}
