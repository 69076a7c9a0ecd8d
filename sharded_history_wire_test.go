package cairn_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestShardedVersionedMigration moves chunks of versioned collections
// (issues #21, #23) through a real router and two shards, and checks that
// the documents' histories moved with them: every write goes both to the
// sharded collection and to an unsharded control collection, before,
// during (concurrent writers, compare-and-swap on the version field, one
// writer's in transactions) and
// after a moveChunk there and back, and then
//   - $versions through the router equals the control's, version by
//     version (_id, _v, op, doc), tombstones and a document re-inserted
//     after its delete included;
//   - an as-of read through the router at each sampled version's
//     validFrom returns that version (nothing for a tombstone), which is
//     the control's version of the same number;
//   - orphan histories put on a shard directly (a live and a deleted
//     document of a chunk it does not own) show no versions through the
//     router;
//   - each shard holds the history of exactly the documents of the chunks
//     it owns (the donor's range deletion took the moved histories,
//     deleted documents' too), and validate finds its history following
//     its documents.
//
// One case shards on _id; the other on a field k ordered against _id, so
// the range (on k) and the history keyspace (on _id) disagree.
func TestShardedVersionedMigration(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	sc := startShardedCluster(t, 2)
	ctx := context.Background()
	c := routerClient(t, sc.router)
	for _, s := range sc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "vm"}, {Key: "primaryShard", Value: "sh0"}})
	shards := []*mongo.Client{
		directClient(t, sc.shards[0][strings.IndexByte(sc.shards[0], '/')+1:]),
		directClient(t, sc.shards[1][strings.IndexByte(sc.shards[1], '/')+1:]),
	}
	const n = 40
	for _, tc := range []struct {
		name, key string
	}{
		{"id", "_id"},
		{"k", "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(tc.name))))
			db := c.Database("vm")
			sharded, control := db.Collection("s_"+tc.name), db.Collection("c_"+tc.name)
			for _, name := range []string{sharded.Name(), control.Name()} {
				if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: name}, {Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.key != "_id" {
				if _, err := sharded.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: tc.key, Value: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			ns := "vm." + sharded.Name()
			runAdmin(t, c, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: tc.key, Value: 1}}}})
			// k runs against _id: document i has k = n-1-i, so the
			// chunk [k: n/2, MaxKey) holds the _ids below n/2.
			keyOf := func(i int) int {
				if tc.key == "_id" {
					return i
				}
				return n - 1 - i
			}
			moving := func(i int) bool { return keyOf(i) >= n/2 }
			runAdmin(t, c, bson.D{{Key: "split", Value: ns}, {Key: "middle", Value: bson.D{{Key: tc.key, Value: n / 2}}}})
			w := &pairWriter{t: t, a: sharded, b: control, keyOf: keyOf}

			// Before: every document inserted and updated, some
			// deleted (on both sides of the split), one re-inserted.
			for i := range n {
				w.insert(i, keyOf(i))
			}
			for i := range n {
				for range rng.IntN(4) {
					w.update(i, rng.IntN(1000))
				}
			}
			for _, i := range []int{1, 2, n - 2, n - 3} {
				w.delete(i)
			}
			w.insert(2, keyOf(2))

			// During: writers update their own documents with
			// compare-and-swap while the chunk moves.
			moveDone := make(chan error, 1)
			go func() {
				moveDone <- c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: ns}, {Key: "find", Value: bson.D{{Key: tc.key, Value: n / 2}}},
					{Key: "to", Value: "sh1"}, {Key: "_waitForDelete", Value: true}}).Err()
			}()
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for wi := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(wi+10)))
					for {
						select {
						case <-stop:
							return
						default:
						}
						i := wi + 3*r.IntN(n/3)
						if i == 1 || i == n-2 || i == n-3 {
							continue // deleted
						}
						if wi == 0 {
							w.updateInTxn(c, i, r.IntN(1000)) // the catch-up reads its applyOps entry
						} else {
							w.update(i, r.IntN(1000))
						}
					}
				}()
			}
			err := <-moveDone
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("moveChunk: %v", err)
			}

			// After: writes to the moved documents continue their
			// numbering; a delete and a stale compare-and-swap.
			for i := range n {
				if i != 1 && i != n-2 && i != n-3 {
					w.update(i, rng.IntN(1000))
				}
			}
			w.delete(5)
			w.staleCAS(7)
			// Orphan histories on sh0 — a live document and a deleted
			// one of the chunk sh1 owns, written to the shard directly
			// — show no versions through the router (the shard's
			// SHARDING_FILTER judges a history by its newest live
			// version), and then go.
			orphans := shards[0].Database("vm").Collection(sharded.Name())
			for _, id := range []int32{1000, 1001} {
				if _, err := orphans.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := orphans.DeleteOne(ctx, bson.D{{Key: "_id", Value: int32(1001)}}); err != nil {
				t.Fatal(err)
			}
			compareHistories(t, sharded, control, rng, keyOf)
			if err := orphans.Database().RunCommand(ctx, bson.D{{Key: "_historyPurge", Value: orphans.Name()}, {Key: "ids", Value: bson.A{int32(1000), int32(1001)}}}).Err(); err != nil {
				t.Fatal(err)
			}
			checkShardHistories(t, shards, "vm", sharded.Name(), tc.key, func(id int32) int {
				if moving(int(id)) {
					return 1
				}
				return 0
			})

			// And back: sh1 donates, and its range deletion purges.
			runAdmin(t, c, bson.D{{Key: "moveChunk", Value: ns}, {Key: "find", Value: bson.D{{Key: tc.key, Value: n / 2}}},
				{Key: "to", Value: "sh0"}, {Key: "_waitForDelete", Value: true}})
			w.update(3, 1)
			w.update(n-1, 1)
			compareHistories(t, sharded, control, rng, keyOf)
			checkShardHistories(t, shards, "vm", sharded.Name(), tc.key, func(int32) int { return 0 })
			if t.Failed() {
				t.Logf("seed %d", seed)
			}
		})
	}
}

// pairWriter applies each write to two collections (the sharded one
// first): the same writes make the same versions on both.
type pairWriter struct {
	t     *testing.T
	a, b  *mongo.Collection
	keyOf func(i int) int // k of document i
	seq   atomic.Int32    // makes every update's value new (a no-op update makes no version)
}

// filter names document i by _id and k, so that a write to the
// collection sharded on k is targeted: one by _id alone goes to every
// shard, and a shard does not filter orphans from writes yet (shardsvr's
// doc), so it could change a migration's pending copy.
func (w *pairWriter) filter(i int, more ...bson.E) bson.D {
	return append(bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(w.keyOf(i))}}, more...)
}

func (w *pairWriter) both(what string, fn func(c *mongo.Collection) (int64, error)) {
	na, err := fn(w.a)
	if err != nil {
		w.t.Errorf("%s on %s: %v", what, w.a.Name(), err)
		return
	}
	nb, err := fn(w.b)
	if err != nil || na != nb {
		w.t.Errorf("%s: %s changed %d, %s %d (%v)", what, w.a.Name(), na, w.b.Name(), nb, err)
	}
}

func (w *pairWriter) insert(i, k int) {
	w.both(fmt.Sprintf("insert %d", i), func(c *mongo.Collection) (int64, error) {
		_, err := c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(k)}, {Key: "x", Value: int32(-1)}})
		return 1, err
	})
}

// update is a compare-and-swap: it reads the document's version from the
// sharded collection and updates where _v is still that, on both, setting
// x to a value it never had.
func (w *pairWriter) update(i, x int) {
	x = x*100000 + int(w.seq.Add(1))
	var cur struct {
		V int64 `bson:"_v"`
	}
	if err := w.a.FindOne(context.Background(), w.filter(i)).Decode(&cur); err != nil {
		w.t.Errorf("read %d for its version: %v", i, err)
		return
	}
	w.both(fmt.Sprintf("update %d at _v %d", i, cur.V), func(c *mongo.Collection) (int64, error) {
		res, err := c.UpdateOne(context.Background(), w.filter(i, bson.E{Key: "_v", Value: cur.V}), bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: int32(x)}}}})
		if err != nil {
			return 0, err
		}
		if res.ModifiedCount != 1 {
			return 0, fmt.Errorf("the compare-and-swap at _v %d matched %d", cur.V, res.MatchedCount)
		}
		return res.ModifiedCount, nil
	})
}

// updateInTxn is update with the sharded collection's write in a
// transaction through the router.
func (w *pairWriter) updateInTxn(c *mongo.Client, i, x int) {
	ctx := context.Background()
	x = x*100000 + int(w.seq.Add(1))
	var cur struct {
		V int64 `bson:"_v"`
	}
	if err := w.a.FindOne(ctx, w.filter(i)).Decode(&cur); err != nil {
		w.t.Errorf("read %d for its version: %v", i, err)
		return
	}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: int32(x)}}}}
	sess, err := c.StartSession()
	if err != nil {
		w.t.Error(err)
		return
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		res, err := w.a.UpdateOne(sc, w.filter(i, bson.E{Key: "_v", Value: cur.V}), set)
		if err == nil && res.ModifiedCount != 1 {
			err = fmt.Errorf("the compare-and-swap at _v %d matched %d", cur.V, res.MatchedCount)
		}
		return nil, err
	})
	if err != nil {
		w.t.Errorf("update %d at _v %d in a transaction: %v", i, cur.V, err)
		return
	}
	if res, err := w.b.UpdateOne(ctx, w.filter(i, bson.E{Key: "_v", Value: cur.V}), set); err != nil || res.ModifiedCount != 1 {
		w.t.Errorf("update %d at _v %d on the control: %v %v", i, cur.V, res, err)
	}
}

func (w *pairWriter) delete(i int) {
	w.both(fmt.Sprintf("delete %d", i), func(c *mongo.Collection) (int64, error) {
		res, err := c.DeleteOne(context.Background(), w.filter(i))
		if err != nil {
			return 0, err
		}
		return res.DeletedCount, nil
	})
}

// staleCAS updates at a version that is no longer the document's: it
// matches nothing on either side.
func (w *pairWriter) staleCAS(i int) {
	w.both(fmt.Sprintf("stale compare-and-swap of %d", i), func(c *mongo.Collection) (int64, error) {
		res, err := c.UpdateOne(context.Background(), w.filter(i, bson.E{Key: "_v", Value: int64(1)}), bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: int32(0)}}}})
		if err != nil {
			return 0, err
		}
		if res.MatchedCount != 0 {
			return 0, fmt.Errorf("a compare-and-swap at _v 1 matched %d", res.MatchedCount)
		}
		return 0, nil
	})
}

// versionsOf is a collection's $versions, by _id and version.
func versionsOf(t *testing.T, c *mongo.Collection) []bson.M {
	t.Helper()
	cur, err := c.Aggregate(context.Background(), bson.A{bson.D{{Key: "$versions", Value: bson.D{}}}, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}, {Key: "_v", Value: 1}}}}})
	if err != nil {
		t.Fatalf("$versions of %s: %v", c.Name(), err)
	}
	var out []bson.M
	if err := cur.All(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareHistories checks the sharded collection's $versions and as-of
// reads through the router against the control collection's.
//
// The as-of reads name the shard key, so they go to the owner alone: one
// scattered to a shard whose clock is behind the read's time is refused
// there (readConcern atClusterTime waits for no time, unlike
// afterClusterTime, and the router does not advance the shards' clocks).
func compareHistories(t *testing.T, sharded, control *mongo.Collection, rng *rand.Rand, keyOf func(int) int) {
	t.Helper()
	sv, cv := versionsOf(t, sharded), versionsOf(t, control)
	strip := func(vs []bson.M) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = fmt.Sprintf("%v %v %v %v", v["_id"], v["_v"], v["op"], v["doc"])
		}
		return out
	}
	ss, cs := strip(sv), strip(cv)
	if !reflect.DeepEqual(ss, cs) {
		for i := 0; i < max(len(ss), len(cs)); i++ {
			var a, b string
			if i < len(ss) {
				a = ss[i]
			}
			if i < len(cs) {
				b = cs[i]
			}
			if a != b {
				t.Fatalf("$versions differ from the control's at %d of %d/%d:\n sharded %s\n control %s", i, len(ss), len(cs), a, b)
			}
		}
	}
	// As-of reads at sampled versions' times.
	for range 12 {
		v := sv[rng.IntN(len(sv))]
		from := v["validFrom"].(bson.Timestamp)
		var res struct {
			Cursor struct {
				FirstBatch []bson.D `bson:"firstBatch"`
			} `bson:"cursor"`
		}
		err := sharded.Database().RunCommand(context.Background(), bson.D{{Key: "find", Value: sharded.Name()}, {Key: "filter", Value: bson.D{{Key: "_id", Value: v["_id"]}, {Key: "k", Value: int32(keyOf(int(v["_id"].(int32))))}}},
			{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: from}}}}).Decode(&res)
		if err != nil {
			t.Fatalf("as-of read of %v at %v: %v", v["_id"], from, err)
		}
		batch := res.Cursor.FirstBatch
		switch {
		case v["op"] == "delete" && len(batch) != 0:
			t.Fatalf("as-of read of %v at its delete %v: %v", v["_id"], from, batch)
		case v["op"] != "delete" && (len(batch) != 1 || !reflect.DeepEqual(batch[0], v["doc"])):
			t.Fatalf("as-of read of %v at %v (version %v): %v, want %v", v["_id"], from, v["_v"], batch, v["doc"])
		}
	}
}

// checkShardHistories reads each shard directly: the _ids with history
// there are exactly those whose chunk it owns (owner(id)), every document
// there has its history, and validate finds the history following the
// documents.
func checkShardHistories(t *testing.T, shards []*mongo.Client, dbName, coll, key string, owner func(id int32) int) {
	t.Helper()
	ctx := context.Background()
	for si, sh := range shards {
		db := sh.Database(dbName)
		var res bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: coll}}).Decode(&res); err != nil {
			if strings.Contains(err.Error(), "NamespaceNotFound") {
				continue
			}
			t.Fatalf("validate %s on shard %d: %v", coll, si, err)
		}
		if res["valid"] != true {
			t.Fatalf("validate %s on shard %d: %v", coll, si, res)
		}
		cur, err := db.Collection(coll).Aggregate(ctx, bson.A{bson.D{{Key: "$versions", Value: bson.D{}}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$_id"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []bson.M
		if err := cur.All(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		for _, d := range ids {
			if id := d["_id"].(int32); owner(id) != si {
				t.Fatalf("shard %d holds the history of _id %d, which shard %d owns (key %s)", si, id, owner(id), key)
			}
		}
	}
}
