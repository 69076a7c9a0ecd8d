package cairn_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestShardedReadsFilterOrphans: reads through a router carry a
// shardVersion, and a shard answers them with the documents of the chunks
// it owns only (MongoDB's SHARDING_FILTER). Orphans — documents of a range
// a shard does not own, as a migration's copy before its commit or a
// donated range before its deletion leaves them — are put on a shard
// directly here; find, getMore, count, distinct and aggregate through the
// router leave them out, and explain shows the stage with its chunkSkips.
// A client reading the shard directly, without a shardVersion, still sees
// them (as on mongod).
func TestShardedReadsFilterOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four servers")
	}
	sc := startShardedCluster(t, 2)
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
