package cairn_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/cairndb/cairn/internal/testnet"
)

// The snapshot wire test: a standalone server's data becomes a replica
// set's (replSetInitiate on a member holding data, allowed as in MongoDB),
// the set writes past several log compactions (CAIRN_RAFT_COMPACT_ENTRIES
// makes members compact every few entries), and two members added later
// catch up by snapshot — a Pebble checkpoint streamed over the member
// connection. The first is killed during its snapshot's install (a fail
// point exits the process once the install has deleted the store's
// contents and copied a batch) and restarted: it installs the snapshot
// again from what it received. At the end every member holds the same
// documents and indexes, every acknowledged write among them. On the
// way, a reconfig that would lose the majority is refused.
func TestReplicaSetSnapshotCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	t.Setenv("CAIRN_RAFT_COMPACT_ENTRIES", "20")
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ports := freePorts(t, 3)
	hosts := make([]string, 3)
	dirs := make([]string, 3)
	for i, p := range ports {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("m%d", i))
	}
	ctx := context.Background()
	acked := map[int64]int64{}
	next := int64(0)
	write := func(coll *mongo.Collection, n int) {
		t.Helper()
		for range n {
			next++
			// Large values, so that a snapshot's copy spans several batches.
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: next}, {Key: "v", Value: next * 7}, {Key: "pad", Value: string(make([]byte, 32<<10))}}); err != nil {
				t.Fatalf("insert %d: %v", next, err)
			}
			acked[next] = next * 7
		}
	}

	// A standalone server's data, durable, then the server killed.
	alone := spawnServe(t, bin, "--port", strconv.Itoa(ports[0]), "--dbpath", dirs[0], "--cacheSizeGB", "0.25")
	alone.waitReady(t)
	c0 := directClient(t, hosts[0])
	write(c0.Database("app").Collection("items"), 150)
	if _, err := c0.Database("app").Collection("items").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	c0.Disconnect(ctx)
	alone.kill()

	// The same directory as a replica set member: initiate with its data.
	m := make([]*memberProc, 3)
	m[0] = startMember(t, bin, dirs[0], ports[0])
	c0 = directClient(t, hosts[0])
	defer c0.Disconnect(ctx)
	member := func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "host", Value: hosts[i]}} }
	config := func(version int, n int) bson.D {
		ms := bson.A{}
		for i := range n {
			ms = append(ms, member(i))
		}
		return bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: version}, {Key: "members", Value: ms}}
	}
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: config(1, 1)}}).Err(); err != nil {
		t.Fatalf("replSetInitiate on a member holding data: %v", err)
	}
	waitHealthy(t, hosts[:1], 1)
	// A reconfig whose voters' majority does not answer is refused
	// (MongoDB's quorum check, NodeNotFound) and changes nothing.
	lost := bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 2}, {Key: "members", Value: bson.A{member(0),
		bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: "127.0.0.1:1"}}}}}
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: lost}}).Err(); cmdCode(err) != 74 {
		t.Fatalf("replSetReconfig losing the majority: %v, want 74 NodeNotFound", err)
	}
	var got struct {
		Config struct {
			Version int `bson:"version"`
		} `bson:"config"`
	}
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&got); err != nil || got.Config.Version != 1 {
		t.Fatalf("config after a refused reconfig: version %d, %v; want 1", got.Config.Version, err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[0] + "/?directConnection=true").SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	items := client.Database("app").Collection("items")
	write(items, 100) // past several compactions

	// A member added after compaction, killed during its install.
	crashMark := filepath.Join(tmp, "crashed-in-restore")
	os.Setenv("CAIRN_TEST_CRASH_IN_RESTORE", crashMark)
	m[1] = startMember(t, bin, dirs[1], ports[1])
	os.Unsetenv("CAIRN_TEST_CRASH_IN_RESTORE")
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: config(2, 2)}}).Err(); err != nil {
		t.Fatalf("replSetReconfig adding a member: %v", err)
	}
	select {
	case <-m[1].done:
	case <-time.After(60 * time.Second):
		t.Fatal("the member being added did not reach its install's fail point within 60s")
	}
	if _, err := os.Stat(crashMark); err != nil {
		t.Fatalf("the member exited, but not at the install's fail point: %v", err)
	}
	// Its snapshot's acknowledgement went out before the install (the
	// snapshot was durable in its log), so it may be a voter already: the
	// set of two has no majority until it is back, as in MongoDB.
	m[1] = startMember(t, bin, dirs[1], ports[1])
	waitHealthy(t, hosts[:2], 2)
	write(items, 30)

	// A third member, added while writes go on.
	m[2] = startMember(t, bin, dirs[2], ports[2])
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: config(3, 3)}}).Err(); err != nil {
		t.Fatalf("replSetReconfig adding a third member: %v", err)
	}
	write(items, 40)
	waitHealthy(t, hosts, 3)
	write(items, 10)

	// Every member: the same documents and indexes, every acked write.
	var want []string
	for id, v := range acked {
		want = append(want, fmt.Sprintf("%d=%d", id, v))
	}
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for i, h := range hosts {
		for {
			got, idx, err := memberContents(h)
			if err == nil && slices.Equal(got, want) && slices.Equal(idx, []string{"_id_", "v_1"}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d (%s): %d documents (want %d), indexes %v, err %v", i, h, len(got), len(want), idx, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// memberContents reads one member's app.items directly: each document as
// "_id=v" sorted, and the index names.
func memberContents(host string) ([]string, []string, error) {
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").
		SetReadPreference(readpref.SecondaryPreferred()).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return nil, nil, err
	}
	defer c.Disconnect(ctx)
	coll := c.Database("app").Collection("items")
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "pad", Value: 0}}))
	if err != nil {
		return nil, nil, err
	}
	var docs []struct {
		ID int64 `bson:"_id"`
		V  int64 `bson:"v"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, nil, err
	}
	var out []string
	for _, d := range docs {
		out = append(out, fmt.Sprintf("%d=%d", d.ID, d.V))
	}
	slices.Sort(out)
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return nil, nil, err
	}
	var idx []string
	for _, s := range specs {
		idx = append(idx, s.Name)
	}
	slices.Sort(idx)
	return out, idx, nil
}

// TestReplicaSetCatchUpLarge measures how long a member added to a set
// holding CAIRN_CATCHUP_MB megabytes of documents takes to catch up by
// snapshot and log (the set compacts every 100 entries, so the new member
// cannot catch up from the log alone), while a client keeps writing.
// Skipped unless CAIRN_CATCHUP_MB is set: `make replset-catchup` runs it
// with 1024.
func TestReplicaSetCatchUpLarge(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("CAIRN_CATCHUP_MB"))
	if mb <= 0 {
		t.Skip("set CAIRN_CATCHUP_MB (make replset-catchup)")
	}
	t.Setenv("CAIRN_RAFT_COMPACT_ENTRIES", "100")
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ports := freePorts(t, 2)
	hosts := []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	ctx := context.Background()
	startMember(t, bin, filepath.Join(tmp, "m0"), ports[0])
	c0 := directClient(t, hosts[0])
	defer c0.Disconnect(ctx)
	member := func(i int) bson.D { return bson.D{{Key: "_id", Value: i}, {Key: "host", Value: hosts[i]}} }
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{member(0)}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, hosts[:1], 1)
	coll := c0.Database("app").Collection("items")
	pad := string(make([]byte, 1000))
	const batch = 1000
	docs := mb * 1000 // ~1 KiB each
	loadStart := time.Now()
	for i := 0; i < docs; i += batch {
		var b []any
		for j := i; j < i+batch && j < docs; j++ {
			b = append(b, bson.D{{Key: "_id", Value: int64(j)}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(ctx, b); err != nil {
			t.Fatalf("load at %d: %v", i, err)
		}
	}
	t.Logf("loaded %d documents (%d MB) in %v", docs, mb, time.Since(loadStart).Round(time.Millisecond))
	startMember(t, bin, filepath.Join(tmp, "m1"), ports[1])
	start := time.Now()
	if err := c0.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 2}, {Key: "members", Value: bson.A{member(0), member(1)}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	// Writes go on while the member catches up.
	next := int64(docs)
	for countHealthy(hosts[0]) < 2 {
		if time.Since(start) > 30*time.Minute {
			t.Fatal("the new member did not catch up within 30 minutes")
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: next}}); err == nil {
			next++
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	healthy := time.Since(start)
	dc, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[1] + "/?directConnection=true").
		SetReadPreference(readpref.SecondaryPreferred()))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Disconnect(ctx)
	for {
		n, err := dc.Database("app").Collection("items").CountDocuments(ctx, bson.D{})
		if err == nil && n == next {
			break
		}
		if time.Since(start) > 30*time.Minute {
			t.Fatalf("the new member holds %d documents (%v), the primary acknowledged %d", n, err, next)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("catch-up of a member added to a set holding %d MB: a voter (SECONDARY) after %v, every acknowledged document after %v (%d written meanwhile)",
		mb, healthy.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), next-int64(docs))
}
