package catalog

import (
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

func openCatalog(t *testing.T, dir string) (*storage.DB, *Catalog) {
	t.Helper()
	hooks := &storage.Hooks{}
	db, err := storage.Open(dir, storage.Options{Logger: slog.New(slog.DiscardHandler), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	hooks.Committing, hooks.Committed, hooks.Failed = cat.Committing, cat.Committed, cat.Failed
	return db, cat
}

// TestIndexMetadataLifecycle adds, updates and drops index records and
// checks each change is atomic with its request and survives a reopen.
func TestIndexMetadataLifecycle(t *testing.T) {
	dir := t.TempDir()
	db, cat := openCatalog(t, dir)
	key, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}})
	var added Index
	err := db.Write(func(tx *storage.Txn) error {
		if _, err := cat.CreateCollection(tx, "db", "c", nil); err != nil {
			return err
		}
		var err error
		added, err = cat.AddIndex(tx, "db", "c", Index{Name: "a_1", Key: key})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	coll := cat.Current().Collection("db", "c")
	if added.ID == 0 || added.ID == coll.ID || coll.Index("a_1") == nil {
		t.Fatalf("index not added with its own id: %+v in %+v", added, coll)
	}
	// A failing request leaves the index as it was.
	_ = db.Write(func(tx *storage.Txn) error {
		ix := *coll.Index("a_1")
		ix.Multikey = true
		if err := cat.UpdateIndex(tx, "db", "c", ix); err != nil {
			return err
		}
		return mongoerr.New(mongoerr.BadValue, "abort")
	})
	if cat.Current().Collection("db", "c").Index("a_1").Multikey {
		t.Fatal("an aborted request's index change was published")
	}
	err = db.Write(func(tx *storage.Txn) error {
		ix := *cat.Working().Collection("db", "c").Index("a_1")
		ix.Multikey = true
		return cat.UpdateIndex(tx, "db", "c", ix)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, cat = openCatalog(t, dir)
	defer db.Close()
	ix := cat.Current().Collection("db", "c").Index("a_1")
	if ix == nil || !ix.Multikey || ix.ID != added.ID {
		t.Fatalf("after reopen index = %+v", ix)
	}
	err = db.Write(func(tx *storage.Txn) error { return cat.DropIndex(tx, "db", "c", "a_1") })
	if err != nil {
		t.Fatal(err)
	}
	if cat.Current().Collection("db", "c").Index("a_1") != nil {
		t.Fatal("index still listed after drop")
	}
	err = db.Write(func(tx *storage.Txn) error { return cat.DropIndex(tx, "db", "c", "a_1") })
	if mongoerr.CodeOf(err) != mongoerr.IndexNotFound {
		t.Fatalf("dropping a missing index: %v, want IndexNotFound", err)
	}
}
