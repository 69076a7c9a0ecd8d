package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/server"
)

// testServer is a real Cairn server on a random loopback port.
type testServer struct {
	addr string
	env  *commands.Env
}

func startServer(t testing.TB) *testServer {
	t.Helper()
	srv, addr := startRawServer(t, discard())
	return &testServer{addr: addr, env: srv.env}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

type rawServer struct {
	*server.Server
	env *commands.Env
}

// startRawServer starts a server and returns it for tests that drive its
// lifecycle (Shutdown) themselves; cleanup is registered either way.
func startRawServer(t testing.TB, log *slog.Logger) (*rawServer, string) {
	t.Helper()
	return startServerFull(t, server.Options{Logger: log}, commands.Config{CairnVer: "test"})
}

// startServerWith is startRawServer with the server's options (its logger,
// opts.Logger, logs the engine too).
func startServerWith(t testing.TB, opts server.Options) (*rawServer, string) {
	t.Helper()
	return startServerFull(t, opts, commands.Config{CairnVer: "test"})
}

// startConfiguredServer is startRawServer with the process configuration
// cfg (--auth, --bind_ip).
func startConfiguredServer(t testing.TB, log *slog.Logger, cfg commands.Config) (*rawServer, string) {
	t.Helper()
	return startServerFull(t, server.Options{Logger: log}, cfg)
}

// startServerFull starts a server with its options and the process
// configuration.
func startServerFull(t testing.TB, opts server.Options, cfg commands.Config) (*rawServer, string) {
	t.Helper()
	log := opts.Logger
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	env := commands.NewEnv(eng, cfg, log)
	srv := server.New(env, opts)
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		env.Close()
		_ = eng.Close()
	})
	return &rawServer{Server: srv, env: env}, srv.Addr().String()
}

// client connects the official Go driver to the server.
func (s *testServer) client(t testing.TB, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	// The driver's default (30 s): under make test's load (race builds of
	// several packages on two cores) a fresh server's first hello was once
	// later than 5 s (issue 17's flake list).
	o := options.Client().ApplyURI("mongodb://" + s.addr).SetServerSelectionTimeout(30 * time.Second)
	all := append([]*options.ClientOptions{o}, opts...)
	c, err := mongo.Connect(all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// loadDocs inserts raw documents with a plain insert command (so the server,
// not the driver, sees documents without _id); none is a no-op.
func loadDocs(ctx context.Context, db *mongo.Database, coll string, docs []bsoncore.Document) error {
	if len(docs) == 0 {
		return nil
	}
	arr := make(bson.A, len(docs))
	for i, d := range docs {
		arr[i] = bson.Raw(d)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: arr}}).Err(); err != nil {
		return fmt.Errorf("loading documents into %s: %w", coll, err)
	}
	return nil
}
