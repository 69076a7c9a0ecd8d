package commands

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
)

// plannedIndexes plans a find of filter on ns and lists the indexes the
// winning plan scans, joined by ","; "" means a collection scan.
func plannedIndexes(env *Env, ns engine.Namespace, filter bsoncore.Document) (string, error) {
	sp, err := newSelection(ns, filter)
	if err != nil {
		return "", err
	}
	ex, err := env.Exec.Open(context.Background(), sp, exec.Run)
	if err != nil {
		return "", err
	}
	defer ex.Close()
	return strings.Join(ex.IndexesUsed(), ","), nil
}

// testSession opens an engine with opts (in a temporary directory, on
// opts.FS when set; logging nothing unless opts.Logger), closed when the
// test ends, and returns a Session over an Env on it.
func testSession(tb testing.TB, opts engine.Options) *Session {
	tb.Helper()
	log := slog.New(slog.DiscardHandler)
	if opts.Logger == nil {
		opts.Logger = log
	}
	eng, err := engine.Open(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	env := NewEnv(eng, Config{}, log)
	tb.Cleanup(func() { env.Close(); _ = eng.Close() })
	return &Session{Env: env}
}

// testRequest builds cmd as a request to database db unless the command
// names its own "$db".
func testRequest(tb testing.TB, db string, cmd bson.D) *Request {
	tb.Helper()
	if len(cmd) == 0 || cmd[len(cmd)-1].Key != "$db" {
		cmd = append(cmd, bson.E{Key: "$db", Value: db})
	}
	body, err := bson.Marshal(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := NewRequest(body, "", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// commandRunner opens an engine in a temporary directory, closed when the
// test ends, and returns the Env over it with a function that runs one command through
// Run, in database db unless the command names its own "$db".
func commandRunner(tb testing.TB, db string) (*Env, func(cmd bson.D) bsoncore.Document) {
	tb.Helper()
	sess := testSession(tb, engine.Options{})
	return sess.Env, func(cmd bson.D) bsoncore.Document {
		return Run(context.Background(), sess, testRequest(tb, db, cmd), nil)
	}
}
