package cairn_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestShardCachesAndStaleRouters: the shards cache database versions and
// routing tables (package shardsvr, invariant "Database versions are the
// config servers'"), so a router that missed a drop must still be refused
// by the shard it wrongly targets and retry on the right one. Router A
// drops and creates again; router B, which read before, is stale. Built
// with -tags invariants (make invariants), the servers check every cached
// database version against the config servers. A stale router after a
// migration is TestShardedVersionedReadsAndWrites's (staleBatchedWrites)
// and internal/router's TestStaleConfigRefreshes.
func TestShardCachesAndStaleRouters(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers")
	}
	sc := startShardedCluster(t, 2)
	ctx := context.Background()
	a := routerClient(t, sc.router)
	portB := freePorts(t, 1)[0]
	routerB := startRouterProc(t, sc.bin, sc.cfg, portB)
	t.Cleanup(func() {
		_ = routerB.Process.Signal(syscall.SIGTERM)
		_ = routerB.Wait()
	})
	b := routerClient(t, "127.0.0.1:"+strconv.Itoa(portB))
	for _, s := range sc.shards {
		runAdmin(t, a, bson.D{{Key: "addShard", Value: s}})
	}
	sh0 := directClient(t, sc.shards[0][strings.IndexByte(sc.shards[0], '/')+1:])
	defer sh0.Disconnect(ctx)
	count := func(what string, c *mongo.Collection, filter bson.D, want int64) {
		t.Helper()
		if n, err := c.CountDocuments(ctx, filter); err != nil || n != want {
			t.Fatalf("%s: %d documents (%v), want %d", what, n, err, want)
		}
	}
	insert := func(what string, c *mongo.Collection, doc bson.D) {
		t.Helper()
		if _, err := c.InsertOne(ctx, doc); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// dropDatabase: d's primary was sh0; after A drops it and creates it
	// again on sh1, B (which read d on sh0) must land on sh1.
	runAdmin(t, a, bson.D{{Key: "enableSharding", Value: "d"}, {Key: "primaryShard", Value: "sh0"}})
	insert("insert through A", a.Database("d").Collection("c"), bson.D{{Key: "_id", Value: 1}})
	count("B reads d.c", b.Database("d").Collection("c"), bson.D{}, 1)
	if err := a.Database("d").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	runAdmin(t, a, bson.D{{Key: "enableSharding", Value: "d"}, {Key: "primaryShard", Value: "sh1"}})
	insert("insert through A after the drop", a.Database("d").Collection("c"), bson.D{{Key: "_id", Value: 2}})
	count("stale B reads d.c after dropDatabase (sh0 must refuse B's old databaseVersion)", b.Database("d").Collection("c"), bson.D{{Key: "_id", Value: 2}}, 1)
	insert("stale B inserts", b.Database("d").Collection("c"), bson.D{{Key: "_id", Value: 3}})
	count("A reads B's insert", a.Database("d").Collection("c"), bson.D{}, 2)
	count("sh0 directly", sh0.Database("d").Collection("c"), bson.D{}, 0)

	// drop of a sharded collection: e.s on {k: 1}, [50, MaxKey) on sh1.
	// A drops it and writes it again, unsharded (on the primary, sh0); B,
	// which routed k: 60 to sh1, must be refused there.
	runAdmin(t, a, bson.D{{Key: "enableSharding", Value: "e"}, {Key: "primaryShard", Value: "sh0"}})
	runAdmin(t, a, bson.D{{Key: "shardCollection", Value: "e.s"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
	runAdmin(t, a, bson.D{{Key: "split", Value: "e.s"}, {Key: "middle", Value: bson.D{{Key: "k", Value: 50}}}})
	runAdmin(t, a, bson.D{{Key: "moveChunk", Value: "e.s"}, {Key: "find", Value: bson.D{{Key: "k", Value: 50}}}, {Key: "to", Value: "sh1"}, {Key: "_waitForDelete", Value: true}})
	insert("insert k: 60 through A", a.Database("e").Collection("s"), bson.D{{Key: "k", Value: 60}, {Key: "v", Value: "old"}})
	count("B reads k: 60", b.Database("e").Collection("s"), bson.D{{Key: "k", Value: 60}}, 1)
	if err := a.Database("e").Collection("s").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	insert("insert k: 60 through A after the drop", a.Database("e").Collection("s"), bson.D{{Key: "k", Value: 60}, {Key: "v", Value: "new"}})
	count("stale B reads k: 60 after the drop (sh1 must refuse B's old shardVersion)", b.Database("e").Collection("s"), bson.D{{Key: "k", Value: 60}, {Key: "v", Value: "new"}}, 1)
	insert("stale B inserts k: 70", b.Database("e").Collection("s"), bson.D{{Key: "k", Value: 70}})
	count("sh0 directly holds both (unsharded now)", sh0.Database("e").Collection("s"), bson.D{}, 2)

	// shardCollection: B read f.h unsharded (on sh0); A shards it hashed,
	// which gives sh1 chunks too. B's inserts must follow the chunks: sh0
	// must not admit B's UNSHARDED version any more.
	runAdmin(t, a, bson.D{{Key: "enableSharding", Value: "f"}, {Key: "primaryShard", Value: "sh0"}})
	count("B reads f.h", b.Database("f").Collection("h"), bson.D{}, 0)
	runAdmin(t, a, bson.D{{Key: "shardCollection", Value: "f.h"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	for i := range 20 {
		insert("stale B inserts into f.h", b.Database("f").Collection("h"), bson.D{{Key: "_id", Value: i}})
	}
	count("A reads B's inserts through the chunks", a.Database("f").Collection("h"), bson.D{}, 20)
}

// TestShardedDefaultCollation: a collection with a case-insensitive
// default collation, sharded on {k: 1} (which needs collation: simple, as
// mongos), chunks [MinKey, "m") on sh0 and ["m", MaxKey) on sh1. A query
// without a collation runs under the default: an equality on a string
// shard key value reaches both shards ("ZEBRA" equals sh0's "Zebra" and
// sh1's "zebra"), and a sort merges the shards' streams in the
// collation's order, not the simple one.
func TestShardedDefaultCollation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers")
	}
	sc := startShardedCluster(t, 2)
	ctx := context.Background()
	c := routerClient(t, sc.router)
	for _, s := range sc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "g"}, {Key: "primaryShard", Value: "sh0"}})
	ci := bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}
	if err := c.Database("g").RunCommand(ctx, bson.D{{Key: "create", Value: "ci"}, {Key: "collation", Value: ci}}).Err(); err != nil {
		t.Fatal(err)
	}
	err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "g.ci"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}}).Err()
	wantCode(t, "shardCollection of a collection with a default collation, without collation: simple", err, 2)
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "g.ci"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}})
	var entry bson.Raw
	if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: "g.ci"}}).Decode(&entry); err != nil {
		t.Fatal(err)
	}
	if loc, _ := entry.Lookup("defaultCollation", "locale").StringValueOK(); loc != "en" {
		t.Fatalf("config.collections entry %s: want defaultCollation {locale: en, …}", entry)
	}
	runAdmin(t, c, bson.D{{Key: "split", Value: "g.ci"}, {Key: "middle", Value: bson.D{{Key: "k", Value: "m"}}}})
	runAdmin(t, c, bson.D{{Key: "moveChunk", Value: "g.ci"}, {Key: "find", Value: bson.D{{Key: "k", Value: "m"}}}, {Key: "to", Value: "sh1"}, {Key: "_waitForDelete", Value: true}})
	coll := c.Database("g").Collection("ci")
	for _, k := range []string{"apple", "Mango", "Pear", "Zebra", "nut", "zebra"} {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: k}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "k", Value: "ZEBRA"}}); err != nil || n != 2 {
		t.Errorf("count {k: ZEBRA} under the default collation: %d (%v), want 2 (Zebra on sh0, zebra on sh1)", n, err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{"APPLE", "ZEBRA"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var found []bson.M
	if err := cur.All(ctx, &found); err != nil || len(found) != 3 {
		t.Errorf("find {k: {$in: [APPLE, ZEBRA]}}: %d documents (%v), want 3", len(found), err)
	}
	res, err := coll.UpdateMany(ctx, bson.D{{Key: "k", Value: "zEbRa"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}})
	if err != nil || res.ModifiedCount != 2 {
		t.Errorf("updateMany {k: zEbRa}: %+v (%v), want 2 modified", res, err)
	}
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "k", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var sorted []struct{ K string }
	if err := cur.All(ctx, &sorted); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range sorted {
		order = append(order, strings.ToLower(d.K))
	}
	if got := strings.Join(order, " "); got != "apple mango nut pear zebra zebra" {
		t.Errorf("find sorted by k through the router: %s, want the collation's order apple mango nut pear zebra zebra", got)
	}
	var distinct []string
	if err := coll.Distinct(ctx, "k", bson.D{}).Decode(&distinct); err != nil {
		t.Fatal(err)
	}
	if len(distinct) != 5 {
		t.Errorf("distinct k through the router: %v, want 5 values (Zebra on sh0 and zebra on sh1 are one under the collation)", distinct)
	}
}
