package cairn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/testpki"
)

// TestShardedClusterTLS: a sharded cluster whose every process runs with
// --tlsMode requireTLS and a keyFile, as MongoDB's members under
// requireTLS: the config server, a shard of two members (so Raft's own
// streams cross TLS) and a router. Nothing connects in plain text anywhere
// — the router reaches the config server and the shard, the shard reaches
// the config server, the shard's members replicate to each other, all with
// TLS and the members' certificate (and as __system with the key) — and
// the Go driver, with TLS, makes the first user through the router's
// localhost exception, an x.509 user on $external, authenticates as it
// with its certificate (MONGODB-X509 at the router), shards a collection,
// writes with w: 2 (so the secondary acknowledged through its TLS Raft
// stream) and reads back through the router; the secondary holds the
// documents. Plain clients of the router and a plain member stream to a
// shard member are refused.
func TestShardedClusterTLS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts five processes")
	}
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ca := testpki.New(t, "Cairn test CA")
	_, pem := ca.Issue(t, "member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	app, _ := ca.Issue(t, "app", x509.ExtKeyUsageClientAuth)
	const key = "dGxzIGNsdXN0ZXIga2V5IGZvciB0ZXN0cw=="
	keyFile := filepath.Join(tmp, "keyfile")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsArgs := []string{"--tlsMode", "requireTLS", "--tlsCertificateKeyFile", pem, "--tlsCAFile", ca.CAFile, "--keyFile", keyFile}
	clientTLS := &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{app}}
	// connect connects with TLS and the app's certificate, as cred (none:
	// the zero Credential).
	connect := func(uri string, cred options.Credential) *mongo.Client {
		t.Helper()
		o := options.Client().ApplyURI(uri).SetTLSConfig(clientTLS).SetServerSelectionTimeout(30 * time.Second)
		if cred.AuthMechanism != "" {
			o.SetAuth(cred)
		}
		c, err := mongo.Connect(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		return c
	}
	system := options.Credential{AuthMechanism: "SCRAM-SHA-256", AuthSource: "local", Username: "__system", Password: key}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// startSet starts a replica set of n members with role's flag and
	// initiates it on its first member; it returns the members' hosts,
	// the primary first.
	startSet := func(name, role string, n int) []string {
		t.Helper()
		ports := freePorts(t, n)
		var hosts []string
		members := bson.A{}
		for i, port := range ports {
			host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			hosts = append(hosts, host)
			args := append([]string{"--replSet", name, "--" + role, "--port", strconv.Itoa(port),
				"--dbpath", filepath.Join(tmp, name+strconv.Itoa(i)), "--cacheSizeGB", "0.25"}, tlsArgs...)
			spawnServe(t, bin, args...).waitReady(t)
			members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: host}})
		}
		c := connect("mongodb://"+hosts[0]+"/?tls=true&directConnection=true", system)
		cfg := bson.D{{Key: "_id", Value: name}, {Key: "configsvr", Value: role == "configsvr"}, {Key: "members", Value: members}}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
			t.Fatalf("replSetInitiate %s: %v", name, err)
		}
		for {
			var hello struct {
				Primary string `bson:"primary"`
			}
			if c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello) == nil && hello.Primary != "" {
				if hello.Primary != hosts[0] {
					hosts[0], hosts[1] = hosts[1], hosts[0]
				}
				return hosts
			}
			if ctx.Err() != nil {
				t.Fatalf("%s has no primary", name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cfgHosts := startSet("cfg", "configsvr", 1)
	shardHosts := startSet("sh0", "shardsvr", 2)

	port := freePorts(t, 1)[0]
	routerAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, append([]string{"router", "--configdb", "cfg/" + cfgHosts[0], "--port", strconv.Itoa(port)}, tlsArgs...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	// The localhost exception, then the certificate's own user.
	anon := connect("mongodb://"+routerAddr+"/?tls=true", options.Credential{})
	if err := anon.Database("$external").RunCommand(ctx, bson.D{{Key: "createUser", Value: "CN=app"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}}).Err(); err != nil {
		t.Fatalf("the first user, on $external, through the router: %v", err)
	}
	if err := anon.Database("app").RunCommand(ctx, bson.D{{Key: "count", Value: "docs"}}).Err(); cmdCode(err) != 13 {
		t.Errorf("an unauthenticated count through the router: %v, want Unauthorized", err)
	}
	router := connect("mongodb://"+routerAddr+"/?tls=true", options.Credential{AuthMechanism: "MONGODB-X509", AuthSource: "$external"})
	admin := router.Database("admin")
	for _, c := range []bson.D{
		{{Key: "addShard", Value: "sh0/" + shardHosts[0] + "," + shardHosts[1]}},
		{{Key: "enableSharding", Value: "app"}},
		{{Key: "shardCollection", Value: "app.docs"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}},
	} {
		if err := admin.RunCommand(ctx, c).Err(); err != nil {
			t.Fatalf("%v through the router: %v", c, err)
		}
	}
	coll := router.Database("app").Collection("docs", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 2}))
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "x"}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatalf("insert with w: 2 through the router: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 20 {
		t.Errorf("count through the router: %d %v, want 20", n, err)
	}
	secondary := connect("mongodb://"+shardHosts[1]+"/?tls=true&directConnection=true", system)
	n, err := secondary.Database("app").Collection("docs", options.Collection().SetReadPreference(readpref.SecondaryPreferred())).CountDocuments(ctx, bson.D{})
	if err != nil || n != 20 {
		t.Errorf("the shard's secondary holds %d documents (%v), want 20", n, err)
	}

	// Plain text is refused everywhere.
	plain, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + routerAddr + "/").SetServerSelectionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Disconnect(context.Background())
	if err := plain.Ping(ctx, nil); err == nil {
		t.Error("a plain client reached the router under requireTLS")
	}
	nc, err := net.Dial("tcp", shardHosts[1])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte(repl.MemberStreamMagic + "\x02"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("a plain member stream to a requireTLS member was not closed: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
