package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// TestValidateChecksHistory damages a versioned collection's history in
// each way CheckHistory knows (a version gone from the middle, the newest
// version gone, version keys gone or extra, a version left at the
// pending time) and expects Validate to report it, after
// a clean history validated clean.
func TestValidateChecksHistory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tx *storage.Txn, collID uint64, idKey []byte)
		want   string
	}{
		{"a version missing in the middle", func(tx *storage.Txn, c uint64, id []byte) { tx.Delete(historyKeyOf(t, tx, c, id, 2)) }, "follows version"},
		{"the newest version missing", func(tx *storage.Txn, c uint64, id []byte) { tx.Delete(historyKeyOf(t, tx, c, id, 40)) }, "is not its newest version"},
		{"a version key missing", func(tx *storage.Txn, c uint64, id []byte) {
			p := storage.Prefix(nil, storage.SpaceHistoryVersion, c)
			tx.DeleteRange(p, storage.PrefixEnd(p))
		}, "no version key"},
		{"a version key too many", func(tx *storage.Txn, c uint64, id []byte) {
			tx.Set(storage.HistoryVersionKey(nil, c, id, 9), make([]byte, 8))
		}, "2 version keys where 1 versions have one"},
		{"a version never stamped", func(tx *storage.Txn, c uint64, id []byte) {
			key := historyKeyOf(t, tx, c, id, 40)
			rec, _, _ := tx.Get(nil, key)
			tx.Delete(key)
			tx.Set(storage.HistoryKey(nil, c, id, pendingTS, 40), rec)
		}, "never given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ns, id := Namespace{"db", "c"}, versionedDoc(t, e, 40, nil) // version 32 has a version key
			v, err := e.Validate(context.Background(), ns)
			if err != nil || !v.Valid() {
				t.Fatalf("clean history: %+v %v", v, err)
			}
			collID := e.Catalog().Collection("db", "c").ID
			if err := e.db.Write(func(tx *storage.Txn) error {
				tc.damage(tx, collID, appendIDKey(nil, id))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			v, err = e.Validate(context.Background(), ns)
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid() || !strings.Contains(v.History, tc.want) {
				t.Fatalf("damaged history: valid %v, history %q, want %q", v.Valid(), v.History, tc.want)
			}
		})
	}
}

// historyKeyOf finds version v's history key (seekVersion).
func historyKeyOf(t *testing.T, tx *storage.Txn, collID uint64, idKey []byte, v uint64) []byte {
	hid := append(storage.Prefix(nil, storage.SpaceHistory, collID), idKey...)
	it, err := tx.NewIter(hid, storage.PrefixEnd(hid))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if ok, err := seekVersion(tx, it, collID, idKey, hid, v); err != nil || !ok {
		t.Fatalf("version %d: %v %v", v, ok, err)
	}
	return append([]byte(nil), it.Key()...)
}

// versionedDoc makes db.c a versioned collection of e and writes n
// versions of the document {_id: 1, n: k} (k = 0…n-1), calling after(k)
// after each; it returns the _id.
func versionedDoc(t *testing.T, e *Engine, n int, after func(k int)) bsoncore.Value {
	t.Helper()
	ns := Namespace{"db", "c"}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(ns, opts); err != nil {
		t.Fatal(err)
	}
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
	for k := range n {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: k}})
		var err error
		if k == 0 {
			_, err = e.Insert(ns, []bsoncore.Document{d}, true)
		} else {
			_, err = e.Replace(ns, id, d)
		}
		if err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after(k)
		}
	}
	return id
}

// TestVersionBounds checks $versions' version bounds (seekVersion: sparse
// version keys, then steps) against a filter of the whole history, for
// bounds around the kept version keys, above the newest and below the
// oldest, before and after retention pruned the oldest versions; and
// revertDocument finding a version the same way.
func TestVersionBounds(t *testing.T) {
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"db", "b"}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}, {Key: "minVersionsToKeep", Value: 50}}}})
	if err := e.CreateCollection(ns, opts); err != nil {
		t.Fatal(err)
	}
	idOf := func(i int32) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
	}
	for _, d := range []struct{ id, versions int32 }{{1, 100}, {2, 40}, {3, 70}} {
		for k := range d.versions {
			doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: d.id}, {Key: "n", Value: k}})
			if k == 0 {
				_, err = e.Insert(ns, []bsoncore.Document{doc}, true)
			} else {
				_, err = e.Replace(ns, idOf(d.id), doc)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	type got struct{ v, validTo uint64 }
	scan := func(b VersionBounds) []got {
		t.Helper()
		r, err := e.NewReader(ns)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c, err := r.Versions(b)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var out []got
		for {
			v, ok, err := c.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return out
			}
			if b.IDKey == nil && string(v.IDKey) != string(appendIDKey(nil, idOf(1))) {
				continue
			}
			out = append(out, got{v.V, v.ValidTo})
		}
	}
	bounds := []uint64{0, 1, 2, 31, 32, 33, 50, 51, 63, 64, 65, 96, 99, 100, 101, 200, math.MaxUint64}
	check := func(when string) {
		t.Helper()
		all := scan(AllVersions)
		for _, lo := range bounds {
			for _, hi := range bounds {
				var want []got
				for _, g := range all {
					if g.v >= lo && g.v <= hi {
						want = append(want, g)
					}
				}
				have := scan(VersionBounds{IDKey: appendIDKey(nil, idOf(1)), VLo: lo, VHi: hi})
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Fatalf("%s: versions in [%d, %d]: %v, want %v", when, lo, hi, have, want)
				}
			}
		}
	}
	check("every version kept")
	if _, err := e.PruneHistory(ns, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if all := scan(AllVersions); len(all) != 50 || all[49].v != 51 {
		t.Fatalf("after pruning: %v, want versions 100…51", all)
	}
	check("versions 1…50 pruned")
	if _, err := e.RevertDocument(ns, idOf(1), 40); mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Fatalf("revert to a pruned version: %v, want BadValue", err)
	}
	for _, v := range []uint64{64, 51, 99} {
		next, err := e.RevertDocument(ns, idOf(1), v)
		if err != nil {
			t.Fatalf("revert to version %d: %v", v, err)
		}
		doc, _, _ := e.Get(nil, ns, idOf(1))
		if n := bsoncore.Document(doc).Lookup("n").Int32(); n != int32(v-1) || versionOf(doc, "_v") != next {
			t.Fatalf("reverted to version %d: %s (new version %d)", v, bsoncore.Document(doc), next)
		}
	}
	if err := e.CheckHistory(ns); err != nil {
		t.Fatal(err)
	}
}
