package server_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFsyncLockHoldsWrites: while fsync's lock is held, a write from another
// client waits (it is not refused), reads are served, and the write is
// acknowledged once the last lock is released.
func TestFsyncLockHoldsWrites(t *testing.T) {
	s := startServer(t)
	admin, other := s.client(t), s.client(t)
	ctx := context.Background()
	coll := other.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := runCmd(admin, "admin", bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}}); err != nil {
		t.Fatal(err)
	}
	if got := s.env.FsyncLockCount(); got != 1 {
		t.Fatalf("lock count %d after fsync lock", got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write finished while writes were locked (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("a read while locked: %d documents, err %v", n, err)
	}
	if err := runCmd(admin, "admin", bson.D{{Key: "fsyncUnlock", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the held write failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held write was not acknowledged after fsyncUnlock")
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("after unlock: %d documents, err %v", n, err)
	}
}
