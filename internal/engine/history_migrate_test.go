package engine

import (
	"fmt"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestMigrateHistories moves histories from one engine to another as a
// chunk migration does (ReadHistories, DeletedHistories, InstallHistories,
// PurgeHistories) and checks at every step that the recipient's history
// follows its documents (CheckHistory), that it reads as the donor's, that
// installing again changes nothing, that a first install meeting an _id
// already there is refused, that the recipient's next write continues the
// numbering at a later time, that an installed document is seen by the
// insert path's tail bound (a duplicate _id is refused, not overwritten),
// and that a purge leaves nothing, no tombstone either.
func TestMigrateHistories(t *testing.T) {
	open := func() *Engine {
		e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	donor, recv := open(), open()
	ns := Namespace{"db", "c"}
	id1 := versionedDoc(t, donor, 40, nil) // version 32 has a version key
	id2 := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}
	d2, _ := bson.Marshal(bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: "two"}})
	if _, err := donor.Insert(ns, []bsoncore.Document{d2}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := donor.Delete(ns, id2); err != nil {
		t.Fatal(err)
	}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := recv.CreateCollection(ns, opts); err != nil {
		t.Fatal(err)
	}
	// A document below the migrated ones loads the tail bound first.
	d0, _ := bson.Marshal(bson.D{{Key: "_id", Value: 0}})
	if _, err := recv.Insert(ns, []bsoncore.Document{d0}, true); err != nil {
		t.Fatal(err)
	}
	ids := []bsoncore.Value{id1, id2}
	read := func(e *Engine, from []uint64) []DocHistory {
		t.Helper()
		hs, _, err := e.ReadHistories(ns, ids, from)
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	same := func(what string) {
		t.Helper()
		if err := recv.CheckHistory(ns); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if a, b := fmt.Sprint(read(donor, nil)), fmt.Sprint(read(recv, nil)); a != b {
			t.Fatalf("%s: the recipient's histories differ from the donor's:\n%s\n%s", what, b, a)
		}
	}
	deleted, last, more, err := donor.DeletedHistories(ns, bsoncore.Value{}, 1<<20)
	if err != nil || more || len(deleted) != 1 || !sameID(deleted[0], id2) || last[0].Lookup("n").StringValue() != "two" {
		t.Fatalf("DeletedHistories: %v %v %v %v", deleted, last, more, err)
	}
	hs := read(donor, nil)
	if len(hs) != 2 || len(hs[0].Versions) != 40 || len(hs[1].Versions) != 2 || hs[1].Versions[0].Op != opDelete {
		t.Fatalf("the donor's histories: %v", hs)
	}
	for i := range hs {
		hs[i].First = true
	}
	if err := recv.InstallHistories(ns, hs, 0); err != nil {
		t.Fatal(err)
	}
	same("after the clone")
	if err := recv.InstallHistories(ns, hs[:1], 0); mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
		t.Fatalf("a first install of an _id already there: %v, want DuplicateKey", err)
	}
	hs[0].First, hs[1].First = false, false
	if err := recv.InstallHistories(ns, hs, 0); err != nil {
		t.Fatal(err)
	}
	same("after installing the same versions again")

	// The catch-up: what the donor wrote since, from the newest time sent.
	sent := hs[0].Versions[0].ValidFrom
	d1, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: "forty"}})
	if _, err := donor.Replace(ns, id1, d1); err != nil {
		t.Fatal(err)
	}
	mods := read(donor, []uint64{sent, ^uint64(0)})
	if len(mods) != 1 || len(mods[0].Versions) != 2 || mods[0].Versions[0].V != 41 {
		t.Fatalf("versions since %d: %v", sent, mods)
	}
	if err := recv.InstallHistories(ns, mods, 0); err != nil {
		t.Fatal(err)
	}
	same("after the catch-up")

	// The recipient's own next version is newer than every installed one.
	d1, _ = bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: "recipient's"}})
	if _, err := recv.Replace(ns, id1, d1); err != nil {
		t.Fatal(err)
	}
	if err := recv.CheckHistory(ns); err != nil {
		t.Fatalf("after a write on the recipient: %v", err)
	}
	if res, err := recv.Insert(ns, []bsoncore.Document{d1}, true); err != nil || len(res.WriteErrors) != 1 || mongoerr.CodeOf(res.WriteErrors[0].Err) != mongoerr.DuplicateKey {
		t.Fatalf("inserting an installed _id again: %+v %v, want DuplicateKey", res, err)
	}

	n, err := recv.PurgeHistories(ns, append(ids, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 9)}))
	if err != nil || n != 2 {
		t.Fatalf("PurgeHistories: %d %v, want 2", n, err)
	}
	if hs := read(recv, nil); len(hs) != 0 {
		t.Fatalf("histories after the purge: %v", hs)
	}
	if err := recv.CheckHistory(ns); err != nil {
		t.Fatalf("after the purge: %v", err)
	}
	if _, found, err := recv.Get(nil, ns, id1); err != nil || found {
		t.Fatalf("the purged document: found %v, %v", found, err)
	}
	if deleted, _, _, err := recv.DeletedHistories(ns, bsoncore.Value{}, 1<<20); err != nil || len(deleted) != 0 {
		t.Fatalf("tombstones after the purge: %v %v", deleted, err)
	}
}
