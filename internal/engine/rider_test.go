package engine

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// TestPutPlain: PutInTxn into a plain server collection
// (config.transactions: no options, no index but _id's, no oplog entries)
// sets the key without reading it (invariant "Plain puts need no read")
// and stores what the read-first path stores: an insert when the _id is
// new, a replacement when it is not, nothing when the request fails; the
// tail bound rises past a new key, so a later insert of that _id is still
// a duplicate. Once the collection has a secondary index, puts read first
// and keep it (CheckIndexes). After each step: every _id's n as stored,
// and inserts of the _ids that must be duplicates.
func TestPutPlain(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"config", "transactions"}
	rec := func(id, n int) bsoncore.Document {
		return doc(t, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: n}})
	}
	put := func(docs ...bsoncore.Document) func() error {
		return func() error {
			return e.WriteRider(func(tx *storage.Txn) error {
				for _, d := range docs {
					if err := e.PutInTxn(tx, ns, d); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	failed := errors.New("the request fails")
	for _, st := range []struct {
		name string
		do   func() error
		err  error       // do's error
		want map[int]int // _id → n stored (absent: not stored)
	}{
		{"a put makes the collection and inserts", put(rec(1, 1)), nil, map[int]int{1: 1}},
		{"a user insert below", func() error { _, err := e.Insert(ns, []bsoncore.Document{rec(0, 0)}, true); return err }, nil, map[int]int{0: 0, 1: 1}},
		{"a put above the tail bound inserts and raises it", put(rec(5, 1)), nil, map[int]int{0: 0, 1: 1, 5: 1}},
		{"a put of a stored _id replaces", put(rec(1, 2)), nil, map[int]int{0: 0, 1: 2, 5: 1}},
		{"two puts of one _id in a request: the last", put(rec(5, 2), rec(5, 3)), nil, map[int]int{0: 0, 1: 2, 5: 3}},
		{"a failed request stores nothing", func() error {
			return e.WriteRider(func(tx *storage.Txn) error {
				if err := e.PutInTxn(tx, ns, rec(7, 1)); err != nil {
					return err
				}
				if err := e.PutInTxn(tx, ns, rec(1, 9)); err != nil {
					return err
				}
				return failed
			})
		}, failed, map[int]int{0: 0, 1: 2, 5: 3}},
		{"a put after a user's delete inserts again", func() error {
			if _, err := e.Delete(ns, val(t, 1)); err != nil {
				return err
			}
			return put(rec(1, 4))()
		}, nil, map[int]int{0: 0, 1: 4, 5: 3}},
		{"with a secondary index a put reads first and keeps it", func() error {
			spec := doc(t, bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}})
			if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec}); err != nil {
				return err
			}
			return put(rec(1, 5), rec(8, 1))()
		}, nil, map[int]int{0: 0, 1: 5, 5: 3, 8: 1}},
	} {
		if err := st.do(); !errors.Is(err, st.err) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.err)
		}
		for _, id := range []int{0, 1, 5, 7, 8} {
			got, found, err := e.Get(nil, ns, val(t, id))
			if err != nil {
				t.Fatal(err)
			}
			want, ok := st.want[id]
			if found != ok {
				t.Fatalf("%s: _id %d stored %v, want %v", st.name, id, found, ok)
			}
			if !found {
				continue
			}
			if n, _ := bsoncore.Document(got).Lookup("n").AsInt64OK(); n != int64(want) {
				t.Errorf("%s: _id %d has n %d, want %d", st.name, id, n, want)
			}
			// A stored _id stays unique: the tail bound was raised past
			// every put that inserted.
			ires, err := e.Insert(ns, []bsoncore.Document{rec(id, -1)}, true)
			if err == nil && len(ires.WriteErrors) > 0 {
				err = ires.WriteErrors[0].Err
			}
			if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
				t.Fatalf("%s: inserting _id %d again: %v, want DuplicateKey", st.name, id, err)
			}
		}
		if err := e.CheckIndexes(ns); err != nil {
			t.Errorf("%s: %v", st.name, err)
		}
	}
}
