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

// systemClient connects directly to host as the internal user
// __system@local with key (MongoDB's keyFile authentication); key ""
// connects without credentials.
func systemClient(t *testing.T, host, key string) *mongo.Client {
	t.Helper()
	if key == "" {
		return directClient(t, host)
	}
	return userClient(t, "mongodb://"+host+"/?directConnection=true", options.Credential{Username: "__system", Password: key, AuthSource: "local", AuthMechanism: "SCRAM-SHA-256"})
}

func userClient(t *testing.T, uri string, cred options.Credential) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(testnet.ConnectWait).SetAuth(cred))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// startRouter starts `cairn router` on a free port with args and waits
// until it listens.
func startRouter(t *testing.T, bin string, args ...string) string {
	t.Helper()
	port := freePorts(t, 1)[0]
	cmd := exec.Command(bin, append([]string{"router", "--port", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatal("the router is not listening after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShardedClusterKeyFile: a sharded cluster whose config servers,
// shards and router share a keyFile, as MongoDB 7.0's. Every member-to-
// member connection authenticates as __system: the router's to the config
// servers and shards, the shards' to the config servers and to each other
// in a migration. Clients authenticate at the router against users the
// config servers hold: an unauthenticated client is refused (13) for data
// commands; the first user is made through the localhost exception; a
// readWrite user inserts and reads across two shards but may not touch
// another database or the cluster; a shard started without the key cannot
// be added.
func TestShardedClusterKeyFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers and a router")
	}
	ctx := context.Background()
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	const key = "a2V5IG9mIHRoZSBzaGFyZGVkIGNsdXN0ZXI="
	keyFile := filepath.Join(tmp, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	cfgHost := startKeyedSet(t, bin, filepath.Join(tmp, "cfg"), "cfg", "configsvr", keyFile, key)
	var shards []string
	for i := range 2 {
		name := fmt.Sprintf("sh%d", i)
		shards = append(shards, name+"/"+startKeyedSet(t, bin, filepath.Join(tmp, name), name, "shardsvr", keyFile, key))
	}
	rogue := spawnServe(t, bin, "--shardsvr", "--port", "0", "--dbpath", filepath.Join(tmp, "rogue"), "--cacheSizeGB", "0.25").waitReady(t) // no key
	router := startRouter(t, bin, "--configdb", "cfg/"+cfgHost, "--keyFile", keyFile)

	anon := routerClient(t, router)
	if err := anon.Ping(ctx, nil); err != nil {
		t.Fatalf("the handshake and ping run before authentication: %v", err)
	}
	_, err := anon.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "k", Value: 1}})
	wantCode(t, "insert without authentication", err, 13)
	wantCode(t, "find without authentication", anon.Database("app").Collection("c").FindOne(ctx, bson.D{}).Err(), 13)
	wantCode(t, "listShards without authentication", anon.Database("admin").RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Err(), 13)

	// The localhost exception: the first user, then nothing more.
	runAdmin(t, anon, bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "rootpw"}, {Key: "roles", Value: bson.A{"root"}}})
	wantCode(t, "a second user without authentication", anon.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "x"},
		{Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}).Err(), 13)

	routerURI := "mongodb://" + router + "/"
	root := userClient(t, routerURI, options.Credential{Username: "root", Password: "rootpw"})
	for _, s := range shards {
		runAdmin(t, root, bson.D{{Key: "addShard", Value: s}})
	}
	err = root.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: rogue}}).Err()
	if anyCode(err) != 96 || !strings.Contains(err.Error(), "Authentication failed") {
		t.Fatalf("addShard of a shard without the key: %v, want OperationFailed naming the failed authentication", err)
	}
	runAdmin(t, root, bson.D{{Key: "createUser", Value: "app"}, {Key: "pwd", Value: "apppw"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}})
	runAdmin(t, root, bson.D{{Key: "enableSharding", Value: "app"}})
	if _, err := root.Database("app").Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	runAdmin(t, root, bson.D{{Key: "shardCollection", Value: "app.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}})
	runAdmin(t, root, bson.D{{Key: "split", Value: "app.c"}, {Key: "middle", Value: bson.D{{Key: "k", Value: 50}}}})

	// The users live on the config servers, not on the shards.
	cfgSys := systemClient(t, cfgHost, key)
	if n, err := cfgSys.Database("admin").Collection("system.users").CountDocuments(ctx, bson.D{{Key: "user", Value: "app"}}); err != nil || n != 1 {
		t.Fatalf("app in the config servers' admin.system.users: %d, %v", n, err)
	}
	for _, s := range shards {
		sys := systemClient(t, strings.SplitN(s, "/", 2)[1], key)
		if n, _ := sys.Database("admin").Collection("system.users").CountDocuments(ctx, bson.D{}); n != 0 {
			t.Fatalf("%s holds %d users; the cluster's live on the config servers", s, n)
		}
	}

	// A chunk moves between the shards (before any document is written, so
	// no orphan waits for the range deleter): the donor and recipient reach
	// each other and the config servers as __system.
	dest := strings.SplitN(shards[1], "/", 2)[0]
	if owner := countChunks(t, cfgSys, "app.c"); owner[dest] == 2 {
		dest = strings.SplitN(shards[0], "/", 2)[0]
	}
	runAdmin(t, root, bson.D{{Key: "moveChunk", Value: "app.c"}, {Key: "find", Value: bson.D{{Key: "k", Value: 75}}}, {Key: "to", Value: dest}})
	if owners := countChunks(t, cfgSys, "app.c"); len(owners) != 2 {
		t.Fatalf("chunks after the move: %v, want one on each shard", owners)
	}
	app := userClient(t, routerURI, options.Credential{Username: "app", Password: "apppw"})
	coll := app.Database("app").Collection("c")
	var docs []any
	for k := range 100 {
		docs = append(docs, bson.D{{Key: "k", Value: k}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatalf("readWrite user's insert through the router: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 100 {
		t.Fatalf("readWrite user's count across the shards: %d, %v", n, err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "k", Value: 1}}))
	if err != nil {
		t.Fatalf("readWrite user's find through the router: %v", err)
	}
	var found []struct {
		K int `bson:"k"`
	}
	if err := cur.All(ctx, &found); err != nil || len(found) != 100 || found[0].K != 0 || found[99].K != 99 {
		t.Fatalf("readWrite user's find across the shards: %d documents, %v", len(found), err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 50}}}}); err != nil || n != 50 {
		t.Fatalf("readWrite user's targeted count: %d, %v", n, err)
	}
	for _, s := range shards {
		sys := systemClient(t, strings.SplitN(s, "/", 2)[1], key)
		if n, _ := sys.Database("app").Collection("c").CountDocuments(ctx, bson.D{}); n != 50 {
			t.Fatalf("%s holds %d documents, want 50", s, n)
		}
	}
	_, err = app.Database("other").Collection("c").InsertOne(ctx, bson.D{{Key: "k", Value: 1}})
	wantCode(t, "readWrite on app inserting into other", err, 13)
	wantCode(t, "readWrite on app adding a shard", app.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: rogue}}).Err(), 13)
	wantCode(t, "readWrite on app sharding a collection", app.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "app.d"},
		{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}}).Err(), 13)
	if err := userClient(t, routerURI, options.Credential{Username: "app", Password: "nope"}).Ping(ctx, nil); err == nil || !strings.Contains(err.Error(), "Authentication failed") {
		t.Fatalf("a wrong password: %v, want AuthenticationFailed", err)
	}

	// A user dropped through the router loses its privileges there.
	runAdmin(t, root, bson.D{{Key: "dropUser", Value: "app"}})
	_, err = coll.InsertOne(ctx, bson.D{{Key: "k", Value: 1000}})
	wantCode(t, "insert by a dropped user", err, 13)
}
