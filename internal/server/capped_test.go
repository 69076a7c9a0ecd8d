package server_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestTailableAwaitDriver tails a capped collection as an application
// would, with the Go driver's TailableAwait cursor: the documents there,
// then one inserted while the cursor's getMore waits, delivered before
// the await time runs out; a capped collection keeps only its newest.
func TestTailableAwaitDriver(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := c.Database("tail")
	if err := db.CreateCollection(ctx, "log", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20).SetMaxDocuments(3)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("log")
	for i := range 5 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("count %d, %v; want 3 (max)", n, err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(5*time.Second).SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	var got []int32
	for len(got) < 3 && cur.Next(ctx) {
		got = append(got, cur.Current.Lookup("_id").Int32())
	}
	if len(got) != 3 || got[0] != 2 || got[2] != 4 {
		t.Fatalf("first documents %v, want [2 3 4]", got)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: 99}})
	}()
	began := time.Now()
	if !cur.Next(ctx) {
		t.Fatalf("no document after the insert: %v", cur.Err())
	}
	if id := cur.Current.Lookup("_id").Int32(); id != 99 {
		t.Fatalf("tailed %d, want 99", id)
	}
	if waited := time.Since(began); waited < 200*time.Millisecond || waited > 4*time.Second {
		t.Fatalf("waited %v: the getMore should have waited for the insert and answered on it", waited)
	}
}
