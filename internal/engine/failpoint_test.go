package engine

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/storage"
)

// TestFailBeforeCommit fails commit groups at the storage fail point: the
// failed insert and the collection it would have created leave no trace
// (the catalog is reset by the Failed hook), and writes succeed again once
// the point is off.
func TestFailBeforeCommit(t *testing.T) {
	e := openEngine(t, "")
	fp, ok := e.FailPoints().Lookup(failpoint.StorageFailBeforeCommit)
	if !ok {
		t.Fatalf("point %s not defined", failpoint.StorageFailBeforeCommit)
	}
	fp.Set(failpoint.Config{Mode: failpoint.Times, N: 1})
	_, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", 1}})}, true)
	if !errors.Is(err, storage.ErrFailPoint) {
		t.Fatalf("insert at the fail point: err %v, want %v", err, storage.ErrFailPoint)
	}
	if e.Catalog().Collection(users.DB, users.Coll) != nil {
		t.Fatal("the failed group's collection is in the catalog")
	}
	if _, found, _ := e.Get(nil, users, val(t, 1)); found {
		t.Fatal("the failed group's document is readable")
	}
	if _, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", 1}})}, true); err != nil {
		t.Fatalf("insert after the point's one time: %v", err)
	}
	if got := scanIDs(t, e, users); len(got) != 1 {
		t.Fatalf("documents %v, want [1]", got)
	}
	if fp.Entered() != 1 {
		t.Fatalf("entered %d, want 1", fp.Entered())
	}
}

// TestFailAfterCommit: the insert is answered with an error, yet its
// document is durable and readable, and the catalog kept its collection.
func TestFailAfterCommit(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	fp, _ := e.FailPoints().Lookup(failpoint.StorageFailAfterCommit)
	fp.Set(failpoint.Config{Mode: failpoint.Times, N: 1})
	_, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", 1}})}, true)
	if !errors.Is(err, storage.ErrFailPointAfterCommit) {
		t.Fatalf("insert at the fail point: err %v, want %v", err, storage.ErrFailPointAfterCommit)
	}
	if _, found, _ := e.Get(nil, users, val(t, 1)); !found {
		t.Fatal("the committed document is not readable")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	if got := scanIDs(t, e, users); len(got) != 1 {
		t.Fatalf("documents after reopening %v, want [1]", got)
	}
}
