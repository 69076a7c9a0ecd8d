package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// The session tests run a sharded cluster of real processes (a config
// set, two one-member shard sets, a `cairn router`) whose shard primary
// and router they kill and restart, and drive it with the Go driver's
// sessions, retryable writes and transactions (issue #21).

// killableCluster is a sharded cluster whose shard and router processes
// the test may kill -9 and start again on the same port and data.
type killableCluster struct {
	bin, tmp, cfg string
	shardArgs     [][]string
	shardProcs    []*serveProc
	shards        []string
	routerPort    int
	router        string
	routerCmd     *exec.Cmd
	owner         *testing.T // the test whose cleanup stops restarted processes
}

func startKillableCluster(t *testing.T, n int, shardArgs ...string) *killableCluster {
	t.Helper()
	tmp := t.TempDir()
	kc := &killableCluster{bin: buildCairnBinary(t, tmp), tmp: tmp, owner: t}
	kc.cfg = "cfg/" + startNamedSet(t, kc.bin, filepath.Join(tmp, "cfg"), "cfg", "configsvr")
	for i := range n {
		name := fmt.Sprintf("sh%d", i)
		host, p, args := startKeyedSetProc(t, kc.bin, filepath.Join(tmp, name), name, "shardsvr", "", "", shardArgs...)
		kc.shardArgs = append(kc.shardArgs, args)
		kc.shardProcs = append(kc.shardProcs, p)
		kc.shards = append(kc.shards, name+"/"+host)
	}
	kc.routerPort = freePorts(t, 1)[0]
	kc.router = net.JoinHostPort("127.0.0.1", strconv.Itoa(kc.routerPort))
	kc.startRouter(t)
	t.Cleanup(kc.stopRouter)
	return kc
}

func waitWritable(t *testing.T, host string) {
	t.Helper()
	c := directClient(t, host)
	defer c.Disconnect(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var hello struct {
			Primary bool `bson:"isWritablePrimary"`
		}
		if c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}}).Decode(&hello) == nil && hello.Primary {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is not primary after 60s", host)
}

func (kc *killableCluster) startRouter(t *testing.T) {
	t.Helper()
	kc.routerCmd = startRouterProc(t, kc.bin, kc.cfg, kc.routerPort)
}

func (kc *killableCluster) stopRouter() {
	if kc.routerCmd != nil && kc.routerCmd.ProcessState == nil {
		_ = kc.routerCmd.Process.Signal(syscall.SIGKILL)
		_ = kc.routerCmd.Wait()
	}
}

// restartShard kills shard i's only member with SIGKILL, waits, and starts
// it again on its port and data.
func (kc *killableCluster) restartShard(t *testing.T, i int, down time.Duration) {
	kc.shardProcs[i].kill()
	time.Sleep(down)
	p := spawnServe(kc.owner, kc.bin, kc.shardArgs[i]...)
	p.waitReady(t)
	kc.shardProcs[i] = p
	_, host, _ := strings.Cut(kc.shards[i], "/")
	waitWritable(t, host)
}

// startSession starts a driver session the test ends.
func startSession(t *testing.T, c *mongo.Client) *mongo.Session {
	t.Helper()
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	return sess
}

// shardOf is the shard that explain says owns filter's documents.
func shardOf(t *testing.T, db *mongo.Database, coll string, filter bson.D) string {
	t.Helper()
	stage, shards := explainShards(t, db, coll, filter)
	if stage != "SINGLE_SHARD" || len(shards) != 1 {
		t.Fatalf("explain %v: %s on %v, want one shard", filter, stage, shards)
	}
	return shards[0]
}

func TestRouterSessionsAndTransactions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers and a router")
	}
	kc := startKillableCluster(t, 2)
	ctx := context.Background()
	c := routerClient(t, kc.router)
	for _, s := range kc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "rw"}})
	for _, coll := range []string{"ins", "ctr", "txn"} {
		runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "rw." + coll}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}})
	}
	db := c.Database("rw")

	t.Run("session commands", func(t *testing.T) {
		hello := runAdmin(t, c, bson.D{{Key: "hello", Value: 1}})
		if hello["logicalSessionTimeoutMinutes"] != int32(30) {
			t.Fatalf("hello: logicalSessionTimeoutMinutes %v, want 30", hello["logicalSessionTimeoutMinutes"])
		}
		var started struct {
			ID struct {
				ID bson.Binary `bson:"id"`
			} `bson:"id"`
			Timeout int32 `bson:"timeoutMinutes"`
		}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "startSession", Value: 1}}).Decode(&started); err != nil ||
			started.ID.ID.Subtype != 4 || len(started.ID.ID.Data) != 16 || started.Timeout != 30 {
			t.Fatalf("startSession: %+v, %v", started, err)
		}
		id := bson.M{"id": started.ID.ID}
		runAdmin(t, c, bson.D{{Key: "refreshSessions", Value: bson.A{bson.D{{Key: "id", Value: id["id"]}}}}})
		runAdmin(t, c, bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: id["id"]}}}}})
		// A find opened in a driver's session, then killSessions: the
		// cursor is gone at the router.
		for i := range 5 {
			if _, err := db.Collection("ins").InsertOne(ctx, bson.D{{Key: "k", Value: -1 - i}}); err != nil {
				t.Fatal(err)
			}
		}
		sess := startSession(t, c)
		sctx := mongo.NewSessionContext(ctx, sess)
		var found struct {
			Cursor struct {
				ID int64 `bson:"id"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(sctx, bson.D{{Key: "find", Value: "ins"}, {Key: "batchSize", Value: 1}}).Decode(&found); err != nil || found.Cursor.ID == 0 {
			t.Fatalf("find in a session: %v, cursor %d", err, found.Cursor.ID)
		}
		other := startSession(t, c)
		err := db.RunCommand(mongo.NewSessionContext(ctx, other), bson.D{{Key: "getMore", Value: found.Cursor.ID}, {Key: "collection", Value: "ins"}}).Err()
		wantCode(t, "getMore from another session", err, 50738)
		runAdmin(t, c, bson.D{{Key: "killSessions", Value: bson.A{sess.ID()}}})
		err = db.RunCommand(sctx, bson.D{{Key: "getMore", Value: found.Cursor.ID}, {Key: "collection", Value: "ins"}}).Err()
		wantCode(t, "getMore of a killed session's cursor", err, 43)
		// A retryable write to the config database (the config servers,
		// which take no stmtIds) goes through too.
		probe := c.Database("config").Collection("rtxn_probe")
		if _, err := probe.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
			t.Fatalf("retryable insert into config: %v", err)
		}
		if err := probe.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		// txnNumber on a read is refused, as mongos refuses it.
		err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "ins"}, {Key: "txnNumber", Value: int64(1)}}).Err()
		wantCode(t, "txnNumber on find", err, 50768)
		if _, err := db.Collection("ins").DeleteMany(ctx, bson.D{{Key: "k", Value: bson.D{{Key: "$lt", Value: 0}}}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("retryable writes across a shard and a router kill", func(t *testing.T) {
		const counters = 8
		for i := range counters {
			if _, err := db.Collection("ctr").InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "n", Value: 0}}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		acked := map[string]bool{}  // inserts the driver acknowledged
		unsure := map[string]bool{} // inserts that failed: present or not
		incAcked := make([]int, counters)
		incUnsure := make([]int, counters)
		var dupKeys []string
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				coll, ctr := db.Collection("ins"), db.Collection("ctr")
				for seq := 0; ; seq++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("w%d-%d", w, seq)
					// A batch of two for different shards now and then: the
					// router splits it, each half recorded under the
					// client's statement ids.
					docs := []any{bson.D{{Key: "_id", Value: id}, {Key: "k", Value: w*100000 + seq}}}
					if seq%3 == 0 {
						docs = append(docs, bson.D{{Key: "_id", Value: id + "b"}, {Key: "k", Value: -w*100000 - seq - 1}})
					}
					cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					_, err := coll.InsertMany(cctx, docs)
					cancel()
					mu.Lock()
					for _, d := range docs {
						did := d.(bson.D)[0].Value.(string)
						if err == nil {
							acked[did] = true
						} else {
							unsure[did] = true
						}
					}
					if anyCode(err) == 11000 {
						dupKeys = append(dupKeys, id)
					}
					mu.Unlock()
					k := (w + seq) % counters
					cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
					_, err = ctr.UpdateOne(cctx, bson.D{{Key: "k", Value: k}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
					cancel()
					mu.Lock()
					if err == nil {
						incAcked[k]++
					} else {
						incUnsure[k]++
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		kc.restartShard(t, 0, 500*time.Millisecond)
		time.Sleep(1500 * time.Millisecond)
		kc.stopRouter()
		time.Sleep(300 * time.Millisecond)
		kc.startRouter(t)
		time.Sleep(1500 * time.Millisecond)
		kc.restartShard(t, 1, 200*time.Millisecond)
		time.Sleep(1500 * time.Millisecond)
		close(stop)
		wg.Wait()

		if len(dupKeys) > 0 {
			t.Errorf("retried inserts applied twice (duplicate key answered): %v", dupKeys)
		}
		cur, err := db.Collection("ins").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, d := range docs {
			seen[d["_id"].(string)]++
		}
		for id := range acked {
			if seen[id] != 1 {
				t.Errorf("acknowledged insert %s present %d times", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 || !acked[id] && !unsure[id] {
				t.Errorf("%s present %d times (acknowledged %v)", id, n, acked[id])
			}
		}
		for k := range counters {
			var d bson.M
			if err := db.Collection("ctr").FindOne(ctx, bson.D{{Key: "k", Value: k}}).Decode(&d); err != nil {
				t.Fatal(err)
			}
			n := int(d["n"].(int32))
			if n < incAcked[k] || n > incAcked[k]+incUnsure[k] {
				t.Errorf("counter %d is %d: %d increments acknowledged, %d failed", k, n, incAcked[k], incUnsure[k])
			}
		}
		t.Logf("%d inserts acknowledged, %d failed; %v increments acknowledged, %v failed", len(acked), len(unsure), incAcked, incUnsure)
		if len(acked) < 20 {
			t.Fatalf("only %d inserts acknowledged: the workload did not run", len(acked))
		}
	})

	// Keys of rw.txn on each shard (hashed, presplit over both).
	c = routerClient(t, kc.router)
	db = c.Database("rw")
	coll := db.Collection("txn")
	onShard := map[string][]int{}
	for k := 0; len(onShard) < 2 || len(onShard["sh0"]) < 6 || len(onShard["sh1"]) < 6; k++ {
		s := shardOf(t, db, "txn", bson.D{{Key: "k", Value: k}})
		onShard[s] = append(onShard[s], k)
	}
	a, b := onShard["sh0"], onShard["sh1"]
	count := func(filter bson.D) int64 {
		n, err := coll.CountDocuments(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("single-shard transaction commits and aborts", func(t *testing.T) {
		sess := startSession(t, c)
		_, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: a[0]}, {Key: "v", Value: "committed"}}); err != nil {
				return nil, err
			}
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "k", Value: a[0]}}, bson.D{{Key: "$set", Value: bson.D{{Key: "w", Value: 1}}}})
			return nil, err
		})
		if err != nil {
			t.Fatalf("single-shard transaction: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: a[0]}, {Key: "w", Value: 1}}); n != 1 {
			t.Fatalf("after commit: %d documents, want 1", n)
		}
		wantErr := errors.New("the callback gives up")
		_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: a[1]}}); err != nil {
				return nil, err
			}
			return nil, wantErr
		})
		if !errors.Is(err, wantErr) {
			t.Fatalf("aborted transaction: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: a[1]}}); n != 0 {
			t.Fatalf("after abort: %d documents, want 0", n)
		}
	})

	t.Run("abort across shards leaves nothing", func(t *testing.T) {
		sess := startSession(t, c)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		for _, k := range []int{a[2], b[0]} {
			if _, err := coll.InsertOne(sctx, bson.D{{Key: "k", Value: k}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sess.AbortTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{a[2], b[0]}}}}}); n != 0 {
			t.Fatalf("after abort: %d documents, want 0", n)
		}
	})

	t.Run("writes on two shards commit by two-phase commit", func(t *testing.T) {
		sess := startSession(t, c)
		_, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			for _, k := range []int{a[3], b[1]} {
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: k}, {Key: "two", Value: true}}); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		if err != nil {
			t.Fatalf("commit of writes on two shards: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{a[3], b[1]}}}}, {Key: "two", Value: true}}); n != 2 {
			t.Fatalf("after the two-phase commit: %d documents, want 2", n)
		}
	})

	t.Run("one shard writes, another reads", func(t *testing.T) {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: b[2]}, {Key: "v", Value: 7}}); err != nil {
			t.Fatal(err)
		}
		sess := startSession(t, c)
		_, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			var d bson.M
			if err := coll.FindOne(ctx, bson.D{{Key: "k", Value: b[2]}}).Decode(&d); err != nil {
				return nil, err
			}
			_, err := coll.InsertOne(ctx, bson.D{{Key: "k", Value: a[3]}, {Key: "copied", Value: d["v"]}})
			return nil, err
		})
		if err != nil {
			t.Fatalf("one writer, one reader: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: a[3]}, {Key: "copied", Value: 7}}); n != 1 {
			t.Fatalf("after commit: %d documents, want 1", n)
		}
	})

	t.Run("commit through a restarted router", func(t *testing.T) {
		// The router that ran the statements is gone; the commit reaches
		// a new one, which has no record of the transaction and commits
		// it by the recoveryToken the driver sends back.
		sess := startSession(t, c)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "k", Value: a[4]}, {Key: "recovered", Value: true}}); err != nil {
			t.Fatal(err)
		}
		kc.stopRouter()
		kc.startRouter(t)
		if err := sess.CommitTransaction(ctx); err != nil {
			t.Fatalf("commit through a restarted router: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: a[4]}, {Key: "recovered", Value: true}}); n != 1 {
			t.Fatalf("after the recovered commit: %d documents, want 1", n)
		}
		// One that wrote on two shards is committed by its coordinator,
		// which the recoveryToken names.
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{a[5], b[5]} {
			if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "k", Value: k}}); err != nil {
				t.Fatal(err)
			}
		}
		kc.stopRouter()
		kc.startRouter(t)
		if err := sess.CommitTransaction(ctx); err != nil {
			t.Fatalf("recovered commit of writes on two shards: %v", err)
		}
		if n := count(bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{a[5], b[5]}}}}}); n != 2 {
			t.Fatalf("after the recovered two-phase commit: %d documents, want 2", n)
		}
		if err := sess.CommitTransaction(ctx); err != nil { // retried: the coordinator's participant committed
			t.Fatalf("retried recovered commit: %v", err)
		}
	})

	t.Run("cross-shard read-only", func(t *testing.T) {
		sess := startSession(t, c)
		// local: each shard's own snapshot (MongoDB's promise for local
		// and majority); the transaction commits.
		n, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			return coll.CountDocuments(ctx, bson.D{})
		}, options.Transaction().SetReadConcern(readconcern.Local()))
		if err != nil || n.(int64) < 3 {
			t.Fatalf("read-only transaction over both shards: %v, %v", n, err)
		}
		// snapshot: one snapshot across shards, every participant at the
		// router's atClusterTime (TestRouterSnapshotBank checks it).
		all, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			return coll.CountDocuments(ctx, bson.D{})
		}, options.Transaction().SetReadConcern(readconcern.Snapshot()))
		if err != nil || all.(int64) != n.(int64) {
			t.Fatalf("snapshot transaction over two shards: %v, %v; want %v", all, err, n)
		}
		// snapshot on one shard is that shard's snapshot.
		_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			return coll.CountDocuments(ctx, bson.D{{Key: "k", Value: a[0]}})
		}, options.Transaction().SetReadConcern(readconcern.Snapshot()))
		if err != nil {
			t.Fatalf("snapshot transaction on one shard: %v", err)
		}
	})
}
