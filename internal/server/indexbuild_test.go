package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/engine"
)

// loadNumbered inserts n documents {_id: i, k: i % mod, s: "…"}.
func loadNumbered(t *testing.T, coll *mongo.Collection, n, mod int) {
	t.Helper()
	ctx := context.Background()
	var batch []any
	for i := range n {
		batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % mod}, {Key: "s", Value: fmt.Sprintf("doc %d", i)}})
		if len(batch) == 1000 || i == n-1 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// TestIndexBuildOverTheWire builds an index over 20,000 documents in
// batches of 500 while two clients write, and, with the build paused after
// its first batch, checks currentOp, $currentOp, $indexStats and that a
// find completes. At the end every index must hold exactly its documents'
// entries.
func TestIndexBuildOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	reader := s.client(t)
	ctx := context.Background()
	const n = 20000
	coll := c.Database("ib").Collection("c")
	loadNumbered(t, coll, n, 100)

	checked := false
	s.env.Engine.SetIndexBuildTuning(engine.IndexBuildTuning{BatchDocs: 500, AfterBatch: func(done, total int64) {
		if checked {
			return
		}
		checked = true
		checkBuildInProgress(t, reader)
	}})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := c.Database("ib").Collection("c")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if i%2 == 0 {
					_, err = wc.InsertOne(ctx, bson.D{{Key: "_id", Value: n + w*1_000_000 + i}, {Key: "k", Value: i % 100}})
				} else {
					// Move documents across the whole _id range: ahead of the
					// build's scan and behind it.
					id := (i * 7919) % n
					_, err = wc.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: -i}}}})
				}
				if err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}})
	close(stop)
	wg.Wait()
	if err != nil || name != "k_1" {
		t.Fatalf("createIndex: %q %v", name, err)
	}
	if !checked {
		t.Fatal("the build never paused after a batch")
	}
	t.Logf("%d concurrent writes during the build", writes.Load())
	if err := s.env.Engine.CheckIndexes(engine.Namespace{DB: "ib", Coll: "c"}); err != nil {
		t.Fatal(err)
	}
	stats := indexStats(t, coll)
	if b, ok := stats["k_1"].Lookup("building").BooleanOK(); ok || b {
		t.Errorf("$indexStats still reports k_1 building: %s", stats["k_1"])
	}
}

// checkBuildInProgress runs while the build of k_1 is paused after its
// first batch of 500 documents.
func checkBuildInProgress(t *testing.T, c *mongo.Client) {
	ctx := context.Background()
	admin := c.Database("admin")
	var res bson.Raw
	err := admin.RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "msg", Value: "Index Build: scanning collection"}}).Decode(&res)
	if err != nil {
		t.Errorf("currentOp: %v", err)
		return
	}
	ops, _ := res.Lookup("inprog").Array().Values()
	if len(ops) != 1 {
		t.Errorf("currentOp listed %d index builds, want 1: %s", len(ops), res)
		return
	}
	op := ops[0].Document()
	if op.Lookup("type").StringValue() != "op" || op.Lookup("op").StringValue() != "command" || op.Lookup("ns").StringValue() != "ib.c" {
		t.Errorf("build op = %s", op)
	}
	if got := op.Lookup("command", "createIndexes").StringValue(); got != "c" {
		t.Errorf("build op command = %s", op.Lookup("command"))
	}
	if done, total := op.Lookup("progress", "done").Int64(), op.Lookup("progress", "total").Int64(); done != 500 || total < 20000 {
		t.Errorf("progress = %d/%d, want 500 of at least 20000 (concurrent inserts add to it)", done, total)
	}
	// The client's own createIndexes command is in progress too.
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}, {{Key: "$match", Value: bson.D{{Key: "command.createIndexes", Value: "c"}}}}})
	if err != nil {
		t.Errorf("$currentOp: %v", err)
		return
	}
	var all []bson.Raw
	if err := cur.All(ctx, &all); err != nil || len(all) != 2 {
		t.Errorf("$currentOp saw %d createIndexes operations (%v), want the command and its build", len(all), err)
	}
	// A reader does not wait for the build, and the planner does not use
	// the incomplete index.
	n, err := c.Database("ib").Collection("c").CountDocuments(ctx, bson.D{{Key: "k", Value: 7}})
	if err != nil || n == 0 {
		t.Errorf("count during the build: %d %v", n, err)
	}
	var found []bson.Raw
	fc, err := c.Database("ib").Collection("c").Find(ctx, bson.D{{Key: "s", Value: "doc 19999"}})
	if err != nil || fc.All(ctx, &found) != nil || len(found) != 1 {
		t.Errorf("find during the build: %d %v", len(found), err)
	}
	stats := indexStats(t, c.Database("ib").Collection("c"))
	if !stats["k_1"].Lookup("building").Boolean() {
		t.Errorf("$indexStats during the build: %s", stats["k_1"])
	}
	if specs, err := c.Database("ib").Collection("c").Indexes().ListSpecifications(ctx); err != nil || len(specs) != 2 {
		t.Errorf("listIndexes during the build lists %d indexes (%v), want the building one too", len(specs), err)
	}
}

// indexStats runs $indexStats and returns its documents by index name.
func indexStats(t *testing.T, coll *mongo.Collection) map[string]bson.Raw {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$indexStats", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.Raw{}
	for _, d := range docs {
		out[d.Lookup("name").StringValue()] = d
	}
	return out
}

// TestUniqueBuildOverDuplicatesOverTheWire: 11000 with keyPattern and
// keyValue, and nothing left behind.
func TestUniqueBuildOverDuplicatesOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("ib").Collection("dups")
	loadNumbered(t, coll, 3000, 2000) // k 0..999 appear twice
	s.env.Engine.SetIndexBuildTuning(engine.IndexBuildTuning{BatchDocs: 250})
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 11000 {
		t.Fatalf("unique build over duplicates: %v, want 11000", err)
	}
	if kp := ce.Raw.Lookup("keyPattern"); kp.String() != `{"k": {"$numberInt":"1"}}` {
		t.Errorf("keyPattern = %s", kp)
	}
	if kv := ce.Raw.Lookup("keyValue"); kv.String() != `{"k": {"$numberInt":"0"}}` {
		t.Errorf("keyValue = %s", kv)
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 1 {
		t.Fatalf("after a failed build listIndexes has %d indexes (%v), want only _id_", len(specs), err)
	}
	var st bson.Raw
	if err := c.Database("ib").RunCommand(ctx, bson.D{{Key: "collStats", Value: "dups"}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Lookup("nindexes").Int32() != 1 || st.Lookup("indexSizes", "k_1").Type != 0 {
		t.Errorf("collStats after a failed build: %s", st)
	}
}
