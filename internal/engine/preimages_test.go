package engine

import (
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// TestPreImages: a collection with changeStreamPreAndPostImages enabled
// (at create or by collMod) keeps each update's and delete's pre-image in
// config.system.preimages under its oplog entry's ts; one without keeps
// none, and the pre-images' writes are not logged.
func TestPreImages(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"a", 1}})}, true); err != nil {
		t.Fatal(err)
	}
	set := func(a int) { t.Helper(); replaceA(t, e, ns, a) }
	set(2) // not kept: the option is off
	on := bsoncore.NewDocumentBuilder().AppendDocument("changeStreamPreAndPostImages", bsoncore.NewDocumentBuilder().AppendBoolean("enabled", true).Build()).Build()
	els, _ := on.Elements()
	if _, err := e.CollMod(ns, els, nil); err != nil {
		t.Fatal(err)
	}
	set(3)
	if _, err := e.Delete(ns, val(t, 1)); err != nil {
		t.Fatal(err)
	}
	entries := oplogEntries(t, e)
	coll := e.Catalog().Collection(ns.DB, ns.Coll)
	var kept []string
	for _, en := range entries {
		if op, _ := en.Lookup("op").StringValueOK(); op != "u" && op != "d" {
			if ns, _ := en.Lookup("ns").StringValueOK(); ns == "config.system.preimages" {
				t.Errorf("a pre-image's write was logged: %s", en)
			}
			continue
		}
		ts, inc := en.Lookup("ts").Timestamp()
		got, found, err := e.Get(nil, PreImagesNS, PreImageID(coll.UUID.Data, hlc.New(ts, inc), 0))
		if err != nil {
			t.Fatal(err)
		}
		if found {
			kept = append(kept, bsoncore.Document(got).Lookup("preImage").Document().String())
		}
	}
	want := []string{`{"_id": {"$numberInt":"1"},"a": {"$numberInt":"2"}}`, `{"_id": {"$numberInt":"1"},"a": {"$numberInt":"3"}}`}
	if len(kept) != len(want) || kept[0] != want[0] || kept[1] != want[1] {
		t.Fatalf("pre-images kept %v, want %v", kept, want)
	}
}

// TestPreImagesInTransaction: a transaction's pre-images are written at its
// commit, each under the commit's time and its change's index in the
// applyOps entry (where a stream looks them up), and nothing is written
// under an earlier entry's time — where it would replace that entry's own
// pre-image.
func TestPreImagesInTransaction(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	on := bsoncore.NewDocumentBuilder().AppendDocument("changeStreamPreAndPostImages", bsoncore.NewDocumentBuilder().AppendBoolean("enabled", true).Build()).Build()
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"a", 1}}), doc(t, bson.D{{"_id", 2}, {"a", 2}})}, true); err != nil {
		t.Fatal(err)
	}
	els, _ := on.Elements()
	if _, err := e.CollMod(ns, els, nil); err != nil {
		t.Fatal(err)
	}
	// A plain update first: its pre-image is under its own entry's time.
	if _, err := e.Replace(ns, val(t, 1), doc(t, bson.D{{"_id", 1}, {"a", 11}})); err != nil {
		t.Fatal(err)
	}
	ents := oplogEntries(t, e)
	pts, pinc := ents[len(ents)-1].Lookup("ts").Timestamp()
	plain := hlc.New(pts, pinc)
	coll := e.Catalog().Collection(ns.DB, ns.Coll)
	tx := e.Begin()
	if err := txnSet(t, e, tx, ns, 1, 100); err != nil {
		t.Fatal(err)
	}
	if err := txnSet(t, e, tx, ns, 2, 200); err != nil {
		t.Fatal(err)
	}
	ts, err := tx.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	preA := func(at hlc.Timestamp, idx int64) int32 {
		t.Helper()
		got, found, err := e.Get(nil, PreImagesNS, PreImageID(coll.UUID.Data, at, idx))
		if err != nil || !found {
			t.Fatalf("pre-image (%v, %d): found %v, %v", at, idx, found, err)
		}
		return bsoncore.Document(got).Lookup("preImage", "a").Int32()
	}
	if a := preA(plain, 0); a != 1 {
		t.Errorf("the plain update's pre-image has a=%d, want 1 (a transaction overwrote it?)", a)
	}
	if a := preA(ts, 0); a != 11 {
		t.Errorf("the transaction's change 0 pre-image has a=%d, want 11", a)
	}
	if a := preA(ts, 1); a != 2 {
		t.Errorf("the transaction's change 1 pre-image has a=%d, want 2", a)
	}
}

// TestRemoveExpiredPreImages: with expireAfterSeconds set, the remover
// deletes the pre-images whose operationTime is that old (by the engine's
// clock) and keeps the younger; unset, age alone removes none; and a
// pre-image whose change is older than the oldest oplog entry goes once
// the oplog is trimmed past it, as MongoDB's remover does.
func TestRemoveExpiredPreImages(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	ns := Namespace{"db", "c"}
	on := bsoncore.NewDocumentBuilder().AppendDocument("changeStreamPreAndPostImages", bsoncore.NewDocumentBuilder().AppendBoolean("enabled", true).Build()).Build()
	if err := e.CreateCollection(ns, bson.Raw(on)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"a", 0}})}, true); err != nil {
		t.Fatal(err)
	}
	set := func(a int) { t.Helper(); replaceA(t, e, ns, a) }
	count := func() int {
		t.Helper()
		r, err := e.NewReader(PreImagesNS)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c, err := r.Docs(KeyRange{}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		n := 0
		for c.Next() {
			n++
		}
		return n
	}
	set(1) // operationTime now
	now = now.Add(100 * time.Second)
	set(2) // 100 s later
	if n := count(); n != 2 {
		t.Fatalf("%d pre-images, want 2", n)
	}
	now = now.Add(50 * time.Second)
	if n, err := e.RemoveExpiredPreImages(now, 0); err != nil || n != 0 {
		t.Fatalf("without expireAfterSeconds: removed %d (%v), want 0", n, err)
	}
	if n, err := e.RemoveExpiredPreImages(now, 100*time.Second); err != nil || n != 1 || count() != 1 {
		t.Fatalf("expireAfterSeconds 100 at +150 s: removed %d (%v), %d left; want 1, 1", n, err, count())
	}
	// Trim the oplog past the second change: its pre-image goes too.
	e.SetOplogSize(4 << 10)
	pad := string(make([]byte, 200))
	for i := range 100 {
		if _, err := e.Insert(Namespace{"db", "other"}, []bsoncore.Document{doc(t, bson.D{{"_id", i}, {"p", pad}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.trimOplog(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.RemoveExpiredPreImages(now, 0); err != nil || n != 1 || count() != 0 {
		t.Fatalf("after the oplog's trim: removed %d (%v), %d left; want 1, 0", n, err, count())
	}
}

// replaceA replaces ns's document 1 by {_id: 1, a: a}.
func replaceA(t *testing.T, e *Engine, ns Namespace, a int) {
	t.Helper()
	if _, err := e.Modify(ns, []bsoncore.Value{val(t, 1)}, true, func(int, bsoncore.Document) (Action, error) {
		return Action{Replace: doc(t, bson.D{{"_id", 1}, {"a", a}})}, nil
	}); err != nil {
		t.Fatal(err)
	}
}
