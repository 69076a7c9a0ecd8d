package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
)

// The replica set wire test: three real `cairn serve --replSet` processes
// on loopback, initiated with replSetInitiate, the Go driver connected
// with replicaSet=, writes replicated, the primary killed with SIGKILL, a
// new primary elected and the driver writing on, the killed member
// restarted, and then every majority-acknowledged write present on every
// member and the members' documents identical. Seeded (the seed is
// printed; CAIRN_REPLSET_SEED replays); CAIRN_REPLSET_ROUNDS kills the
// primary that many times (default 3; `make replset-soak` runs more).
func TestReplicaSetSurvivesPrimaryKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	seed := envSeed("CAIRN_REPLSET_SEED")
	// Three rounds by default: a member restarted, then elected, then
	// another killed is where a restarted member's configuration matters
	// (repl's "Configuration survives restarts").
	rounds := envInt("CAIRN_REPLSET_ROUNDS", 3)
	t.Logf("seed %d (CAIRN_REPLSET_SEED=%d replays), %d rounds", seed, seed, rounds)
	rnd := rand.New(rand.NewPCG(seed, seed))
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ports := freePorts(t, 3)
	members := make([]*memberProc, 3)
	for i := range members {
		members[i] = startMember(t, bin, filepath.Join(tmp, fmt.Sprintf("m%d", i)), ports[i])
	}
	hosts := make([]string, 3)
	for i, p := range ports {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	ctx := context.Background()

	// Before initiate: a member answers as an uninitiated one.
	first := directClient(t, hosts[0])
	var hello bson.M
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if hello["isWritablePrimary"] != false || hello["isreplicaset"] != true {
		t.Fatalf("uninitiated member's hello: %v", hello)
	}
	cfgMembers := bson.A{}
	for i, h := range hosts {
		cfgMembers = append(cfgMembers, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: cfgMembers}}
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	// A second initiate is AlreadyInitialized.
	if code := cmdCode(first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err()); code != 23 {
		t.Fatalf("second replSetInitiate: code %d, want 23 AlreadyInitialized", code)
	}
	waitHealthy(t, hosts, 3)

	uri := "mongodb://" + hosts[0] + "," + hosts[1] + "," + hosts[2] + "/?replicaSet=rs0"
	// Retryable writes (the driver's default): each insert carries lsid and
	// txnNumber, and its record rides in its commit group, so a retry on
	// the new primary answers from the record instead of inserting twice.
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetRetryWrites(true).
		SetServerSelectionTimeout(testnet.ConnectWait).SetWriteConcern(writeconcern.Majority()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("app").Collection("items")
	acked := map[int64]int64{} // _id → value of every acknowledged write
	next := int64(0)
	write := func(n int) {
		t.Helper()
		for range n {
			next++
			v := rnd.Int64N(1 << 40)
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: next}, {Key: "v", Value: v}}); err != nil {
				t.Fatalf("insert %d: %v", next, err)
			}
			acked[next] = v
		}
	}
	write(20 + rnd.IntN(20))
	// Sequential ids keep rising across failover: a new primary restarts
	// its generator above the start timestamp the set persisted.
	if err := client.Database("app").RunCommand(ctx, bson.D{{Key: "create", Value: "seq"}, {Key: "idGenerator", Value: "sequential"}}).Err(); err != nil {
		t.Fatal(err)
	}
	seqIDs := func() []string {
		t.Helper()
		var reply struct {
			GeneratedIDs []struct {
				ID string `bson:"_id"`
			} `bson:"generatedIds"`
		}
		err := client.Database("app").RunCommand(ctx, bson.D{{Key: "insert", Value: "seq"}, {Key: "documents", Value: bson.A{bson.D{}, bson.D{}, bson.D{}}}}).Decode(&reply)
		if err != nil || len(reply.GeneratedIDs) != 3 {
			t.Fatalf("insert into the sequential collection: %+v, %v", reply, err)
		}
		var out []string
		for _, g := range reply.GeneratedIDs {
			out = append(out, g.ID)
		}
		return out
	}
	lastID := slices.Max(seqIDs())

	// Secondaries serve secondaryOk reads and refuse writes.
	primary := primaryOf(t, hosts)
	for i, h := range hosts {
		if i == primary {
			continue
		}
		dc := directClient(t, h)
		// A direct connection reads primaryPreferred (server selection
		// spec), which a secondary serves; mode primary it refuses.
		if n, err := dc.Database("app").Collection("items").CountDocuments(ctx, bson.D{}); err != nil || n == 0 {
			t.Errorf("secondaryOk read on secondary %s: %d documents, %v", h, n, err)
		}
		// (A read without secondaryOk, which the driver never sends to a
		// secondary, is internal/commands' TestReplicaSetChecks.)
		_, err := dc.Database("app").Collection("items").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
		if code := cmdCode(err); code != 10107 {
			t.Errorf("write on secondary %s: %v, want 10107", h, err)
		}
		dc.Disconnect(ctx)
	}

	var failovers []time.Duration
	defer func() { logFailovers(t, failovers) }()
	for round := range rounds {
		primary = primaryOf(t, hosts)
		killed := members[primary]
		killed.kill()
		start := time.Now()
		// The first majority write after the kill: the failover time a
		// client sees.
		for {
			next++
			v := rnd.Int64N(1 << 40)
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: next}, {Key: "v", Value: v}})
			cancel()
			if err == nil {
				acked[next] = v
				break
			}
			if time.Since(start) > 60*time.Second {
				t.Fatalf("round %d: no write succeeded 60s after killing the primary: %v", round, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		failovers = append(failovers, time.Since(start))
		t.Logf("round %d: killed primary %s; first majority write after %v", round, hosts[primary], time.Since(start).Round(time.Millisecond))
		write(10 + rnd.IntN(10))
		ids := seqIDs()
		if slices.Min(ids) <= lastID {
			t.Errorf("round %d: the new primary issued sequential id %s, not above %s issued before the failover", round, slices.Min(ids), lastID)
		}
		lastID = slices.Max(ids)
		members[primary] = startMember(t, bin, killed.dir, killed.port)
		waitHealthy(t, hosts, 3)
		write(5)
	}
	// Every member holds every acknowledged write, and the same documents.
	var want []bson.M
	for id := int64(1); id <= next; id++ {
		if v, ok := acked[id]; ok {
			want = append(want, bson.M{"_id": id, "v": v})
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var firstDocs []bson.M
	for i, h := range hosts {
		dc := directClient(t, h)
		for {
			got := readAll(t, dc)
			err := sameDocs(got, want, acked)
			if err == nil && i > 0 && fmt.Sprint(canonical(got)) != fmt.Sprint(canonical(firstDocs)) {
				err = fmt.Errorf("holds %d documents, %s holds %d: the members differ: %s", len(got), hosts[0], len(firstDocs), docsDiff(got, firstDocs))
			}
			if err == nil {
				if i == 0 {
					firstDocs = got
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %s: %v", h, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		dc.Disconnect(ctx)
	}
}

// logFailovers prints the distribution of the failover times measured.
func logFailovers(t *testing.T, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond) }
	t.Logf("failover (kill -9 of the primary → first majority write), %d trials: min %v, median %v, p90 %v, p99 %v, max %v",
		len(s), s[0].Round(time.Millisecond), q(0.5), q(0.9), q(0.99), s[len(s)-1].Round(time.Millisecond))
}

// sameDocs checks got holds every acknowledged write with its value; a
// write whose acknowledgement was lost (an error at the kill) may be
// present too, with the value it was sent with.
func sameDocs(got, want []bson.M, acked map[int64]int64) error {
	byID := map[int64]int64{}
	for _, d := range got {
		id, _ := d["_id"].(int64)
		v, _ := d["v"].(int64)
		byID[id] = v
	}
	for _, w := range want {
		id := w["_id"].(int64)
		if v, ok := byID[id]; !ok || v != w["v"].(int64) {
			return fmt.Errorf("acknowledged write _id %d (v %d) missing or different (%d, %v) among %d documents", id, w["v"], v, ok, len(got))
		}
	}
	return nil
}

func readAll(t *testing.T, c *mongo.Client) []bson.M {
	t.Helper()
	cur, err := c.Database("app").Collection("items", options.Collection().SetReadPreference(readpref.SecondaryPreferred())).
		Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil
	}
	var out []bson.M
	if err := cur.All(context.Background(), &out); err != nil {
		return nil
	}
	return out
}

// memberProc is a running `cairn serve --replSet` child.
type memberProc struct {
	*serveProc
	dir  string
	port int
}

func startMember(t *testing.T, bin, dir string, port int) *memberProc {
	t.Helper()
	p := spawnServe(t, bin, "--replSet", "rs0", "--port", strconv.Itoa(port), "--dbpath", dir, "--cacheSizeGB", "0.25")
	p.waitReady(t)
	return &memberProc{serveProc: p, dir: dir, port: port}
}

// handedOut holds every port freePorts returned in this test process: the
// cluster tests run in parallel (t.Parallel: they wait on their processes
// most of the time), and a port one test was given and has not bound yet
// must not go to another.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	var lns []net.Listener
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln) // held until every port is chosen, so none repeats within a call
		port := ln.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func directClient(t *testing.T, host string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").
		SetServerSelectionTimeout(testnet.ConnectWait).SetRetryWrites(false).SetRetryReads(false))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cmdCode(err error) int {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return we.WriteErrors[0].Code
		}
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range []int{10107, 13435, 23, 93, 74, 103, 11602, 64, 100} {
			if se.HasErrorCode(c) {
				return c
			}
		}
	}
	return -1
}

// waitHealthy waits until the primary's replSetGetStatus shows n healthy
// members (PRIMARY or SECONDARY) that are voters.
func waitHealthy(t *testing.T, hosts []string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, h := range hosts {
			if countHealthy(h) >= n {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no primary with %d healthy members within 60s", n)
}

func countHealthy(host string) int {
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		return 0
	}
	defer c.Disconnect(context.Background())
	var st struct {
		MyState int `bson:"myState"`
		Members []struct {
			State int `bson:"state"`
		} `bson:"members"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil || st.MyState != 1 {
		return 0
	}
	n := 0
	for _, m := range st.Members {
		if m.State == 1 || m.State == 2 {
			n++
		}
	}
	return n
}

// primaryOf returns the index of the member that says it is primary.
func primaryOf(t *testing.T, hosts []string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for i, h := range hosts {
			if isWritablePrimary(h) {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no primary within 30s")
	return -1
}

// isWritablePrimary reports whether the member at host says it is the
// primary (false when it does not answer).
func isWritablePrimary(host string) bool {
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		return false
	}
	defer c.Disconnect(context.Background())
	var hello struct {
		Primary bool `bson:"isWritablePrimary"`
	}
	err = c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
	return err == nil && hello.Primary
}

// canonical is each document as "_id=v" (bson.M's own String has no
// fixed field order).
func canonical(docs []bson.M) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = fmt.Sprintf("%v=%v", d["_id"], d["v"])
	}
	return out
}

// docsDiff lists the documents only one of a and b holds.
func docsDiff(a, b []bson.M) string {
	ca, cb := canonical(a), canonical(b)
	var out []string
	for _, d := range ca {
		if !slices.Contains(cb, d) {
			out = append(out, "only here: "+d)
		}
	}
	for _, d := range cb {
		if !slices.Contains(ca, d) {
			out = append(out, "only there: "+d)
		}
	}
	return fmt.Sprint(out)
}
