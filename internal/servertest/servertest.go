// Package servertest runs an in-process Cairn server for the tests of
// other packages (a member client's, a router's): an engine in a temporary
// directory, the command layer and the wire server on a loopback port,
// closed when the test ends.
//
// Invariant "Gone with the test": every server Start makes is shut down,
// and its engine closed, by the test's Cleanup.
package servertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/server"
)

// Start runs a server and returns its host:port. With a key it runs with
// access control and the internal user __system@local of that key, as
// --keyFile gives; nil: neither.
func Start(tb testing.TB, key []byte) string {
	tb.Helper()
	log := slog.New(slog.DiscardHandler)
	eng, err := engine.Open(tb.TempDir(), engine.Options{Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	env := commands.NewEnv(eng, commands.Config{CairnVer: "test", Auth: key != nil}, log)
	if key != nil {
		sys, err := auth.NewSystemUser(key)
		if err != nil {
			tb.Fatal(err)
		}
		env.Access.Users.SetSystemUser(sys)
	}
	srv := server.New(env, server.Options{Logger: log})
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		env.Close()
		_ = eng.Close()
	})
	return srv.Addr().String()
}
