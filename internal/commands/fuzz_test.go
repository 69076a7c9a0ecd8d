package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// panicCounter counts "command panicked" log records: Run recovers panics,
// so the fuzz target watches the log to tell a recovered panic from an error.
type panicCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (p panicCounter) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panicked") {
		p.n.Add(1)
	}
	return nil
}

// FuzzCommands runs arbitrary command documents; any reply is fine, a panic
// (even a recovered one) or a reply that is not valid BSON with ok is not.
func FuzzCommands(f *testing.F) {
	seeds := []bson.D{
		{{Key: "ping", Value: 1}},
		{{Key: "hello", Value: 1}, {Key: "helloOk", Value: true}, {Key: "compression", Value: bson.A{"snappy", 7}}},
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "a", Value: bson.A{1, 2}}}}}},
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{1, "x"}}},
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "batchSize", Value: -1}},
		{{Key: "find", Value: 3}, {Key: "limit", Value: "x"}},
		{{Key: "getMore", Value: int64(1)}, {Key: "collection", Value: 5}},
		{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{"x"}}},
		{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "b", Value: 2}}}, {Key: "upsert", Value: true}}}}},
		{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 7}}}}},
		{{Key: "create", Value: "c2"}, {Key: "capped", Value: "yes"}},
		{{Key: "renameCollection", Value: "x"}, {Key: "to", Value: 1}},
		{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}}, {Key: "logLevel", Value: 1}},
		{{Key: "setParameter", Value: 1}, {Key: "cursorTimeoutMillis", Value: -5}},
		{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "c"}}}},
		{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "$gt", Value: 1}}}},
		{{Key: "collStats", Value: "c"}, {Key: "scale", Value: 0}},
		{{Key: "getLog", Value: bson.A{}}},
	}
	for _, s := range seeds {
		b, _ := bson.Marshal(s)
		f.Add(b, "fuzz")
	}
	var panics atomic.Int64
	log := slog.New(panicCounter{slog.DiscardHandler, &panics})
	eng, err := engine.Open(f.TempDir(), engine.Options{Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	env := NewEnv(eng, Config{}, log)
	f.Cleanup(func() { env.Close(); _ = eng.Close() })
	sess := &Session{Env: env, ConnID: 1, Remote: "fuzz"}
	f.Fuzz(func(t *testing.T, body []byte, db string) {
		reply := runRaw(t, sess, body, db, &panics) // fuzz_preauth_test.go
		if reply == nil {
			return
		}
		if _, err := reply.LookupErr("ok"); err != nil {
			t.Fatalf("reply without ok: %s", reply)
		}
	})
}
