package cairn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Writes that commit around a chunk migration's critical section (issue
// #21): a real router and two shards (real `cairn serve` processes), the
// donor's fail points hangBeforeEnteringCriticalSection and
// hangBeforeLeavingCriticalSection to stop a migration at the edges of
// its critical section, and after every case each acknowledged write on
// exactly one shard once range deletion is done. MongoDB 7.0's rule, which
// Cairn follows: a transaction holds its collection's lock from its first
// write until it commits or aborts, prepared or not, and the donor's
// critical section takes that collection's lock, waiting at most
// migrationLockAcquisitionMaxWaitMS (500 ms by default) — the migration
// waits for the transaction, or gives up with LockTimeout and the chunk
// stays; writes that arrive during the critical section wait for it and
// then go to the new owner (StaleConfig, the router retries).

// critCluster is the cluster of TestMigrationCriticalSection: collection
// mcs.c sharded on {k: 1} in chunks of a hundred keys, [0, 100) … [700,
// MaxKey), all on the donor but the last, which is on the recipient.
type critCluster struct {
	t                  *testing.T
	kc                 *killableCluster
	c                  *mongo.Client
	coll               *mongo.Collection
	donor, recipient   int // shard indexes
	donorN, recipientN string
}

// shardCmd runs cmd on shard i's member directly.
func (cc *critCluster) shardCmd(i int, db string, cmd bson.D) *mongo.SingleResult {
	_, host, _ := strings.Cut(cc.kc.shards[i], "/")
	cl := directClient(cc.t, host)
	defer func() { _ = cl.Disconnect(context.Background()) }()
	return cl.Database(db).RunCommand(context.Background(), cmd)
}

// failPoint turns a fail point of the donor on or off and returns how many
// times it was entered before.
func (cc *critCluster) failPoint(name string, on bool) int64 {
	cc.t.Helper()
	mode := any("off")
	if on {
		mode = "alwaysOn"
	}
	var r struct {
		Count int64 `bson:"count"`
	}
	if err := cc.shardCmd(cc.donor, "admin", bson.D{{Key: "configureFailPoint", Value: name}, {Key: "mode", Value: mode}}).Decode(&r); err != nil {
		cc.t.Fatalf("configureFailPoint %s: %v", name, err)
	}
	return r.Count
}

// waitFailPoint waits until the donor entered fail point name once more
// than before.
func (cc *critCluster) waitFailPoint(name string, before int64) {
	cc.t.Helper()
	if err := cc.shardCmd(cc.donor, "admin", bson.D{{Key: "waitForFailPoint", Value: name}, {Key: "timesEntered", Value: before + 1}, {Key: "maxTimeMS", Value: 60000}}).Err(); err != nil {
		cc.t.Fatalf("waitForFailPoint %s: %v", name, err)
	}
}

// lockWait sets the donor's migrationLockAcquisitionMaxWaitMS.
func (cc *critCluster) lockWait(ms int) {
	cc.t.Helper()
	if err := cc.shardCmd(cc.donor, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "migrationLockAcquisitionMaxWaitMS", Value: ms}}).Err(); err != nil {
		cc.t.Fatal(err)
	}
}

// moveChunk moves the chunk of key k to the recipient and waits for the
// donor's range deletion.
func (cc *critCluster) moveChunk(k int) error {
	return cc.c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "moveChunk", Value: "mcs.c"},
		{Key: "find", Value: bson.D{{Key: "k", Value: k}}}, {Key: "to", Value: cc.recipientN}, {Key: "_waitForDelete", Value: true}}).Err()
}

// moving starts moveChunk(k) held at fail point hang (on the donor) and
// returns once the migration is there; the caller turns hang off.
func (cc *critCluster) moving(k int, hang string) chan error {
	cc.t.Helper()
	entered := cc.failPoint(hang, true)
	done := make(chan error, 1)
	go func() { done <- cc.moveChunk(k) }()
	cc.waitFailPoint(hang, entered)
	return done
}

// still checks that ch has no answer within d: what it waits for is held.
func still(t *testing.T, ch chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s did not wait: %v", what, err)
	case <-time.After(d):
	}
}

// owner is the shard that owns key k by the config servers' map (explain).
func (cc *critCluster) owner(k int) string {
	cc.t.Helper()
	return shardOf(cc.t, cc.coll.Database(), "c", bson.D{{Key: "k", Value: k}})
}

// copies counts the documents matching filter on each shard, read
// directly (without a shardVersion: orphans count).
func (cc *critCluster) copies(filter bson.D) [2]int64 {
	cc.t.Helper()
	var out [2]int64
	for i := range out {
		_, host, _ := strings.Cut(cc.kc.shards[i], "/")
		cl := directClient(cc.t, host)
		n, err := cl.Database("mcs").Collection("c").CountDocuments(context.Background(), filter)
		_ = cl.Disconnect(context.Background())
		if err != nil {
			cc.t.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// once checks that the document of key k is on its owner only, once, with
// v as given (through the router too).
func (cc *critCluster) once(k, v int) {
	cc.t.Helper()
	own := cc.owner(k)
	got := cc.copies(bson.D{{Key: "k", Value: k}})
	want := [2]int64{}
	if own == cc.donorN {
		want[cc.donor] = 1
	} else {
		want[cc.recipient] = 1
	}
	if got != want {
		cc.t.Fatalf("k=%d: copies on [sh0 sh1] %v, want %v (owner %s)", k, got, want, own)
	}
	var d struct {
		V int `bson:"v"`
	}
	if err := cc.coll.FindOne(context.Background(), bson.D{{Key: "k", Value: k}}).Decode(&d); err != nil || d.V != v {
		cc.t.Fatalf("k=%d through the router: v=%d, %v; want v=%d", k, d.V, err, v)
	}
}

func newCritCluster(t *testing.T) *critCluster {
	kc := startKillableCluster(t, 2, "--setParameter", "enableTestCommands=1")
	c := routerClient(t, kc.router)
	for _, s := range kc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "balancerStop", Value: 1}})
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "mcs"}})
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "mcs.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
	cc := &critCluster{t: t, kc: kc, c: c, coll: c.Database("mcs").Collection("c")}
	for k := 0; k <= 700; k += 100 {
		runAdmin(t, c, bson.D{{Key: "split", Value: "mcs.c"}, {Key: "middle", Value: bson.D{{Key: "k", Value: k}}}})
	}
	cc.donorN = cc.owner(0)
	cc.donor = int(cc.donorN[len(cc.donorN)-1] - '0')
	cc.recipient = 1 - cc.donor
	cc.recipientN = fmt.Sprintf("sh%d", cc.recipient)
	if err := cc.moveChunk(700); err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestMigrationCriticalSection: transactions (plain and prepared) and
// retryable writes that commit around a migration's critical section.
func TestMigrationCriticalSection(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers and a router")
	}
	cc := newCritCluster(t)
	ctx := context.Background()
	coll := cc.coll

	t.Run("the migration waits for an open transaction", func(t *testing.T) {
		cc.t = t
		cc.lockWait(60000)
		sess := startSession(t, cc.c)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		if _, err := coll.InsertOne(sctx, bson.D{{Key: "k", Value: 150}, {Key: "v", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		moved := cc.moving(150, "hangBeforeEnteringCriticalSection")
		cc.failPoint("hangBeforeEnteringCriticalSection", false)
		// Without the transaction's hold the migration would now copy
		// nothing of it, commit, and delete the range — and the commit
		// below would put k=150 on the donor after that: lost.
		still(t, moved, 500*time.Millisecond, "the migration, while a transaction that wrote its chunk is open,")
		if err := sess.CommitTransaction(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		if err := <-moved; err != nil {
			t.Fatalf("moveChunk after the commit: %v", err)
		}
		if own := cc.owner(150); own != cc.recipientN {
			t.Fatalf("k=150 is on %s, want %s", own, cc.recipientN)
		}
		cc.once(150, 1)
	})

	t.Run("a transaction that outlives migrationLockAcquisitionMaxWaitMS", func(t *testing.T) {
		cc.t = t
		cc.lockWait(200)
		sess := startSession(t, cc.c)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		if _, err := coll.InsertOne(sctx, bson.D{{Key: "k", Value: 250}, {Key: "v", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, "moveChunk behind an open transaction", cc.moveChunk(250), 24) // LockTimeout
		if own := cc.owner(250); own != cc.donorN {
			t.Fatalf("the chunk moved to %s", own)
		}
		if err := sess.CommitTransaction(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		cc.once(250, 1)
		if err := cc.moveChunk(250); err != nil {
			t.Fatal(err)
		}
		cc.once(250, 1)
	})

	t.Run("a prepared transaction holds the critical section back", func(t *testing.T) {
		cc.t = t
		// A second collection with its one chunk on the recipient, so
		// that a transaction writing both is prepared on both shards
		// (and the recipient's prepared writes are not in mcs.c, whose
		// readers a prepared transaction there would hold back).
		runAdmin(t, cc.c, bson.D{{Key: "shardCollection", Value: "mcs.p"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
		runAdmin(t, cc.c, bson.D{{Key: "moveChunk", Value: "mcs.p"}, {Key: "find", Value: bson.D{{Key: "k", Value: 1}}},
			{Key: "to", Value: cc.recipientN}, {Key: "_waitForDelete", Value: true}})
		other := coll.Database().Collection("p")
		cc.lockWait(200)
		// The migration first, held once its recipient is steady (a
		// prepared transaction holds back every reader of its collection
		// in Cairn, the clone's too: engine txn_prepare.go).
		moved := cc.moving(350, "hangBeforeEnteringCriticalSection")
		// k=350 on the donor first (it coordinates), then mcs.p on the
		// recipient: held by the coordinator after both prepared.
		sess := startSession(t, cc.c)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		if _, err := coll.InsertOne(sctx, bson.D{{Key: "k", Value: 350}, {Key: "v", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.InsertOne(sctx, bson.D{{Key: "k", Value: 1}, {Key: "v", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		entered := cc.failPoint("hangBeforeWritingDecision", true)
		committed := make(chan error, 1)
		go func() { committed <- sess.CommitTransaction(ctx) }()
		cc.waitFailPoint("hangBeforeWritingDecision", entered)
		cc.failPoint("hangBeforeEnteringCriticalSection", false)
		wantCode(t, "moveChunk behind a prepared transaction", <-moved, 24) // LockTimeout
		cc.failPoint("hangBeforeWritingDecision", false)
		if err := <-committed; err != nil {
			t.Fatalf("commit: %v", err)
		}
		if own := cc.owner(350); own != cc.donorN {
			t.Fatalf("the chunk moved to %s", own)
		}
		cc.once(350, 1)
		var d struct {
			V int `bson:"v"`
		}
		if err := other.FindOne(ctx, bson.D{{Key: "k", Value: 1}}).Decode(&d); err != nil || d.V != 1 {
			t.Fatalf("the transaction's other document: v=%d, %v", d.V, err)
		}
		cc.lockWait(60000)
		if err := cc.moveChunk(350); err != nil {
			t.Fatalf("moveChunk after the commit: %v", err)
		}
		cc.once(350, 1)
	})

	t.Run("a retryable write during the critical section", func(t *testing.T) {
		cc.t = t
		cc.lockWait(60000)
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: 450}, {Key: "v", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		moved := cc.moving(450, "hangBeforeLeavingCriticalSection") // committed, writes held
		updated := make(chan error, 1)
		go func() {
			res, err := coll.UpdateOne(ctx, bson.D{{Key: "k", Value: 450}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}})
			if err == nil && (res.MatchedCount != 1 || res.ModifiedCount != 1) {
				err = fmt.Errorf("matched %d, modified %d; want 1, 1", res.MatchedCount, res.ModifiedCount)
			}
			updated <- err
		}()
		still(t, updated, 300*time.Millisecond, "a write of the chunk in its critical section")
		cc.failPoint("hangBeforeLeavingCriticalSection", false)
		if err := <-updated; err != nil {
			t.Fatalf("the retryable update: %v", err)
		}
		if err := <-moved; err != nil {
			t.Fatal(err)
		}
		cc.once(450, 1)
	})

	t.Run("writes by _id alone during a migration", func(t *testing.T) {
		cc.t = t
		cc.lockWait(60000)
		// Documents of [600, 700) by _id; the recipient owns [700, MaxKey)
		// and more, so a write by _id alone goes to both shards, and the
		// recipient holds copies (orphans until the commit) once steady.
		ids := []string{"upd", "del", "fam", "late", "lateFam"}
		for i, id := range ids {
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: 610 + i}, {Key: "v", Value: 0}}); err != nil {
				t.Fatal(err)
			}
		}
		byID := func(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }
		inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}
		moved := cc.moving(650, "hangBeforeEnteringCriticalSection")
		if got := cc.copies(byID("upd")); got[cc.recipient] != 1 {
			t.Fatalf("the steady recipient has no copy of upd: %v", got)
		}
		res, err := coll.UpdateOne(ctx, byID("upd"), inc)
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("updateOne by _id: %+v, %v; want one matched and modified", res, err)
		}
		del, err := coll.DeleteOne(ctx, byID("del"))
		if err != nil || del.DeletedCount != 1 {
			t.Fatalf("deleteOne by _id: %+v, %v; want one deleted", del, err)
		}
		var fam struct {
			V int `bson:"v"`
		}
		if err := coll.FindOneAndUpdate(ctx, byID("fam"), inc).Decode(&fam); err != nil || fam.V != 0 {
			t.Fatalf("findAndModify by _id: v=%d, %v; want the document before, v=0", fam.V, err)
		}
		// Then writes that meet the critical section after the commit:
		// they wait on both shards, then go to the new owner once.
		entered := cc.failPoint("hangBeforeLeavingCriticalSection", true)
		cc.failPoint("hangBeforeEnteringCriticalSection", false)
		cc.waitFailPoint("hangBeforeLeavingCriticalSection", entered)
		late := make(chan error, 2)
		go func() {
			res, err := coll.UpdateOne(ctx, byID("late"), inc)
			if err == nil && (res.MatchedCount != 1 || res.ModifiedCount != 1) {
				err = fmt.Errorf("matched %d, modified %d; want 1, 1", res.MatchedCount, res.ModifiedCount)
			}
			late <- err
		}()
		go func() {
			var d struct {
				V int `bson:"v"`
			}
			err := coll.FindOneAndUpdate(ctx, byID("lateFam"), inc).Decode(&d)
			if err == nil && d.V != 0 {
				err = fmt.Errorf("v=%d before, want 0", d.V)
			}
			late <- err
		}()
		still(t, late, 300*time.Millisecond, "a write by _id in the critical section")
		cc.failPoint("hangBeforeLeavingCriticalSection", false)
		for range 2 {
			if err := <-late; err != nil {
				t.Fatalf("a write by _id after the commit: %v", err)
			}
		}
		if err := <-moved; err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			want := [2]int64{}
			v := 1
			if id == "del" {
				v = -1
			} else {
				want[cc.recipient] = 1
			}
			if got := cc.copies(byID(id)); got != want {
				t.Fatalf("%s: copies on [sh0 sh1] %v, want %v", id, got, want)
			}
			if v < 0 {
				continue
			}
			var d struct {
				V int `bson:"v"`
			}
			if err := coll.FindOne(ctx, byID(id)).Decode(&d); err != nil || d.V != v {
				t.Fatalf("%s through the router: v=%d, %v; want %d", id, d.V, err, v)
			}
		}
	})

	t.Run("a stale router's writes during shardCollection", func(t *testing.T) {
		cc.t = t
		// A second router caches mcs.h as unsharded (a write there), so
		// it sends its writes to the primary shard with UNSHARDED. The
		// primary shard's flush is held after the config write: without
		// a critical section the primary would admit them by its cached
		// table, though the hashed chunks put half of them elsewhere —
		// orphans, invisible through a router.
		port := freePorts(t, 1)[0]
		proc := startRouterProc(t, cc.kc.bin, cc.kc.cfg, port)
		t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
		stale := routerClient(t, fmt.Sprintf("127.0.0.1:%d", port)).Database("mcs").Collection("h")
		if _, err := stale.InsertOne(ctx, bson.D{{Key: "k", Value: -1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := stale.DeleteMany(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		entered := cc.failPoint("hangBeforeFlushRoutingTable", true) // the primary shard is the donor
		sharded := make(chan error, 1)
		go func() {
			sharded <- cc.c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "mcs.h"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err()
		}()
		cc.waitFailPoint("hangBeforeFlushRoutingTable", entered)
		const n = 20
		inserted := make(chan error, 1)
		go func() {
			var docs []any
			for k := range n {
				docs = append(docs, bson.D{{Key: "k", Value: k}})
			}
			_, err := stale.InsertMany(ctx, docs)
			inserted <- err
		}()
		still(t, inserted, 300*time.Millisecond, "a stale router's insert between shardCollection's config write and the primary's refresh")
		cc.failPoint("hangBeforeFlushRoutingTable", false)
		if err := <-sharded; err != nil {
			t.Fatalf("shardCollection: %v", err)
		}
		if err := <-inserted; err != nil {
			t.Fatalf("the stale router's insert: %v", err)
		}
		h := cc.c.Database("mcs").Collection("h")
		if got, err := h.CountDocuments(ctx, bson.D{}); err != nil || got != n {
			t.Fatalf("documents through the router: %d, %v; want %d (the rest are orphans)", got, err, n)
		}
		var onShards int64
		for i := range 2 {
			_, host, _ := strings.Cut(cc.kc.shards[i], "/")
			cl := directClient(t, host)
			c, err := cl.Database("mcs").Collection("h").CountDocuments(ctx, bson.D{})
			_ = cl.Disconnect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c == 0 {
				t.Fatalf("shard %d holds none of the hashed collection's documents: the test's keys do not spread", i)
			}
			onShards += c
		}
		if onShards != n {
			t.Fatalf("%d documents on the shards, want %d", onShards, n)
		}
	})

	t.Run("a retryable write retried after its chunk moved", func(t *testing.T) {
		cc.t = t
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: 550}, {Key: "v", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		sess := startSession(t, cc.c)
		sctx := mongo.NewSessionContext(ctx, sess)
		// txnNumber given by hand: the second run is the driver's retry
		// of a write whose reply was lost. (High: the driver's pooled
		// session may have used lower numbers in the cases before.)
		const txn = int64(1) << 40
		inc := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: 550}}},
			{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}}}}}, {Key: "txnNumber", Value: txn}}
		var first, again struct {
			N         int `bson:"n"`
			NModified int `bson:"nModified"`
		}
		if err := coll.Database().RunCommand(sctx, inc).Decode(&first); err != nil || first.N != 1 {
			t.Fatalf("the write: %+v, %v", first, err)
		}
		if err := cc.moveChunk(550); err != nil {
			t.Fatal(err)
		}
		// The recipient answers the retry from the record the migration
		// brought (the donor's session history), without running it.
		if err := coll.Database().RunCommand(sctx, inc).Decode(&again); err != nil || again != first {
			t.Fatalf("the retry after the move: %+v, %v; want %+v", again, err, first)
		}
		cc.once(550, 1)
		// A new write of the session runs on the recipient.
		inc[len(inc)-1].Value = txn + 1
		if err := coll.Database().RunCommand(sctx, inc).Err(); err != nil {
			t.Fatal(err)
		}
		cc.once(550, 2)
	})
}
