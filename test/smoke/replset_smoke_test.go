package smoke

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClientsReplSet runs mongosh's replica-set helpers (rs.status,
// rs.conf, rs.add, rs.stepDown) and the Node.js driver with replicaSet=
// against three `cairn serve --replSet rs0` members initiated here, and a
// fourth member the mongosh script adds.
func TestClientsReplSet(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "..", "..")
	node := tool(t, "node")
	installClients(t, dir)
	readInputs(t, root)
	bin := buildCairn(t, root)
	var hosts []string
	for range 4 {
		port := freePort(t)
		srv := startServer(t, bin, "--replSet", "rs0", "--port", fmt.Sprint(port))
		hosts = append(hosts, srv.addr)
	}
	initiate(t, hosts[:3])
	uri := "mongodb://" + strings.Join(hosts[:3], ",") + "/?replicaSet=rs0"
	env := clientEnv(t)
	for _, c := range []client{
		{
			name: "node-replset", script: "replset_node.mjs",
			argv:   func(node, _, _ string) []string { return []string{node, "replset_node.mjs", uri} },
			checks: []string{"connect-replicaSet", "majority-write", "secondary-read", "retryable-write-session"},
		},
		{
			name: "mongosh-replset", script: "replset_mongosh.js",
			argv: func(_, dir, _ string) []string {
				return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"), uri, "--quiet", "--norc", "--file", "replset_mongosh.js"}
			},
			checks: []string{"rs.status", "rs.conf", "rs.add", "rs.stepDown", "write-after-stepDown"},
		},
	} {
		stdout, stderr, err := run(t, dir, append(env, "NEW_MEMBER="+hosts[3]), c.argv(node, dir, ""))
		t.Run(c.name, func(t *testing.T) { c.verify(t, stdout, stderr, err) })
	}
}

// freePort is a loopback port free a moment ago: a member must know its
// own port before it starts, to find itself in the set's configuration.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// initiate runs replSetInitiate on the first host and waits for a primary.
func initiate(t *testing.T, hosts []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	first, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[0] + "/?directConnection=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Disconnect(ctx)
	members := bson.A{}
	for i, h := range hosts {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members}}
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	set, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=rs0"))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Disconnect(ctx)
	for {
		var st struct {
			Members []struct {
				State int `bson:"state"`
			} `bson:"members"`
		}
		err := set.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st)
		up := 0
		for _, m := range st.Members {
			if m.State == 1 || m.State == 2 {
				up++
			}
		}
		if err == nil && up == len(hosts) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the set had no primary and %d secondaries within %s: %v", len(hosts)-1, readyTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
