package cairn_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/testnet"
)

// shardedCluster is a sharded cluster of real processes on loopback: a
// one-member config server replica set, one-member shard replica sets and
// a `cairn router`.
type shardedCluster struct {
	bin      string
	tmp      string
	cfg      string   // "cfg/host:port"
	shards   []string // "shN/host:port"
	router   string   // host:port
	routerCm *exec.Cmd
}

// startNamedSet starts `cairn serve --replSet name` (with --configsvr or
// --shardsvr when role names one) and initiates it alone; it returns
// host:port once it is primary.
func startNamedSet(t *testing.T, bin, dir, name, role string) string {
	t.Helper()
	host, _, _ := startKeyedSetProc(t, bin, dir, name, role, "", "")
	return host
}

// startNamedSetProc is startNamedSet that also returns the member's
// process and arguments (to kill it and start it again).
func startNamedSetProc(t *testing.T, bin, dir, name, role string) (string, *serveProc, []string) {
	t.Helper()
	return startKeyedSetProc(t, bin, dir, name, role, "", "")
}

// startKeyedSet is startNamedSet with --keyFile keyFile (none: ""); it
// initiates the set as __system, authenticated with key.
func startKeyedSet(t *testing.T, bin, dir, name, role, keyFile, key string) string {
	t.Helper()
	host, _, _ := startKeyedSetProc(t, bin, dir, name, role, keyFile, key)
	return host
}

// startKeyedSetProc is startKeyedSet that also returns the member's
// process and arguments; extra are further arguments of cairn serve.
func startKeyedSetProc(t *testing.T, bin, dir, name, role, keyFile, key string, extra ...string) (string, *serveProc, []string) {
	t.Helper()
	port := freePorts(t, 1)[0]
	args := append([]string{"--replSet", name, "--port", strconv.Itoa(port), "--dbpath", dir, "--cacheSizeGB", "0.25"}, extra...)
	if role != "" { // --configsvr, or --shardsvr: a shard takes the identity addShard gives it
		args = append(args, "--"+role)
	}
	if keyFile != "" {
		args = append(args, "--keyFile", keyFile)
	}
	configsvr := role == "configsvr"
	p := spawnServe(t, bin, args...)
	p.waitReady(t)
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := systemClient(t, host, key)
	defer c.Disconnect(context.Background())
	cfg := bson.D{{Key: "_id", Value: name}, {Key: "configsvr", Value: configsvr}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: host}}}}}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate %s: %v", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var hello struct {
			Primary bool `bson:"isWritablePrimary"`
		}
		if c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}}).Decode(&hello) == nil && hello.Primary {
			return host, p, args
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s has no primary after 30s", name)
	return "", nil, nil
}

func startShardedCluster(t *testing.T, shards int) *shardedCluster {
	t.Helper()
	tmp := t.TempDir()
	sc := &shardedCluster{bin: buildCairnBinary(t, tmp), tmp: tmp}
	sc.cfg = "cfg/" + startNamedSet(t, sc.bin, filepath.Join(tmp, "cfg"), "cfg", "configsvr")
	for i := range shards {
		name := fmt.Sprintf("sh%d", i)
		sc.shards = append(sc.shards, name+"/"+startNamedSet(t, sc.bin, filepath.Join(tmp, name), name, "shardsvr"))
	}
	port := freePorts(t, 1)[0]
	sc.router = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	sc.routerCm = startRouterProc(t, sc.bin, sc.cfg, port)
	t.Cleanup(func() {
		_ = sc.routerCm.Process.Signal(syscall.SIGTERM)
		_ = sc.routerCm.Wait()
	})
	return sc
}

// startRouterProc starts `cairn router` on port and waits until it
// listens.
func startRouterProc(t *testing.T, bin, cfg string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "router", "--configdb", cfg, "--port", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the router is not listening after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func routerClient(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/").SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func runAdmin(t *testing.T, c *mongo.Client, cmd bson.D) bson.M {
	t.Helper()
	var out bson.M
	if err := c.Database("admin").RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd[0].Key, err)
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	if got := anyCode(err); got != code {
		t.Fatalf("%s: got %v (code %d), want code %d", what, err, got, code)
	}
}

// anyCode is a command's or a write's error code.
func anyCode(err error) int {
	if err == nil {
		return 0
	}
	var se mongo.ServerError
	if ce, ok := err.(mongo.CommandError); ok {
		return int(ce.Code)
	}
	if we, ok := err.(mongo.WriteException); ok && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Code
	}
	if bwe, ok := err.(mongo.BulkWriteException); ok && len(bwe.WriteErrors) > 0 {
		return bwe.WriteErrors[0].Code
	}
	_ = se
	return -1
}

// explainShards runs explain of a find through the router and returns its
// winning stage and the shards it names.
func explainShards(t *testing.T, db *mongo.Database, coll string, filter bson.D) (string, []string) {
	t.Helper()
	var out struct {
		QueryPlanner struct {
			WinningPlan struct {
				Stage  string `bson:"stage"`
				Shards []struct {
					Name string `bson:"shardName"`
				} `bson:"shards"`
			} `bson:"winningPlan"`
		} `bson:"queryPlanner"`
	}
	cmd := bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}}}, {Key: "verbosity", Value: "queryPlanner"}}
	if err := db.RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		t.Fatalf("explain %s %v: %v", coll, filter, err)
	}
	var names []string
	for _, s := range out.QueryPlanner.WinningPlan.Shards {
		names = append(names, s.Name)
	}
	return out.QueryPlanner.WinningPlan.Stage, names
}

func countChunks(t *testing.T, c *mongo.Client, ns string) map[string]int {
	t.Helper()
	ctx := context.Background()
	var coll bson.M
	if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&coll); err != nil {
		t.Fatalf("config.collections %s: %v", ns, err)
	}
	cur, err := c.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "uuid", Value: coll["uuid"]}})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.M
	if err := cur.All(ctx, &chunks); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ch := range chunks {
		out[ch["shard"].(string)]++
	}
	return out
}

// TestShardedClusterPlan runs the design document's sharding plan through
// a router with the Go driver: shards added, its five collections sharded
// on ranged project_id / doc_id keys with unique constraints that keep the
// shard key as a prefix, queries answered by one shard (explain), a
// composite key refined on a live collection, the subdocument _id sharded
// on {"_id.env": "hashed"} and spread over three shards, and the bad
// inputs refused with MongoDB's codes and nothing changed.
//
// Chunk moves and the balancer are the shard side's (migrate): moveChunk
// is checked to reach the donor, which answers CommandNotFound until the
// shard side is merged.
func TestShardedClusterPlan(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts five servers")
	}
	sc := startShardedCluster(t, 3)
	ctx := context.Background()
	c := routerClient(t, sc.router)
	cfgClient := directClient(t, sc.cfg[len("cfg/"):])
	defer cfgClient.Disconnect(ctx)

	hello := runAdmin(t, c, bson.D{{Key: "hello", Value: 1}})
	if hello["msg"] != "isdbgrid" {
		t.Fatalf("router's hello: %v", hello)
	}

	// The config servers say so, and are no shard.
	var cfgHello bson.M
	if err := cfgClient.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&cfgHello); err != nil || cfgHello["configsvr"] != int32(2) {
		t.Fatalf("config server's hello: %v, %v", cfgHello, err)
	}
	wantCode(t, "addShard of the config servers", c.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: sc.cfg}}).Err(), 96)
	// A replica set not started with --shardsvr refuses the shard identity,
	// so addShard refuses it (it could not check the router's versions).
	plain := "plain/" + startNamedSet(t, sc.bin, filepath.Join(sc.tmp, "plain"), "plain", "")
	wantCode(t, "addShard of a set not started with --shardsvr", c.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: plain}}).Err(), 96)

	// Shards: the first alone cannot be removed; then all three.
	if out := runAdmin(t, c, bson.D{{Key: "addShard", Value: sc.shards[0]}}); out["shardAdded"] != "sh0" {
		t.Fatalf("addShard: %v", out)
	}
	wantCode(t, "removeShard of the last shard", c.Database("admin").RunCommand(ctx, bson.D{{Key: "removeShard", Value: "sh0"}}).Err(), 20)
	for _, s := range sc.shards[1:] {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "addShard", Value: sc.shards[1]}}) // idempotent
	if ls := runAdmin(t, c, bson.D{{Key: "listShards", Value: 1}}); len(ls["shards"].(bson.A)) != 3 {
		t.Fatalf("listShards: %v", ls)
	}
	// Each shard got its own documentIdUniquePrefix from the config servers.
	prefixes := map[string]int32{}
	seenPrefix := map[int32]bool{}
	scur, err := cfgClient.Database("config").Collection("shards").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var shardDocs []bson.M
	if err := scur.All(ctx, &shardDocs); err != nil {
		t.Fatal(err)
	}
	for _, d := range shardDocs {
		p, _ := d["documentIdUniquePrefix"].(int32)
		if p == 0 || seenPrefix[p] {
			t.Fatalf("shard %v: documentIdUniquePrefix %v is missing or not unique (%v)", d["_id"], d["documentIdUniquePrefix"], prefixes)
		}
		seenPrefix[p] = true
		prefixes[d["_id"].(string)] = p
	}
	wantCode(t, "removeShard of an unknown shard", c.Database("admin").RunCommand(ctx, bson.D{{Key: "removeShard", Value: "nope"}}).Err(), 70)

	// The plan: project-wide collections on project_id, document-wide
	// on doc_id, each with its unique constraint prefixed by the key.
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "plan"}, {Key: "primaryShard", Value: "sh1"}})
	db := c.Database("plan")
	plan := []struct {
		coll, keyField string
		unique         bson.D
	}{
		{"project_settings", "project_id", bson.D{{Key: "project_id", Value: 1}, {Key: "key", Value: 1}}},
		{"project_members", "project_id", bson.D{{Key: "project_id", Value: 1}, {Key: "user_id", Value: 1}}},
		{"project_keys", "project_id", bson.D{{Key: "project_id", Value: 1}, {Key: "key", Value: 1}}},
		{"documents", "doc_id", bson.D{{Key: "doc_id", Value: 1}, {Key: "rev", Value: 1}}},
		{"doc_fields", "doc_id", bson.D{{Key: "doc_id", Value: 1}, {Key: "field", Value: 1}}},
	}
	for _, p := range plan {
		runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "plan." + p.coll}, {Key: "key", Value: bson.D{{Key: p.keyField, Value: 1}}}})
		if _, err := db.Collection(p.coll).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: p.unique, Options: options.Index().SetUnique(true)}); err != nil {
			t.Fatalf("unique index on %s: %v", p.coll, err)
		}
		// A unique index without the shard key as its prefix: 67.
		second := p.unique[1:]
		_, err := db.Collection(p.coll).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: second, Options: options.Index().SetUnique(true)})
		wantCode(t, "unique index without the shard key prefix", err, 67)
		var docs []any
		for i := range 200 {
			d := bson.D{{Key: p.keyField, Value: i % 40}}
			for _, f := range p.unique[1:] {
				d = append(d, bson.E{Key: f.Key, Value: fmt.Sprintf("v%d", i)})
			}
			if i%2 == 0 {
				d = append(bson.D{{Key: "_id", Value: fmt.Sprintf("%s-%d", p.coll, i)}}, d...)
			}
			docs = append(docs, d)
		}
		if _, err := db.Collection(p.coll).InsertMany(ctx, docs); err != nil {
			t.Fatalf("insert into %s: %v", p.coll, err)
		}
		// The unique constraint holds.
		_, err = db.Collection(p.coll).InsertOne(ctx, docs[3])
		wantCode(t, "duplicate under the unique constraint "+p.coll, err, 11000)
		n, err := db.Collection(p.coll).CountDocuments(ctx, bson.D{{Key: p.keyField, Value: 7}})
		if err != nil || n != 5 {
			t.Fatalf("count %s where %s = 7: %d, %v", p.coll, p.keyField, n, err)
		}
		stage, shards := explainShards(t, db, p.coll, bson.D{{Key: p.keyField, Value: 7}})
		if stage != "SINGLE_SHARD" || len(shards) != 1 || shards[0] != "sh1" {
			t.Fatalf("explain of %s by %s: %s on %v, want SINGLE_SHARD on sh1", p.coll, p.keyField, stage, shards)
		}
	}

	// A batch larger than a command body may be (16 MB) reaches the shards
	// as a document sequence.
	big := strings.Repeat("x", 1<<20)
	var bigDocs []any
	for i := range 20 {
		bigDocs = append(bigDocs, bson.D{{Key: "doc_id", Value: 1000 + i}, {Key: "field", Value: "big"}, {Key: "blob", Value: big}})
	}
	if _, err := db.Collection("doc_fields").InsertMany(ctx, bigDocs); err != nil {
		t.Fatalf("a 20 MB insert through the router: %v", err)
	}
	if _, err := db.Collection("doc_fields").DeleteMany(ctx, bson.D{{Key: "field", Value: "big"}}); err != nil {
		t.Fatal(err)
	}

	// Splits and merges change config.chunks and the collection version.
	runAdmin(t, c, bson.D{{Key: "split", Value: "plan.project_settings"}, {Key: "middle", Value: bson.D{{Key: "project_id", Value: 20}}}})
	if ch := countChunks(t, cfgClient, "plan.project_settings"); ch["sh1"] != 2 {
		t.Fatalf("chunks after split: %v", ch)
	}
	wantCode(t, "split on a chunk bound", c.Database("admin").RunCommand(ctx, bson.D{{Key: "split", Value: "plan.project_settings"}, {Key: "middle", Value: bson.D{{Key: "project_id", Value: 20}}}}).Err(), 72)
	if n, _ := db.Collection("project_settings").CountDocuments(ctx, bson.D{}); n != 200 {
		t.Fatalf("documents after split: %d", n)
	}
	runAdmin(t, c, bson.D{{Key: "mergeChunks", Value: "plan.project_settings"}, {Key: "bounds", Value: bson.A{
		bson.D{{Key: "project_id", Value: bson.MinKey{}}}, bson.D{{Key: "project_id", Value: bson.MaxKey{}}}}}})
	if ch := countChunks(t, cfgClient, "plan.project_settings"); ch["sh1"] != 1 {
		t.Fatalf("chunks after merge: %v", ch)
	}

	// sh.splitFind: at the median of the chunk's documents (project_id 0
	// to 39, five documents each: the median key is 20).
	runAdmin(t, c, bson.D{{Key: "split", Value: "plan.project_members"}, {Key: "find", Value: bson.D{{Key: "project_id", Value: 3}}}})
	var mid bson.M
	if err := cfgClient.Database("config").Collection("chunks").FindOne(ctx, bson.D{{Key: "min.project_id", Value: 20}}).Decode(&mid); err != nil {
		t.Fatalf("no chunk starts at the median 20 after splitFind: %v", err)
	}
	runAdmin(t, c, bson.D{{Key: "split", Value: "plan.project_members"}, {Key: "bounds", Value: bson.A{
		bson.D{{Key: "project_id", Value: bson.MinKey{}}}, bson.D{{Key: "project_id", Value: 20}}}}})
	if ch := countChunks(t, cfgClient, "plan.project_members"); ch["sh1"] != 3 {
		t.Fatalf("chunks after two median splits: %v", ch)
	}
	wantCode(t, "split with middle and find", c.Database("admin").RunCommand(ctx, bson.D{{Key: "split", Value: "plan.project_members"},
		{Key: "find", Value: bson.D{{Key: "project_id", Value: 3}}}, {Key: "middle", Value: bson.D{{Key: "project_id", Value: 3}}}}).Err(), 72)

	// Refine project_keys to (project_id, key) while it holds documents.
	runAdmin(t, c, bson.D{{Key: "refineCollectionShardKey", Value: "plan.project_keys"}, {Key: "key", Value: bson.D{{Key: "project_id", Value: 1}, {Key: "key", Value: 1}}}})
	var pk bson.M
	if err := cfgClient.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: "plan.project_keys"}}).Decode(&pk); err != nil {
		t.Fatal(err)
	}
	if k := pk["key"].(bson.D); len(k) != 2 || k[1].Key != "key" {
		t.Fatalf("refined key: %v", pk["key"])
	}
	if n, _ := db.Collection("project_keys").CountDocuments(ctx, bson.D{{Key: "project_id", Value: 3}, {Key: "key", Value: "v3"}}); n != 1 {
		t.Fatalf("find by refined key: %d", n)
	}
	wantCode(t, "refine to a key without an index", c.Database("admin").RunCommand(ctx, bson.D{{Key: "refineCollectionShardKey", Value: "plan.project_members"},
		{Key: "key", Value: bson.D{{Key: "project_id", Value: 1}, {Key: "zzz", Value: 1}}}}).Err(), 72)

	// The subdocument _id on a hashed field: presplit over three shards.
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "plan.envs"}, {Key: "key", Value: bson.D{{Key: "_id.env", Value: "hashed"}}}})
	if ch := countChunks(t, cfgClient, "plan.envs"); len(ch) != 3 || ch["sh0"] != 2 || ch["sh1"] != 2 || ch["sh2"] != 2 {
		t.Fatalf("hashed presplit chunks: %v", ch)
	}
	envs := db.Collection("envs")
	var envDocs []any
	for i := range 300 {
		envDocs = append(envDocs, bson.D{{Key: "_id", Value: bson.D{{Key: "env", Value: fmt.Sprintf("env-%d", i%30)}, {Key: "name", Value: fmt.Sprintf("n%03d", i)}}}, {Key: "i", Value: i}})
	}
	if _, err := envs.InsertMany(ctx, envDocs); err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, s := range sc.shards {
		dc := directClient(t, s[len("shN/"):])
		n, err := dc.Database("plan").Collection("envs").CountDocuments(ctx, bson.D{})
		_ = dc.Disconnect(ctx)
		if err != nil || n == 0 {
			t.Fatalf("shard %s holds %d envs documents (%v): the hashed chunks did not spread them", s, n, err)
		}
		total += n
	}
	if total != 300 {
		t.Fatalf("the shards hold %d envs documents, want 300", total)
	}
	stage, shards := explainShards(t, db, "envs", bson.D{{Key: "_id.env", Value: "env-5"}})
	if stage != "SINGLE_SHARD" || len(shards) != 1 {
		t.Fatalf("explain by _id.env: %s on %v", stage, shards)
	}
	if n, _ := envs.CountDocuments(ctx, bson.D{{Key: "_id.env", Value: "env-5"}}); n != 10 {
		t.Fatalf("count by _id.env: %d", n)
	}
	stage, shards = explainShards(t, db, "envs", bson.D{{Key: "i", Value: bson.D{{Key: "$gte", Value: 0}}}})
	if stage != "SHARD_MERGE" || len(shards) != 3 {
		t.Fatalf("explain of a scatter: %s on %v", stage, shards)
	}
	// Scatter/gather: merge-sorted, skip and limit, getMore in small batches.
	cur, err := envs.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "i", Value: -1}}).SetSkip(5).SetLimit(250).SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	var sorted []struct {
		I int `bson:"i"`
	}
	if err := cur.All(ctx, &sorted); err != nil {
		t.Fatal(err)
	}
	if len(sorted) != 250 || sorted[0].I != 294 || sorted[249].I != 45 {
		t.Fatalf("sorted scatter: %d documents, first %v", len(sorted), sorted[:min(3, len(sorted))])
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i].I != sorted[i-1].I-1 {
			t.Fatalf("sorted scatter out of order at %d: %d after %d", i, sorted[i].I, sorted[i-1].I)
		}
	}
	// A projection dropping the sort field: still merged in order.
	cur, err = envs.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "i", Value: 1}}).SetProjection(bson.D{{Key: "_id.name", Value: 1}}).SetLimit(120))
	if err != nil {
		t.Fatal(err)
	}
	var named []struct {
		ID struct {
			Env  string `bson:"env"`
			Name string `bson:"name"`
		} `bson:"_id"`
		I *int `bson:"i"`
	}
	if err := cur.All(ctx, &named); err != nil {
		t.Fatal(err)
	}
	for i, d := range named {
		if want := fmt.Sprintf("n%03d", i); d.ID.Name != want || d.ID.Env != "" || d.I != nil {
			t.Fatalf("projected sorted scatter [%d]: %+v, want only _id.name %s", i, d, want)
		}
	}
	if len(named) != 120 {
		t.Fatalf("projected sorted scatter: %d documents", len(named))
	}

	// Aggregation split: a partial $group on each shard's documents.
	acur, err := envs.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "i", Value: bson.D{{Key: "$lt", Value: 150}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$_id.env"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		ID string `bson:"_id"`
		N  int    `bson:"n"`
	}
	if err := acur.All(ctx, &groups); err != nil {
		t.Fatal(err)
	}
	if len(groups) != 30 || groups[0].ID != "env-0" || groups[0].N != 5 {
		t.Fatalf("grouped over three shards: %v", groups)
	}
	// Partial $avg states from each shard, merged at the router.
	acur, err = envs.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "avg", Value: bson.D{{Key: "$avg", Value: "$i"}}}, {Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var avg []struct {
		Avg float64 `bson:"avg"`
		N   int     `bson:"n"`
	}
	if err := acur.All(ctx, &avg); err != nil {
		t.Fatal(err)
	}
	if len(avg) != 1 || avg[0].Avg != 149.5 || avg[0].N != 300 {
		t.Fatalf("$avg merged from partial states: %+v", avg)
	}
	// $lookup from an unsharded collection, which lives on the primary
	// (sh1), from a chunk on another shard.
	away := ""
	for i := 0; away == "" && i < 30; i++ {
		env := fmt.Sprintf("env-%d", i)
		if _, on := explainShards(t, db, "envs", bson.D{{Key: "_id.env", Value: env}}); on[0] != "sh1" {
			away = env
		}
	}
	if _, err := db.Collection("labels").InsertOne(ctx, bson.D{{Key: "_id", Value: away}, {Key: "label", Value: "away"}}); err != nil {
		t.Fatal(err)
	}
	lcur, err := envs.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id.env", Value: away}}}},
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "labels"}, {Key: "localField", Value: "_id.env"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "l"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var looked []struct {
		L []bson.M `bson:"l"`
	}
	if err := lcur.All(ctx, &looked); err != nil {
		t.Fatal(err)
	}
	if len(looked) != 10 || len(looked[0].L) != 1 || looked[0].L[0]["label"] != "away" {
		t.Fatalf("$lookup of %s from an unsharded collection through the router: %+v", away, looked)
	}
	vals, err := envs.Distinct(ctx, "_id.env", bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if arr, _ := vals.Values(); len(arr) != 30 {
		t.Fatalf("distinct over three shards: %d values", len(arr))
	}

	// Sequential ids made by the shards carry each shard's prefix: unique
	// across the cluster without any coordination per insert.
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "seq"}, {Key: "idGenerator", Value: "sequential"}}).Err(); err != nil {
		t.Fatal(err)
	}
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "plan.seq"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	var seqDocs bson.A
	for i := range 60 {
		seqDocs = append(seqDocs, bson.D{{Key: "k", Value: i}})
	}
	var ins struct {
		N         int `bson:"n"`
		Generated []struct {
			Index int    `bson:"index"`
			ID    string `bson:"_id"`
		} `bson:"generatedIds"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "seq"}, {Key: "documents", Value: seqDocs}}).Decode(&ins); err != nil {
		t.Fatal(err)
	}
	if ins.N != 60 || len(ins.Generated) != 60 {
		t.Fatalf("sequential insert through the router: n %d, %d generated ids", ins.N, len(ins.Generated))
	}
	usedPrefixes := map[string]bool{}
	for i, g := range ins.Generated {
		if g.Index != i || len(g.ID) != 28 {
			t.Fatalf("generatedIds[%d] = %+v", i, g)
		}
		usedPrefixes[g.ID[:4]] = true
	}
	for _, s := range sc.shards {
		name := s[:3]
		dc := directClient(t, s[len("shN/"):])
		cur, err := dc.Database("plan").Collection("seq").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var held []struct {
			ID string `bson:"_id"`
		}
		if err := cur.All(ctx, &held); err != nil {
			t.Fatal(err)
		}
		_ = dc.Disconnect(ctx)
		want := fmt.Sprintf("%04x", prefixes[name])
		if len(held) == 0 {
			t.Fatalf("shard %s holds no seq document", name)
		}
		for _, h := range held {
			if h.ID[:4] != want {
				t.Fatalf("shard %s made id %s without its prefix %s", name, h.ID, want)
			}
		}
	}
	if len(usedPrefixes) != 3 {
		t.Fatalf("sequential ids carry prefixes %v, want the three shards'", usedPrefixes)
	}

	// Writes: by shard key, by _id, and refusals without either.
	if res, err := envs.UpdateOne(ctx, bson.D{{Key: "_id.env", Value: "env-3"}, {Key: "i", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("updateOne by shard key: %v %v", res, err)
	}
	if res, err := envs.UpdateMany(ctx, bson.D{{Key: "i", Value: bson.D{{Key: "$lt", Value: 10}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}); err != nil || res.ModifiedCount != 10 {
		t.Fatalf("updateMany over shards: %v %v", res, err)
	}
	_, err = envs.UpdateOne(ctx, bson.D{{Key: "i", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantCode(t, "updateOne without the shard key", err, 72)
	_, err = envs.UpdateOne(ctx, bson.D{{Key: "_id.env", Value: "env-3"}, {Key: "i", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_id.env", Value: "env-4"}}}})
	wantCode(t, "an update of the shard key", err, 20)
	_, err = db.Collection("documents").ReplaceOne(ctx, bson.D{{Key: "doc_id", Value: 3}, {Key: "rev", Value: "v3"}}, bson.D{{Key: "doc_id", Value: 3}, {Key: "rev", Value: "v3"}, {Key: "z", Value: 1}})
	if err != nil {
		t.Fatalf("a replacement keeping its shard key: %v", err)
	}
	_, err = envs.DeleteOne(ctx, bson.D{{Key: "i", Value: 4}})
	wantCode(t, "deleteOne without the shard key", err, 61)
	if res, err := envs.DeleteOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "env", Value: "env-4"}, {Key: "name", Value: "n004"}}}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("deleteOne by _id: %v %v", res, err)
	}
	if res, err := envs.DeleteMany(ctx, bson.D{{Key: "i", Value: bson.D{{Key: "$gte", Value: 290}}}}); err != nil || res.DeletedCount != 10 {
		t.Fatalf("deleteMany over shards: %v %v", res, err)
	}
	var fam bson.M
	if err := envs.FindOneAndUpdate(ctx, bson.D{{Key: "_id.env", Value: "env-7"}, {Key: "i", Value: 7}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "i", Value: 1000}}}}).Decode(&fam); err != nil {
		t.Fatalf("findAndModify by shard key: %v", err)
	}

	// Bad input: nothing changes.
	before, _ := cfgClient.Database("config").Collection("collections").CountDocuments(ctx, bson.D{})
	if _, err := db.Collection("loose").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "shardCollection without a supporting index", c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "plan.loose"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}).Err(), 72)
	_, err = db.Collection("doc_fields").InsertOne(ctx, bson.D{{Key: "doc_id", Value: bson.A{1, 2}}, {Key: "field", Value: "arr"}})
	wantCode(t, "an array in a shard key", err, 61)
	wantCode(t, "moveChunk to an unknown shard", c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: "plan.documents"},
		{Key: "find", Value: bson.D{{Key: "doc_id", Value: 1}}}, {Key: "to", Value: "nope"}}).Err(), 70)
	wantCode(t, "shardCollection on a hashed unique key", c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "plan.loose2"},
		{Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}, {Key: "unique", Value: true}}).Err(), 72)
	wantCode(t, "shardCollection outside admin", db.RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "plan.x"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}).Err(), 13)
	if after, _ := cfgClient.Database("config").Collection("collections").CountDocuments(ctx, bson.D{}); after != before {
		t.Fatalf("refused commands changed config.collections: %d -> %d", before, after)
	}
	// moveChunk reaches the donor: it moves the chunk once the shard side
	// takes _shardsvrMoveRange, and until then the donor says it has no
	// such command.
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "moveChunk", Value: "plan.documents"}, {Key: "find", Value: bson.D{{Key: "doc_id", Value: 1}}}, {Key: "to", Value: "sh2"}}).Err()
	if code := anyCode(err); code != 0 && code != 59 {
		t.Fatalf("moveChunk: %v", err)
	}
	// A versioned collection shards, routes and keeps its history, and its
	// chunks move with their documents' histories (issue #23): the
	// version field continues on the recipient.
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "versioned"}, {Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
		t.Fatalf("create a versioned collection through the router: %v", err)
	}
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "plan.versioned"}, {Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}})
	versioned := db.Collection("versioned")
	if _, err := versioned.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := versioned.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "_v", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	runAdmin(t, c, bson.D{{Key: "moveChunk", Value: "plan.versioned"}, {Key: "find", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "to", Value: "sh2"}, {Key: "_waitForDelete", Value: true}})
	if res, err := versioned.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "_v", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 3}}}}); err != nil || res.ModifiedCount != 1 {
		t.Fatalf("a compare-and-swap on the moved document: %v %v", res, err)
	}
	var vdoc bson.M
	if err := versioned.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&vdoc); err != nil || vdoc["_v"] != int64(3) || vdoc["n"] != int32(3) {
		t.Fatalf("the versioned document after the move: %v %v", vdoc, err)
	}
	vcur, err := versioned.Aggregate(ctx, bson.A{bson.D{{Key: "$versions", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := vcur.All(ctx, &all); err != nil || len(all) != 3 {
		t.Fatalf("$versions after the move: %v %v", all, err)
	}
	if ch := countChunks(t, cfgClient, "plan.versioned"); ch["sh2"] != 1 {
		t.Fatalf("the versioned collection's chunk did not move: %v", ch)
	}

	// Zones and the balancer's settings.
	runAdmin(t, c, bson.D{{Key: "addShardToZone", Value: "sh0"}, {Key: "zone", Value: "EU"}})
	runAdmin(t, c, bson.D{{Key: "updateZoneKeyRange", Value: "plan.documents"}, {Key: "min", Value: bson.D{{Key: "doc_id", Value: bson.MinKey{}}}},
		{Key: "max", Value: bson.D{{Key: "doc_id", Value: 10}}}, {Key: "zone", Value: "EU"}})
	wantCode(t, "a range of an unknown zone", c.Database("admin").RunCommand(ctx, bson.D{{Key: "updateZoneKeyRange", Value: "plan.documents"},
		{Key: "min", Value: bson.D{{Key: "doc_id", Value: 20}}}, {Key: "max", Value: bson.D{{Key: "doc_id", Value: 30}}}, {Key: "zone", Value: "US"}}).Err(), 177)
	wantCode(t, "an overlapping zone range", c.Database("admin").RunCommand(ctx, bson.D{{Key: "updateZoneKeyRange", Value: "plan.documents"},
		{Key: "min", Value: bson.D{{Key: "doc_id", Value: 5}}}, {Key: "max", Value: bson.D{{Key: "doc_id", Value: 30}}}, {Key: "zone", Value: "EU"}}).Err(), 178)
	if n, _ := cfgClient.Database("config").Collection("tags").CountDocuments(ctx, bson.D{{Key: "ns", Value: "plan.documents"}}); n != 1 {
		t.Fatalf("config.tags: %d ranges", n)
	}
	runAdmin(t, c, bson.D{{Key: "balancerStop", Value: 1}})
	if st := runAdmin(t, c, bson.D{{Key: "balancerStatus", Value: 1}}); st["mode"] != "off" {
		t.Fatalf("balancerStatus after stop: %v", st)
	}
	runAdmin(t, c, bson.D{{Key: "balancerStart", Value: 1}})
	if st := runAdmin(t, c, bson.D{{Key: "balancerStatus", Value: 1}}); st["mode"] != "full" || st["inBalancerRound"] == nil {
		t.Fatalf("balancerStatus after start: %v", st)
	} else if n, ok := st["numBalancerRounds"].(int64); !ok || n < 0 {
		t.Fatalf("balancerStatus's numBalancerRounds: %v (%T), want the config server's count", st["numBalancerRounds"], st["numBalancerRounds"])
	}

	// removeShard drains: started, then ongoing while it owns chunks.
	if out := runAdmin(t, c, bson.D{{Key: "removeShard", Value: "sh2"}}); out["state"] != "started" {
		t.Fatalf("removeShard: %v", out)
	}
	if out := runAdmin(t, c, bson.D{{Key: "removeShard", Value: "sh2"}}); out["state"] != "ongoing" {
		t.Fatalf("removeShard again: %v", out)
	}
	runAdmin(t, c, bson.D{{Key: "flushRouterConfig", Value: 1}})
	if n, _ := envs.CountDocuments(ctx, bson.D{}); n != 289 {
		t.Fatalf("envs after the writes: %d documents, want 289", n)
	}

	// A second router reads the same routing from the config servers.
	second := routerClient(t, sc.router)
	if n, _ := second.Database("plan").Collection("project_members").CountDocuments(ctx, bson.D{{Key: "project_id", Value: 1}}); n != 5 {
		t.Fatalf("second client: %d", n)
	}
}
