package engine

import (
	"context"
	"encoding/hex"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// TestIndexEntryValues pins the values of index entries: the type bits of
// the key (empty when it loses nothing), after the _id in a unique index;
// and, for an index made before type bits existed (no catalog flag), the
// old values, which writes keep making so that such indexes stay valid.
func TestIndexEntryValues(t *testing.T) {
	for _, typeBits := range []bool{true, false} {
		newIndexTypeBits = typeBits
		e := openEngine(t, "")
		ns := Namespace{"tb", "c"}
		if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{
			spec(t, bson.D{{"key", bson.D{{"u", 1}}}, {"name", "u_1"}, {"unique", true}}),
			spec(t, bson.D{{"key", bson.D{{"n", 1}}}, {"name", "n_1"}}),
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Insert(ns, []bsoncore.Document{
			doc(t, bson.D{{"_id", 1}, {"u", int64(5)}, {"n", 2.0}}),
			doc(t, bson.D{{"_id", 2}, {"u", int32(6)}, {"n", "s"}}),
		}, true); err != nil {
			t.Fatal(err)
		}
		if err := e.CheckIndexes(ns); err != nil {
			t.Fatalf("typeBits %v: %v", typeBits, err)
		}
		r, err := e.NewReader(ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range r.Indexes() {
			if info.TypeBits != typeBits {
				t.Errorf("index %s: TypeBits %v, want %v", info.Name, info.TypeBits, typeBits)
			}
		}
		coll := e.Catalog().Collection(ns.DB, ns.Coll)
		snap := e.db.NewSnapshot()
		var got []string
		for _, ix := range coll.Indexes {
			prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
			it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				v, _ := it.Value()
				got = append(got, ix.Name+"="+hex.EncodeToString(v))
			}
			it.Close()
		}
		snap.Close()
		r.Close()
		// _id 1 encodes as 3100, _id 2 as 3180 (keystring numbers).
		want := []string{"u_1=310003", "u_1=3180", "n_1=05", "n_1="}
		if !typeBits {
			want = []string{"u_1=3100", "u_1=3180", "n_1=", "n_1="}
		}
		if len(got) != len(want) {
			t.Fatalf("typeBits %v: entries %v, want %v", typeBits, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("typeBits %v: entries %v, want %v", typeBits, got, want)
				break
			}
		}
	}
	newIndexTypeBits = true
}
