package server_test

import (
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
)

// topologyFake is a replica set member whose role a test changes; only
// what hello asks of a member is implemented.
type topologyFake struct {
	commands.ReplicaSet
	mu      sync.Mutex
	counter int64
	changed chan struct{}
	primary bool
}

func (f *topologyFake) Hello() bsoncore.Document {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bsoncore.NewDocumentBuilder().AppendBoolean("isWritablePrimary", f.primary).
		AppendBoolean("secondary", !f.primary).AppendString("setName", "rs0").Build()
}

func (f *topologyFake) Topology() (int64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counter, f.changed
}

// stepDown makes the member a secondary: a topology change.
func (f *topologyFake) stepDown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.primary = false
	f.counter++
	close(f.changed)
	f.changed = make(chan struct{})
}

// TestAwaitableHelloAnswersRoleChange: on a replica set member an
// awaitable hello naming the current topologyVersion waits, and is
// answered as soon as the member's role changes (not at maxAwaitTimeMS),
// with the new role and counter (server discovery and monitoring).
func TestAwaitableHelloAnswersRoleChange(t *testing.T) {
	s := startServer(t)
	member := &topologyFake{counter: 1, changed: make(chan struct{}), primary: true}
	s.env.SetReplicaSet(member)
	nc := dial(t, s)
	first := roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}))
	if first.Lookup("isWritablePrimary").Boolean() != true || first.Lookup("topologyVersion", "counter").Int64() != 1 {
		t.Fatalf("member's hello: %s", first)
	}
	tv := bson.Raw(first.Lookup("topologyVersion").Document())
	go func() {
		time.Sleep(200 * time.Millisecond)
		member.stepDown()
	}()
	start := time.Now()
	reply := roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 10000},
		{Key: "topologyVersion", Value: tv}, {Key: "$db", Value: "admin"}}))
	took := time.Since(start)
	if took < 150*time.Millisecond || took > 5*time.Second {
		t.Fatalf("awaitable hello answered after %v; want at the role change (200ms), not before nor at maxAwaitTimeMS", took)
	}
	if reply.Lookup("isWritablePrimary").Boolean() != false || reply.Lookup("topologyVersion", "counter").Int64() != 2 {
		t.Fatalf("hello after the role change: %s", reply)
	}
}
