package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
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

// TestClusterUpSharded runs `cairn cluster up --shards 2 --replicas 1
// --routers 2`: the printed connection string reaches both routers, a
// hashed collection spreads over both shards, and Ctrl-C stops every
// process and says so.
func TestClusterUpSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	port := testnet.FreeRange(t, 5)
	cmd := exec.Command(os.Args[0], "cluster", "up", "--shards", "2", "--replicas", "1", "--routers", "2",
		"--port", strconv.Itoa(port), "--dbpath", t.TempDir())
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
	var uri string
	timeout := time.After(90 * time.Second)
	for uri == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("cluster up ended before the cluster was up")
			}
			if _, after, found := strings.Cut(l, "sharded cluster is up: "); found {
				uri = after
			}
		case <-timeout:
			t.Fatal("no connection string within 90s")
		}
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second))
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
