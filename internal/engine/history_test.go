package engine

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// TestValidateChecksHistory damages a versioned collection's history in
// each way CheckHistory knows (a version gone from the middle, the newest
// version gone, a time key gone) and expects Validate to report it, after
// a clean history validated clean.
func TestValidateChecksHistory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tx *storage.Txn, collID uint64, idKey []byte)
		want   string
	}{
		{"a version missing in the middle", func(tx *storage.Txn, c uint64, id []byte) { tx.Delete(storage.HistoryKey(nil, c, id, 2)) }, "follows version"},
		{"the newest version missing", func(tx *storage.Txn, c uint64, id []byte) { tx.Delete(storage.HistoryKey(nil, c, id, 3)) }, "is not its newest version"},
		{"a time key missing", func(tx *storage.Txn, c uint64, id []byte) {
			p := storage.Prefix(nil, storage.SpaceHistoryTime, c)
			tx.DeleteRange(p, storage.PrefixEnd(p))
		}, "no time key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ns := Namespace{"db", "c"}
			opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
			if err := e.CreateCollection(ns, opts); err != nil {
				t.Fatal(err)
			}
			id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
			for n := range 3 {
				d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: n}})
				if n == 0 {
					_, err = e.Insert(ns, []bsoncore.Document{d}, true)
				} else {
					_, err = e.Replace(ns, id, d)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
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
