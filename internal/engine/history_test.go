package engine

import (
	"context"
	"encoding/binary"
	"log/slog"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
		{"the newest version missing", func(tx *storage.Txn, c uint64, id []byte) { tx.Delete(historyKeyOf(t, tx, c, id, 3)) }, "is not its newest version"},
		{"a version key missing", func(tx *storage.Txn, c uint64, id []byte) {
			p := storage.Prefix(nil, storage.SpaceHistoryVersion, c)
			tx.DeleteRange(p, storage.PrefixEnd(p))
		}, "no version key"},
		{"a version key too many", func(tx *storage.Txn, c uint64, id []byte) {
			tx.Set(storage.HistoryVersionKey(nil, c, id, 9), make([]byte, 8))
		}, "4 version keys for 3 versions"},
		{"a version never stamped", func(tx *storage.Txn, c uint64, id []byte) {
			key := historyKeyOf(t, tx, c, id, 3)
			rec, _, _ := tx.Get(nil, key)
			tx.Delete(key)
			tx.Set(storage.HistoryKey(nil, c, id, pendingTS, 3), rec)
		}, "never given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ns, id := Namespace{"db", "c"}, versionedDoc(t, e, 3, nil)
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

// historyKeyOf finds version v's history key through its version key.
func historyKeyOf(t *testing.T, tx *storage.Txn, collID uint64, idKey []byte, v uint64) []byte {
	ts, found, err := tx.Get(nil, storage.HistoryVersionKey(nil, collID, idKey, v))
	if err != nil || !found || len(ts) != 8 {
		t.Fatalf("version key of %d: %x %v %v", v, ts, found, err)
	}
	return storage.HistoryKey(nil, collID, idKey, binary.BigEndian.Uint64(ts), v)
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
