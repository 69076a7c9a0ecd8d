package engine

import (
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestModifyIsAtomic increments one counter from many goroutines through
// Modify; any lost update shows as a final count below the total.
func TestModifyIsAtomic(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "counters"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", "c"}, {"n", int64(0)}})}, true); err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 200
	id := val(t, "c")
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := e.Modify(ns, []bsoncore.Value{id}, true, func(_ int, cur bsoncore.Document) (Action, error) {
					n := cur.Lookup("n").Int64()
					next, _ := bson.Marshal(bson.D{{"_id", "c"}, {"n", n + 1}})
					return Action{Replace: next}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _, _ := e.Get(nil, ns, id)
	if n := bsoncore.Document(got).Lookup("n").Int64(); n != workers*each {
		t.Fatalf("counter = %d, want %d: updates were lost", n, workers*each)
	}
}

func TestModifyCounts(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "m"}
	one := doc(t, bson.D{{"_id", 1}, {"v", "x"}})
	if _, err := e.Insert(ns, []bsoncore.Document{one, doc(t, bson.D{{"_id", 2}})}, true); err != nil {
		t.Fatal(err)
	}
	ids := []bsoncore.Value{val(t, 1), val(t, 2), val(t, 3)}
	res, err := e.Modify(ns, ids, false, func(i int, cur bsoncore.Document) (Action, error) {
		switch i {
		case 0:
			return Action{Replace: one}, nil // identical bytes: a no-op
		case 1:
			return Action{Delete: true}, nil
		}
		if cur != nil {
			t.Errorf("document 3 does not exist but the callback got %s", cur)
		}
		return Action{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 2 || res.Modified != 0 || res.Deleted != 1 {
		t.Fatalf("result %+v, want matched 2, modified 0 (no-op), deleted 1", res)
	}
}

// TestModifyKeepStored: the image KeepStored returns is what a read finds
// afterwards, _id first even when the replacement put it elsewhere or left
// it out, and the current bytes for a replacement equal to them.
func TestModifyKeepStored(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "kept"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"v", "x"}})}, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		replace bson.D
	}{
		{"id moved last", bson.D{{"v", "y"}, {"_id", 1}}},
		{"id left out", bson.D{{"v", "z"}}},
		{"equal to the stored bytes", bson.D{{"_id", 1}, {"v", "z"}}},
	} {
		res, err := e.Modify(ns, []bsoncore.Value{val(t, 1)}, true, func(_ int, cur bsoncore.Document) (Action, error) {
			return Action{Replace: doc(t, tc.replace), KeepStored: true}, nil
		})
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("%s: %v %v", tc.name, err, res.Errors)
		}
		got, _, _ := e.Get(nil, ns, val(t, 1))
		if string(res.Stored) != string(got) {
			t.Errorf("%s: Stored %v, read back %v", tc.name, res.Stored, bsoncore.Document(got))
		}
	}
}
