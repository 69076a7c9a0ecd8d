package bench

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// TestPebbleOplogFloorWritesEntries: the pebble-oplog floor sets one oplog
// entry, in MongoDB's shape, beside each insert and update (an insert's o
// the document; a $set's o a one-field diff, a replacement's the record,
// o2 the _id), under ascending keys of the oplog keyspace; the plain
// pebble floor sets none.
func TestPebbleOplogFloorWritesEntries(t *testing.T) {
	rec := func(id, v string) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendString("_id", id).AppendString("field0", v).Build()
	}
	for _, tc := range []struct {
		name  string
		oplog bool
		want  []string // each entry's op and o2's _id
	}{
		{"pebble", false, nil},
		{"pebble-oplog", true, []string{"i", "i", "u user1", "u user2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pf, err := openPebbleFloor(true, tc.oplog)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = pf.close(ctx) }()
			if err := pf.insert(ctx, []bsoncore.Document{rec("user1", "a"), rec("user2", "b")}); err != nil {
				t.Fatal(err)
			}
			if err := pf.update(ctx, &update{key: "user1", field: "field0", value: []byte("x"), style: UpdateSet}); err != nil {
				t.Fatal(err)
			}
			if err := pf.update(ctx, &update{key: "user2", record: rec("user2", "y"), style: UpdateReplace}); err != nil {
				t.Fatal(err)
			}
			it, err := pf.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{storage.SpaceOplog}, UpperBound: []byte{storage.SpaceOplog + 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = it.Close() }()
			var got []string
			var o []bsoncore.Document
			for ok := it.First(); ok; ok = it.Next() {
				e := bsoncore.Document(append([]byte(nil), it.Value()...))
				if err := e.Validate(); err != nil {
					t.Fatalf("entry %d: %v", len(got), err)
				}
				for _, f := range []string{"ts", "t", "v", "op", "ns", "ui", "o", "wall"} {
					if _, err := e.LookupErr(f); err != nil {
						t.Errorf("entry %d has no %s: %s", len(got), f, e)
					}
				}
				s := e.Lookup("op").StringValue()
				if id, ok := e.Lookup("o2", "_id").StringValueOK(); ok {
					s += " " + id
				}
				got = append(got, s)
				o = append(o, e.Lookup("o").Document())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("entries %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d is %q, want %q", i, got[i], tc.want[i])
				}
			}
			if !tc.oplog {
				return
			}
			if v := o[0].Lookup("field0").StringValue(); v != "a" {
				t.Errorf("the first insert's o has field0 %q", v)
			}
			if v := o[2].Lookup("diff", "u", "field0").StringValue(); v != "x" || o[2].Lookup("$v").Int32() != 2 {
				t.Errorf("the $set's o is %s, want {$v: 2, diff: {u: {field0: x}}}", o[2])
			}
			if v := o[3].Lookup("field0").StringValue(); v != "y" {
				t.Errorf("the replacement's o is %s", o[3])
			}
		})
	}
}
