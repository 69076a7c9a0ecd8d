package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// TestInsertUniqueAgainstModel checks _id uniqueness (and so the "Tail
// bound" shortcut that skips the uniqueness read of keys above a
// collection's last one) against a map: random batches of rising, repeated
// and old ids, deletes of the last document, drops, and reopens that start
// the bounds afresh. A batch's ids below the bound are read in one pass
// first (prefetchIDs), so repeats within a batch check the prefetched
// answers against the batch's own writes.
func TestInsertUniqueAgainstModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	e := openEngine(t, dir)
	model := map[int32]bool{}
	next := int32(0) // rising ids come from here
	maxID := func() (int32, bool) {
		m, ok := int32(-1), false
		for id := range model {
			if id > m {
				m, ok = id, true
			}
		}
		return m, ok
	}
	for step := range 300 {
		switch op := rng.IntN(20); {
		case op == 0:
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = openEngine(t, dir)
		case op == 1:
			if _, err := e.DropCollection(users); err != nil {
				t.Fatal(err)
			}
			clear(model)
		case op < 4:
			if id, ok := maxID(); ok {
				if _, err := e.Delete(users, val(t, id)); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			}
		default:
			ordered := rng.IntN(2) == 0
			var ids []int32
			for range 1 + rng.IntN(8) {
				switch rng.IntN(4) {
				case 0, 1:
					next += int32(rng.IntN(3)) // sometimes repeats the last
					ids = append(ids, next)
				case 2:
					ids = append(ids, next+1) // often the next batch's first id
				default:
					ids = append(ids, rng.Int32N(next+1)) // an old id
				}
			}
			docs := make([]bsoncore.Document, len(ids))
			for i, id := range ids {
				docs[i] = doc(t, bson.D{{Key: "_id", Value: id}})
			}
			res, err := e.Insert(users, docs, ordered)
			if err != nil {
				t.Fatal(err)
			}
			var wantDup []int
			inserted := 0
			for i, id := range ids {
				if model[id] {
					wantDup = append(wantDup, i)
					if ordered {
						break
					}
					continue
				}
				model[id] = true
				inserted++
			}
			var gotDup []int
			for _, we := range res.WriteErrors {
				var me *mongoerr.Error
				if !errors.As(we.Err, &me) || me.Code != mongoerr.DuplicateKey {
					t.Fatalf("step %d: insert %v: error %v, want only duplicate keys", step, ids, we.Err)
				}
				gotDup = append(gotDup, we.Index)
			}
			if res.Inserted != inserted || !slices.Equal(gotDup, wantDup) {
				t.Fatalf("step %d: insert %v (ordered %v): inserted %d, duplicates at %v; want %d, %v", step, ids, ordered, res.Inserted, gotDup, inserted, wantDup)
			}
		}
	}
	var want []string
	for id := range model {
		want = append(want, fmt.Sprint(id))
	}
	got := scanIDs(t, e, users)
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("stored ids %v, model %v", got, want)
	}
}

// TestConcurrentInsertsOfRisingIDs races inserts of the same rising ids from
// several clients, so requests of one commit group see each other's writes
// through the bound: each id is stored once and refused to every other.
func TestConcurrentInsertsOfRisingIDs(t *testing.T) {
	e := openEngine(t, "")
	const clients, ids = 4, 200
	var wg sync.WaitGroup
	inserted := make([]int, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				res, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: id}})}, true)
				if err != nil {
					t.Error(err)
					return
				}
				inserted[c] += res.Inserted
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range inserted {
		total += n
	}
	if total != ids {
		t.Fatalf("%d inserts succeeded for %d distinct ids", total, ids)
	}
	if got := len(scanIDs(t, e, users)); got != ids {
		t.Fatalf("%d documents stored, want %d", got, ids)
	}
}

// TestDroppedIDsAreForgotten checks that the caches keyed by collection and
// index id (tail bounds, parsed specs, access counters) lose a collection's
// entries when it is dropped, so they do not grow with every collection
// ever made, and that a later collection still gets correct uniqueness.
func TestDroppedIDsAreForgotten(t *testing.T) {
	e := openEngine(t, t.TempDir())
	cached := func(id uint64) (tail, spec, usage bool) {
		// The tail bounds belong to the pipeline goroutine: read them there.
		_ = e.db.Write(func(*storage.Txn) error {
			_, tail = e.tails.last[id]
			return nil
		})
		_, spec = e.specs.m.Load(id)
		_, usage = e.usage.m.Load(id)
		return
	}
	for round := range 3 {
		ns := Namespace{DB: "db", Coll: fmt.Sprintf("c%d", round)}
		if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"a", 1}})}, true); err != nil {
			t.Fatal(err)
		}
		coll := e.Catalog().Collection(ns.DB, ns.Coll)
		ixID := coll.Indexes[0].ID
		if tail, _, _ := cached(coll.ID); !tail {
			t.Fatalf("round %d: no tail bound after an insert", round)
		}
		if _, spec, usage := cached(ixID); !spec || !usage {
			t.Fatalf("round %d: index spec cached %v, counter %v after createIndexes", round, spec, usage)
		}
		if _, err := e.DropCollection(ns); err != nil {
			t.Fatal(err)
		}
		for _, id := range []uint64{coll.ID, ixID} {
			if tail, spec, usage := cached(id); tail || spec || usage {
				t.Fatalf("round %d: id %d still cached after the drop: tail %v, spec %v, counter %v", round, id, tail, spec, usage)
			}
		}
		res, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}}), doc(t, bson.D{{"_id", 1}})}, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 1 || len(res.WriteErrors) != 1 {
			t.Fatalf("round %d: recreated collection: %d inserted, %d errors; want 1 and the duplicate refused", round, res.Inserted, len(res.WriteErrors))
		}
	}
}
