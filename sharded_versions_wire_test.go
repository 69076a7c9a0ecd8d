package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestShardedVersionedReadsAndWrites runs what a shard does with the
// versions a router attaches, through a real router and three shards.
//
// Reads carry a shardVersion, and a shard answers them with the documents
// of the chunks it owns only (MongoDB's SHARDING_FILTER). Orphans —
// documents of a range a shard does not own, as a migration's copy before
// its commit or a donated range before its deletion leaves them — are put
// on a shard directly here; find, getMore, count, distinct and aggregate
// through the router leave them out, and explain shows the stage with its
// chunkSkips. A client reading the shard directly, without a shardVersion,
// still sees them (as on mongod).
//
// Batched writes: a shard answers a stale version as the write error of
// the statements it stopped (StaleConfig at their index, ok: 1), and the
// router retries those alone after a refresh: an ordered insert and an
// ordered $inc batch whose first statement went to an up-to-date shard and
// whose next met a stale one apply each statement once (a retry of the
// whole batch inserted the first document twice — a duplicate key — and
// incremented twice).
func TestShardedVersionedReadsAndWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts five servers")
	}
	sc := startShardedCluster(t, 3)
	ctx := context.Background()
	c := routerClient(t, sc.router)
	for _, s := range sc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "app"}, {Key: "primaryShard", Value: "sh0"}})
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "app.o"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
	coll := c.Database("app").Collection("o")
	var docs []any
	for k := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("d%d", k)}, {Key: "k", Value: k}, {Key: "tag", Value: fmt.Sprintf("t%d", k%5)}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	runAdmin(t, c, bson.D{{Key: "split", Value: "app.o"}, {Key: "middle", Value: bson.D{{Key: "k", Value: 50}}}})
	runAdmin(t, c, bson.D{{Key: "moveChunk", Value: "app.o"}, {Key: "find", Value: bson.D{{Key: "k", Value: 50}}}, {Key: "to", Value: "sh1"}, {Key: "_waitForDelete", Value: true}})

	// Orphans on sh0, which owns [MinKey, 50) only: k in [50, 100), as a
	// migration's leftovers would be, with _ids and a tag of their own.
	sh0 := directClient(t, sc.shards[0][strings.IndexByte(sc.shards[0], '/')+1:])
	defer sh0.Disconnect(ctx)
	var orphans []any
	for k := 50; k < 80; k++ {
		orphans = append(orphans, bson.D{{Key: "_id", Value: fmt.Sprintf("orphan%d", k)}, {Key: "k", Value: k}, {Key: "tag", Value: "orphan"}})
	}
	if _, err := sh0.Database("app").Collection("o").InsertMany(ctx, orphans); err != nil {
		t.Fatal(err)
	}
	if n, err := sh0.Database("app").Collection("o").CountDocuments(ctx, bson.D{}); err != nil || n != 80 {
		t.Fatalf("sh0 holds %d documents (%v), want its 50 and the 30 orphans: a read without a shardVersion is not filtered", n, err)
	}

	// find, in small batches so that getMore runs the filtered plan too.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Errorf("find through the router: %d documents, want 100 (orphans must not count)", len(got))
	}
	for _, d := range got {
		if d["tag"] == "orphan" {
			t.Fatalf("find through the router returned an orphan: %v", d)
		}
	}
	// A find by _id, as FindOne sends it (a shard's express path must not
	// answer it: the router's shardVersion makes it filter orphans), finds
	// no orphan.
	for k := range 30 {
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("orphan%d", k)}}).Err()
		if !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("FindOne of orphan%d through the router: %v, want no document", k, err)
		}
	}
	for _, tc := range []struct {
		filter bson.D
		want   int64
	}{{bson.D{}, 100}, {bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 40}}}}, 60}, {bson.D{{Key: "tag", Value: "orphan"}}, 0}} {
		if n, err := coll.CountDocuments(ctx, tc.filter); err != nil || n != tc.want {
			t.Errorf("countDocuments %v: %d (%v), want %d", tc.filter, n, err, tc.want)
		}
		var out struct {
			N int64 `bson:"n"`
		}
		if err := c.Database("app").RunCommand(ctx, bson.D{{Key: "count", Value: "o"}, {Key: "query", Value: tc.filter}}).Decode(&out); err != nil || out.N != tc.want {
			t.Errorf("count %v: %d (%v), want %d", tc.filter, out.N, err, tc.want)
		}
	}
	var tags []string
	if err := coll.Distinct(ctx, "tag", bson.D{}).Decode(&tags); err != nil {
		t.Fatal(err)
	}
	sort.Strings(tags)
	if fmt.Sprint(tags) != "[t0 t1 t2 t3 t4]" {
		t.Errorf("distinct tag through the router: %v, want [t0 t1 t2 t3 t4] (no orphan's)", tags)
	}
	acur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$tag"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var groups []bson.M
	if err := acur.All(ctx, &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g["_id"] == "orphan" || fmt.Sprint(g["n"]) != "20" {
			t.Errorf("aggregate $group by tag through the router: %v, want 20 of each tag and no orphan", groups)
			break
		}
	}

	// explain: each shard's plan has SHARDING_FILTER, and sh0's dropped
	// the 30 orphans.
	var ex bson.Raw
	if err := c.Database("app").RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "o"}, {Key: "filter", Value: bson.D{}}}},
		{Key: "verbosity", Value: "executionStats"}}).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	shards, _ := ex.Lookup("executionStats", "executionStages", "shards").Array().Values()
	skips := map[string]int64{}
	for _, v := range shards {
		sh := v.Document()
		name := sh.Lookup("shardName").StringValue()
		st := findStage(sh.Lookup("executionStages").Document(), "SHARDING_FILTER")
		if st == nil {
			t.Fatalf("shard %s's explain has no SHARDING_FILTER: %s", name, sh)
		}
		skips[name] = st.Lookup("chunkSkips").AsInt64()
	}
	if skips["sh0"] != 30 || skips["sh1"] != 0 {
		t.Errorf("SHARDING_FILTER chunkSkips %v, want sh0: 30, sh1: 0", skips)
	}

	staleBatchedWrites(t, sc, c)
}

// staleBatchedWrites: app.w on {k: 1}, [MinKey, 0) and [0, 100) on sh0,
// [100, MaxKey) on sh2. A chunk moved behind the router's back (the
// donor's _shardsvrMoveRange, directly) leaves the router's map stale for
// sh0 and sh1 while sh2's version stays right.
func staleBatchedWrites(t *testing.T, sc *shardedCluster, c *mongo.Client) {
	ctx := context.Background()
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "app.w"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
	for _, at := range []int{0, 100} {
		runAdmin(t, c, bson.D{{Key: "split", Value: "app.w"}, {Key: "middle", Value: bson.D{{Key: "k", Value: at}}}})
	}
	runAdmin(t, c, bson.D{{Key: "moveChunk", Value: "app.w"}, {Key: "find", Value: bson.D{{Key: "k", Value: 100}}}, {Key: "to", Value: "sh2"}})
	coll := c.Database("app").Collection("w")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "warm"}, {Key: "k", Value: 1}}); err != nil { // the router caches the map
		t.Fatal(err)
	}
	moveBehind := func(from, to int) {
		host := sc.shards[from][strings.IndexByte(sc.shards[from], '/')+1:]
		donor := directClient(t, host)
		defer donor.Disconnect(ctx)
		err := donor.Database("admin").RunCommand(ctx, bson.D{{Key: "_shardsvrMoveRange", Value: "app.w"}, {Key: "toShard", Value: fmt.Sprintf("sh%d", to)},
			{Key: "min", Value: bson.D{{Key: "k", Value: 0}}}, {Key: "max", Value: bson.D{{Key: "k", Value: 100}}}, {Key: "waitForDelete", Value: true}}).Err()
		if err != nil {
			t.Fatalf("moving [0, 100) sh%d→sh%d on the donor: %v", from, to, err)
		}
	}

	moveBehind(0, 1)
	var ins bson.Raw
	err := c.Database("app").RunCommand(ctx, bson.D{{Key: "insert", Value: "w"}, {Key: "ordered", Value: true}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: "a"}, {Key: "k", Value: 150}, {Key: "n", Value: 0}}, // sh2, up to date
		bson.D{{Key: "_id", Value: "b"}, {Key: "k", Value: 50}, {Key: "n", Value: 0}},  // sh0 by the stale map; sh1 now
		bson.D{{Key: "_id", Value: "c"}, {Key: "k", Value: -5}, {Key: "n", Value: 0}},  // sh0
	}}}).Decode(&ins)
	if err != nil || ins.Lookup("n").AsInt64() != 3 || ins.Lookup("writeErrors").Type != 0 {
		t.Errorf("an ordered insert meeting a stale shard after an up-to-date one: %s (%v), want n: 3 and no write errors", ins, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); err != nil || n != 1 {
			t.Errorf("%s is there %d times (%v), want once", id, n, err)
		}
	}

	moveBehind(1, 0)
	var upd bson.Raw
	err = c.Database("app").RunCommand(ctx, bson.D{{Key: "update", Value: "w"}, {Key: "ordered", Value: true}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: 150}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}, // sh2
		bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: 50}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},  // sh1 by the stale map; sh0 now
	}}}).Decode(&upd)
	if err != nil || upd.Lookup("nModified").AsInt64() != 2 || upd.Lookup("writeErrors").Type != 0 {
		t.Errorf("an ordered update meeting a stale shard after an up-to-date one: %s (%v), want nModified: 2", upd, err)
	}
	for _, id := range []string{"a", "b"} {
		var d struct {
			N int `bson:"n"`
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil || d.N != 1 {
			t.Errorf("%s has n=%d (%v) after one $inc, want 1", id, d.N, err)
		}
	}

	// On the shard, the stale statements are write errors at their index,
	// the command itself ok (mongod's reply): an unordered batch's every
	// statement, an ordered one's first.
	sh0 := directClient(t, sc.shards[0][strings.IndexByte(sc.shards[0], '/')+1:])
	defer sh0.Disconnect(ctx)
	old := bson.D{{Key: "e", Value: bson.NewObjectID()}, {Key: "t", Value: bson.Timestamp{T: 1, I: 1}}, {Key: "v", Value: bson.Timestamp{T: 1, I: 0}}}
	for _, ordered := range []bool{true, false} {
		out, err := sh0.Database("app").RunCommand(ctx, bson.D{{Key: "insert", Value: "w"}, {Key: "ordered", Value: ordered}, {Key: "shardVersion", Value: old},
			{Key: "documents", Value: bson.A{bson.D{{Key: "k", Value: -1}}, bson.D{{Key: "k", Value: -2}}}}}).Raw()
		var we mongo.WriteException // the driver reports write errors as one; the reply is ok: 1
		if err != nil && !errors.As(err, &we) || out.Lookup("ok").AsFloat64() != 1 {
			t.Fatalf("insert with a stale shardVersion (ordered %v): %s (%v), want ok: 1 with write errors", ordered, out, err)
		}
		werrs, _ := out.Lookup("writeErrors").Array().Values()
		want := 1
		if !ordered {
			want = 2
		}
		if len(werrs) != want || out.Lookup("n").AsInt64() != 0 {
			t.Fatalf("insert with a stale shardVersion (ordered %v): %s, want n: 0 and %d write errors", ordered, out, want)
		}
		for i, v := range werrs {
			we := v.Document()
			if we.Lookup("index").AsInt64() != int64(i) || we.Lookup("code").AsInt64() != 13388 || we.Lookup("errInfo", "vWanted").Type == 0 {
				t.Errorf("write error %d: %s, want index %d, StaleConfig with errInfo", i, we, i)
			}
		}
	}
}

// findStage returns the first stage of an explain tree named name.
func findStage(st bson.Raw, name string) bson.Raw {
	if s, ok := st.Lookup("stage").StringValueOK(); ok && s == name {
		return st
	}
	if in, ok := st.Lookup("inputStage").DocumentOK(); ok {
		return findStage(in, name)
	}
	if ins, ok := st.Lookup("inputStages").ArrayOK(); ok {
		vals, _ := ins.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				if f := findStage(d, name); f != nil {
					return f
				}
			}
		}
	}
	return nil
}
