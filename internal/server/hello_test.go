package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/wire"
)

// TestStreamingHello follows the server monitoring protocol: an awaitable
// hello with exhaustAllowed is answered after maxAwaitTimeMS with moreToCome
// set, and the server keeps sending replies, each answering the previous.
func TestStreamingHello(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	first := roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}))
	tv := first.Lookup("topologyVersion")
	if _, ok := tv.DocumentOK(); !ok {
		t.Fatalf("hello without topologyVersion: %s", first)
	}
	body, _ := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: int64(150)},
		{Key: "topologyVersion", Value: bson.Raw(tv.Document())}, {Key: "$db", Value: "admin"}})
	start := time.Now()
	if _, err := nc.Write(wire.AppendMsg(nil, 77, 0, wire.FlagExhaustAllowed, body)); err != nil {
		t.Fatal(err)
	}
	r := wire.NewReader(nc, 0)
	responseTo := int32(77)
	for i := range 3 {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if m.Header.ResponseTo != responseTo {
			t.Fatalf("reply %d answers %d, want %d", i, m.Header.ResponseTo, responseTo)
		}
		if m.Msg.Flags&wire.FlagMoreToCome == 0 {
			t.Fatalf("reply %d lacks moreToCome", i)
		}
		if ok := m.Msg.Body.Lookup("isWritablePrimary").Boolean(); !ok {
			t.Fatalf("reply %d: %s", i, m.Msg.Body)
		}
		responseTo = m.Header.RequestID
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("three awaited replies came in %v; each should wait maxAwaitTimeMS (150ms)", waited)
	}
}

func TestAwaitableHelloWithoutExhaust(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	first := roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}))
	tv := bson.Raw(first.Lookup("topologyVersion").Document())
	start := time.Now()
	reply := roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 100},
		{Key: "topologyVersion", Value: tv}, {Key: "$db", Value: "admin"}}))
	if reply == nil || time.Since(start) < 90*time.Millisecond {
		t.Fatalf("awaitable hello answered after %v: %v", time.Since(start), reply)
	}
	// A stale topologyVersion is answered at once.
	stale, _ := bson.Marshal(bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}})
	start = time.Now()
	reply = roundTrip(t, nc, command(t, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 5000},
		{Key: "topologyVersion", Value: bson.Raw(stale)}, {Key: "$db", Value: "admin"}}))
	if reply == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("hello with a stale topologyVersion waited %v", time.Since(start))
	}
}

// TestShutdownEndsStreamingHello checks a monitoring stream does not hold
// up shutdown.
func TestShutdownEndsStreamingHello(t *testing.T) {
	log := discard()
	srv, addr := startRawServer(t, log)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body, _ := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	_, _ = nc.Write(wire.AppendMsg(nil, 1, 0, 0, body))
	m, err := wire.NewReader(nc, 0).ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	tv := bson.Raw(m.Msg.Body.Lookup("topologyVersion").Document())
	body, _ = bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 60000}, {Key: "topologyVersion", Value: tv}, {Key: "$db", Value: "admin"}})
	_, _ = nc.Write(wire.AppendMsg(nil, 2, 0, wire.FlagExhaustAllowed, body))
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %v with a hello stream open", d)
	}
}
