package cairn_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
)

// TestReplicaSetKeyFile: three `cairn serve --replSet --keyFile` members,
// two holding one key and the third another. The client authenticates as
// the internal user __system@local with SCRAM-SHA-256 and the key as its
// password (MongoDB's internal authentication), initiates the set, and
// writes with w: majority. The two members with the same key form the set
// and replicate; the member with the other key never joins (its peers
// refuse its connections and it refuses theirs), so it holds none of the
// data. Without credentials, a member refuses everything but the
// handshake (--keyFile implies --auth).
func TestReplicaSetKeyFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	writeKey := func(name, key string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(key+"\n"), 0o400); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys := []string{"c2hhcmVkIHNlY3JldCBvZiB0aGUgc2V0", "c2hhcmVkIHNlY3JldCBvZiB0aGUgc2V0", "YW5vdGhlciBzZWNyZXQ="}
	ports := freePorts(t, 3)
	hosts := make([]string, 3)
	for i, p := range ports {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		proc := spawnServe(t, bin, "--replSet", "rs0", "--port", strconv.Itoa(p), "--dbpath", filepath.Join(tmp, fmt.Sprintf("m%d", i)),
			"--cacheSizeGB", "0.25", "--keyFile", writeKey(fmt.Sprintf("key%d", i), keys[i]))
		proc.waitReady(t)
	}
	ctx := context.Background()
	system := func(i int, extra string) *mongo.Client {
		t.Helper()
		uri := "mongodb://" + hosts[i] + "/?directConnection=true" + extra
		c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(testnet.ConnectWait).
			SetAuth(options.Credential{Username: "__system", Password: keys[i], AuthSource: "local", AuthMechanism: "SCRAM-SHA-256"}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Disconnect(ctx) })
		return c
	}
	anon := directClient(t, hosts[0])
	defer anon.Disconnect(ctx)
	if code := cmdCode(anon.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Err()); code != 13 {
		t.Fatalf("replSetGetStatus without credentials: code %d, want 13 Unauthorized", code)
	}
	wrong, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[0] + "/?directConnection=true").SetServerSelectionTimeout(5 * time.Second).
		SetAuth(options.Credential{Username: "__system", Password: keys[2], AuthSource: "local", AuthMechanism: "SCRAM-SHA-256"}))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Disconnect(ctx)
	if code := cmdCode(wrong.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()); code != 18 {
		t.Fatalf("__system with another key: code %d, want 18 AuthenticationFailed", code)
	}

	first := system(0, "")
	members := bson.A{}
	for i, h := range hosts {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members}}}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	coll := first.Database("app").Collection("items", options.Collection().SetWriteConcern(writeconcern.Majority()))
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no majority write within 60s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 2; i <= 20; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	countErr := func(i int) (int64, error) {
		return system(i, "").Database("app").Collection("items").CountDocuments(ctx, bson.D{})
	}
	count := func(i int) int64 {
		n, err := countErr(i)
		if err != nil {
			return -1
		}
		return n
	}
	deadline = time.Now().Add(30 * time.Second)
	for count(1) != 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the member with the set's key has %d of 20 documents", count(1))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An uninitiated member answers reads NotPrimaryOrSecondary (13436);
	// either way it holds nothing.
	if n, err := countErr(2); n != 0 || (err != nil && cmdCode(err) != 13436) {
		t.Fatalf("the member with another key: %d documents, err %v", n, err)
	}
	// Signed cluster times across members: an ordinary user (no
	// advanceClusterTime) gets $clusterTime signed by a key the primary
	// made; a secondary, knowing that key by replication, accepts the time
	// and refuses it advanced under the same signature (TimeProofMismatch
	// 204, not KeyNotFound 211: it has the key).
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "app"}, {Key: "pwd", Value: "app-pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	asApp := func(i int) *mongo.Client {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[i] + "/?directConnection=true").SetServerSelectionTimeout(testnet.ConnectWait).
			SetAuth(options.Credential{Username: "app", Password: "app-pw", AuthSource: "admin"}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Disconnect(ctx) })
		return c
	}
	appPrimary := asApp(0)
	// The user reaches the secondary by replication (its users are read
	// again every second there).
	var appSecondary *mongo.Client
	deadline = time.Now().Add(15 * time.Second)
	for {
		appSecondary = asApp(1)
		err := appSecondary.Database("app").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user created on the primary cannot authenticate on the secondary: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var signed bson.Raw
	deadline = time.Now().Add(30 * time.Second)
	for {
		raw, err := appPrimary.Database("app").RunCommand(ctx, bson.D{{Key: "insert", Value: "items"}, {Key: "documents", Value: bson.A{bson.D{}}},
			{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		ct := raw.Lookup("$clusterTime").Document()
		if id, _ := ct.Lookup("signature", "keyId").Int64OK(); id != 0 {
			signed = ct
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no signed $clusterTime for an ordinary user within 30s: %s", ct)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The driver gossips the highest $clusterTime its session has seen:
	// hand the session the one to send.
	gossip := func(ct any) error {
		sess, err := appSecondary.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		raw, err := bson.Marshal(bson.D{{Key: "$clusterTime", Value: ct}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.AdvanceClusterTime(raw); err != nil {
			t.Fatal(err)
		}
		return appSecondary.Database("app").RunCommand(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "ping", Value: 1}}).Err()
	}
	if err := gossip(signed); err != nil {
		t.Fatalf("the secondary refused the primary's signed $clusterTime: %v", err)
	}
	ts, _ := signed.Lookup("clusterTime").Timestamp()
	forged := bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: ts + 1000, I: 1}}, {Key: "signature", Value: signed.Lookup("signature").Document()}}
	if code := cmdCode(gossip(forged)); code != 204 {
		t.Fatalf("an advanced $clusterTime under an old signature on the secondary: code %d, want 204 TimeProofMismatch", code)
	}

	var hello struct {
		SetName string `bson:"setName"`
	}
	if err := system(2, "").Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if hello.SetName != "" {
		t.Fatalf("the member with another key joined set %q", hello.SetName)
	}
}
