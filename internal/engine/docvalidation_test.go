package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// TestValidOnCommit checks invariant "Valid on commit": a document is
// checked against the rules the working catalog holds when its request
// applies, not those of the published catalog the caller saw. A validator
// set earlier in the same pipeline request (so not yet published) already
// refuses the insert, and a replaced validator is not served from the
// compiled-rules cache.
func TestValidOnCommit(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if err := e.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	gte0 := bsoncore.Document(doc(t, bson.D{{"validator", bson.D{{"a", bson.D{{"$gte", 0}}}}}}))
	negative := doc(t, bson.D{{"_id", 1}, {"a", -1}})

	// One request sets the validator and then inserts: the insert must see it.
	p, err := prepareInsert(negative, e.idMaker(ns))
	if err != nil {
		t.Fatal(err)
	}
	var insertErr error
	err = e.db.Write(func(tx *storage.Txn) error {
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if err := e.cat.SetOptions(tx, ns.DB, ns.Coll, bson.Raw(gte0)); err != nil {
			return err
		}
		insertErr = e.insertOne(tx, ns, coll.ID, storage.DocKey(nil, coll.ID, p.idKey), p, false)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if mongoerr.CodeOf(insertErr) != mongoerr.DocumentValidationFailure {
		t.Fatalf("insert after a validator set in the same request: %v, want DocumentValidationFailure", insertErr)
	}

	// A valid document goes in (and compiles the rules into the cache);
	// after collMod replaces them, the cached rules must not be used.
	if res, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 2}, {"a", 5}})}, true); err != nil || len(res.WriteErrors) > 0 {
		t.Fatalf("valid insert: %v %v", err, res.WriteErrors)
	}
	lt0 := bsoncore.Document(doc(t, bson.D{{"validator", bson.D{{"a", bson.D{{"$lt", 0}}}}}}))
	elems, _ := lt0.Elements()
	if err := e.SetCollectionOptions(ns, elems); err != nil {
		t.Fatal(err)
	}
	res, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 3}, {"a", 5}}), doc(t, bson.D{{"_id", 4}, {"a", -5}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 1 || len(res.WriteErrors) != 1 || res.WriteErrors[0].Index != 0 ||
		mongoerr.CodeOf(res.WriteErrors[0].Err) != mongoerr.DocumentValidationFailure {
		t.Fatalf("after collMod: inserted %d, errors %v; want the document valid only under the old rules refused", res.Inserted, res.WriteErrors)
	}
	if got := scanIDs(t, e, ns); len(got) != 2 {
		t.Fatalf("collection holds %v, want _ids 2 and 4", got)
	}
}

// TestValidOnCommitRace races writers against the collMod that makes their
// writes invalid. Every write is a read-modify-write of one counter that
// sets "v": "bad", which the new validator {v: "good"} refuses. Writes the
// pipeline applies before the collMod commit with it or earlier; writes
// applied after it must fail. So once SetCollectionOptions has returned,
// the counter may never move again, although the writers keep trying; a
// check against the rules a writer saw when it queued would let late
// writes through.
func TestValidOnCommitRace(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "race"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", "c"}, {"n", int64(0)}, {"v", "bad"}})}, true); err != nil {
		t.Fatal(err)
	}
	id := val(t, "c")
	stop := make(chan struct{})
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := e.Modify(ns, []bsoncore.Value{id}, true, func(_ int, cur bsoncore.Document) (Action, error) {
					next, _ := bson.Marshal(bson.D{{"_id", "c"}, {"n", cur.Lookup("n").Int64() + 1}, {"v", "bad"}})
					return Action{Replace: next}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Errors) > 0 {
					if mongoerr.CodeOf(res.Errors[0].Err) != mongoerr.DocumentValidationFailure {
						t.Error(res.Errors[0].Err)
						return
					}
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	rule := bsoncore.Document(doc(t, bson.D{{"validator", bson.D{{"v", "good"}}}}))
	elems, _ := rule.Elements()
	if err := e.SetCollectionOptions(ns, elems); err != nil {
		t.Fatal(err)
	}
	counter := func() int64 {
		d, _, err := e.Get(nil, ns, id)
		if err != nil {
			t.Fatal(err)
		}
		return bsoncore.Document(d).Lookup("n").Int64()
	}
	at := counter()
	for refused.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if after := counter(); after != at || at == 0 {
		t.Fatalf("counter was %d when collMod returned and %d after %d refused writes; want it unchanged (and moved before)", at, after, refused.Load())
	}
}
