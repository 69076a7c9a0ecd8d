package replset_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/replset"
)

// TestInitiateNeedsNoElectionTimeout: replSetInitiate of a one-member set
// makes the member primary by its own campaign, not after an election
// timeout. The member's clock never moves, so no Raft tick ever fires:
// before the campaign was retried until Raft took it (it refuses one
// while the bootstrap's configuration entry is unapplied), this initiate
// waited for a timeout that never came and failed after 10 s.
func TestInitiateNeedsNoElectionTimeout(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(dir, engine.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	network := repl.NewNetwork(1)
	m, err := replset.New(replset.Options{
		SetName: "rs0", Dir: dir, Port: 27017, BindIP: "127.0.0.1", Engine: eng, Logger: quiet,
		Transport: func(id uint64) repl.Transport { return network.Endpoint(id) },
		Clock:     repl.NewManualClock(time.Unix(0, 0)), // never advanced
		Dial:      func(string) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	member := bsoncore.NewDocumentBuilder().AppendInt32("_id", 0).AppendString("host", "127.0.0.1:27017").Build()
	cfg := bsoncore.NewDocumentBuilder().AppendString("_id", "rs0").
		AppendArray("members", bsoncore.NewArrayBuilder().AppendDocument(member).Build()).Build()
	if err := m.Initiate(context.Background(), cfg); err != nil {
		t.Fatalf("initiate with a clock that never ticks: %v", err)
	}
	hello, err := m.Hello().LookupErr("isWritablePrimary")
	if err != nil || !hello.Boolean() {
		t.Fatalf("after initiate, isWritablePrimary: %v, %v", hello, err)
	}
}
