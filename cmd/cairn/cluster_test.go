package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
	"github.com/cairndb/cairn/internal/testpki"
)

// TestClusterUpSharded runs `cairn cluster up --shards 2 --replicas 1
// --routers 2`: the printed connection string reaches both routers, a
// hashed collection spreads over both shards, and Ctrl-C stops every
// process and says so.
func TestClusterUpSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	port := testnet.FreeRange(t, 5)
	cmd, uri, lines := clusterUp(t, "--shards", "2", "--replicas", "1", "--routers", "2",
		"--port", strconv.Itoa(port), "--dbpath", t.TempDir())
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	var shards struct {
		Shards []bson.M `bson:"shards"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&shards); err != nil || len(shards.Shards) != 2 {
		t.Fatalf("listShards: %v %v", shards, err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "t.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "k", Value: i}})
	}
	if _, err := c.Database("t").Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Database("t").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 100 {
		t.Fatalf("count through the routers: %d, %v", n, err)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cluster up after Ctrl-C: %v", err)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "stopped" {
		t.Fatalf("cluster up's last lines: %q", rest)
	}
}

// clusterUp starts `cairn cluster up args...` and returns it, the
// connection string it prints once the cluster is up, and its further
// output lines.
func clusterUp(t *testing.T, args ...string) (*exec.Cmd, string, chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"cluster", "up"}, args...)...)
	cmd.Env = append(os.Environ(), "CAIRN_TEST_AS_CAIRN=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(90 * time.Second)
	members := map[string][]string{} // set name → its members' hosts, from "NAME member I: HOST, pid P, ..."
	primaries := map[string]string{} // set name → the host of "NAME's primary: HOST"
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("cluster up ended before the cluster was up")
			}
			var set, host string
			var i, pid int
			if n, _ := fmt.Sscanf(l, "%s member %d: %s pid %d,", &set, &i, &host, &pid); n == 4 {
				// The printed pid is the member's process: it is running.
				if err := syscall.Kill(pid, 0); err != nil {
					t.Fatalf("%q: pid %d: %v", l, pid, err)
				}
				members[set] = append(members[set], strings.TrimSuffix(host, ","))
			}
			if name, h, found := strings.Cut(l, "'s primary: "); found {
				if !slices.Contains(members[name], h) {
					t.Fatalf("%q: %s is not one of %s's members %v", l, h, name, members[name])
				}
				primaries[name] = h
			}
			if _, after, found := strings.Cut(l, " is up: "); found { // "sharded cluster is up", "replica set rs0 is up"
				for name := range members {
					if primaries[name] == "" {
						t.Fatalf("cluster up printed no primary for %s", name)
					}
				}
				return cmd, after, lines
			}
		case <-timeout:
			t.Fatal("no connection string within 90s")
		}
	}
}

// TestClusterUpKeyFile runs `cairn cluster up --shards 1 --replicas 1
// --generateKeyFile --user admin --password pw`: the key file is written
// readable by its owner only, the printed connection string names the
// first user (made through the localhost exception), who can shard and
// write; a client without credentials is refused (13).
func TestClusterUpKeyFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	dir := t.TempDir()
	port := testnet.FreeRange(t, 3)
	cmd, uri, _ := clusterUp(t, "--shards", "1", "--replicas", "1", "--routers", "1", "--port", strconv.Itoa(port), "--dbpath", dir,
		"--generateKeyFile", "--user", "admin", "--password", "pw")
	defer func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() }()
	st, err := os.Stat(filepath.Join(dir, "keyfile"))
	if err != nil || st.Mode().Perm() != 0o400 {
		t.Fatalf("the generated key file: %v, %v", st, err)
	}
	if !strings.Contains(uri, "admin@") || !strings.Contains(uri, "authSource=admin") {
		t.Fatalf("the connection string %q does not name the first user", uri)
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(testnet.ConnectWait).
		SetAuth(options.Credential{Username: "admin", Password: "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "t.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("t").Collection("c").InsertOne(ctx, bson.D{{Key: "k", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	anon, err := mongo.Connect(options.Client().ApplyURI(strings.Replace(uri, "admin@", "", 1)).SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Disconnect(ctx)
	_, err = anon.Database("t").Collection("c").InsertOne(ctx, bson.D{{Key: "k", Value: 2}})
	var we mongo.WriteException
	var ce mongo.CommandError
	if !(errors.As(err, &ce) && ce.Code == 13) && !(errors.As(err, &we) && we.WriteConcernError == nil && len(we.WriteErrors) > 0 && we.WriteErrors[0].Code == 13) {
		t.Fatalf("an insert without credentials: %v, want Unauthorized (13)", err)
	}
}

// TestClusterUpTLS runs `cairn cluster up --replicas 2 --tlsMode requireTLS`
// with a member certificate and CA made in the test: the members replicate
// to each other over TLS (a w: 2 write is acknowledged), the printed
// connection string carries the TLS options a driver needs, and a plain
// client is refused.
func TestClusterUpTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	ca := testpki.New(t, "Cairn test CA")
	_, pem := ca.Issue(t, "member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	port := testnet.FreeRange(t, 2)
	cmd, uri, _ := clusterUp(t, "--replicas", "2", "--port", strconv.Itoa(port), "--dbpath", t.TempDir(),
		"--tlsMode", "requireTLS", "--tlsCertificateKeyFile", pem, "--tlsCAFile", ca.CAFile)
	defer func() { _ = cmd.Process.Signal(syscall.SIGINT); _ = cmd.Wait() }()
	if !strings.Contains(uri, "tls=true") || !strings.Contains(uri, "tlsCAFile=") {
		t.Fatalf("the connection string %q has no TLS options", uri)
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	coll := c.Database("t").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 2}))
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("a w: 2 insert: %v", err)
	}
	plain, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:" + strconv.Itoa(port) + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Disconnect(ctx)
	if err := plain.Ping(ctx, nil); err == nil {
		t.Error("a plain client reached a requireTLS member")
	}
}
