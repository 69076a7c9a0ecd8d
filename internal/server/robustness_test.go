package server_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/wire"
)

// These tests send what no driver would and check "The server outlives its
// clients": each bad input gets an error reply or a closed connection, and a
// fresh connection still answers ping.

func dial(t *testing.T, s *testServer) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// roundTrip sends one OP_MSG body and returns the reply body, or nil when the
// server closed the connection instead.
func roundTrip(t *testing.T, nc net.Conn, msg []byte) bsoncore.Document {
	t.Helper()
	if _, err := nc.Write(msg); err != nil {
		return nil
	}
	m, err := wire.NewReader(nc, 0).ReadMessage()
	if err != nil {
		return nil
	}
	return append(bsoncore.Document(nil), m.Msg.Body...)
}

func command(t *testing.T, d bson.D) []byte {
	t.Helper()
	body, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return wire.AppendMsg(nil, 1, 0, 0, body)
}

func mustPing(t *testing.T, s *testServer) {
	t.Helper()
	reply := roundTrip(t, dial(t, s), command(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}))
	if reply == nil {
		t.Fatal("a fresh connection could not ping after bad input")
	}
	if ok := reply.Lookup("ok"); ok.Double() != 1 {
		t.Fatalf("ping replied %s", reply)
	}
}

// errorOrClosed asserts the server either closed or answered with ok: 0 and
// returns the reply's code (0 when closed).
func errorOrClosed(t *testing.T, reply bsoncore.Document) int32 {
	t.Helper()
	if reply == nil {
		return 0
	}
	if reply.Lookup("ok").Double() != 0 {
		t.Fatalf("bad input was accepted: %s", reply)
	}
	return reply.Lookup("code").Int32()
}

func TestRandomBytes(t *testing.T) {
	s := startServer(t)
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 20 {
		nc := dial(t, s)
		junk := make([]byte, 16+rng.IntN(4096))
		for j := range junk {
			junk[j] = byte(rng.Uint32())
		}
		_, _ = nc.Write(junk)
		_ = nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 1024)
		_, _ = nc.Read(buf) // whatever it answers, it must not die
		_ = nc.Close()
		if i%5 == 0 {
			mustPing(t, s)
		}
	}
	mustPing(t, s)
	t.Logf("seed %d", seed)
}

func TestHugeLengthHeader(t *testing.T) {
	s := startServer(t)
	for _, length := range []uint32{0x7fffffff, 0x80000000, 0xffffffff, 48_000_001} {
		nc := dial(t, s)
		hdr := make([]byte, 16)
		binary.LittleEndian.PutUint32(hdr[0:], length)
		binary.LittleEndian.PutUint32(hdr[4:], 7)
		binary.LittleEndian.PutUint32(hdr[12:], uint32(wire.OpMsg))
		_, _ = nc.Write(hdr)
		buf := make([]byte, 64)
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, err := nc.Read(buf); err == nil {
			t.Fatalf("length %#x: the server kept the connection open and sent %d bytes", length, n)
		}
	}
	mustPing(t, s)
}

func TestCorruptBSON(t *testing.T) {
	s := startServer(t)
	msg := command(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	// The body starts after header (16), flags (4) and the section kind (1).
	// Claim a longer body than the message holds.
	binary.LittleEndian.PutUint32(msg[21:], 1000)
	errorOrClosed(t, roundTrip(t, dial(t, s), msg))
	// A string element whose length runs past the document.
	bad := command(t, bson.D{{Key: "ping", Value: "x"}, {Key: "$db", Value: "admin"}})
	binary.LittleEndian.PutUint32(bad[21+4+1+5:], 0x7fffff00)
	errorOrClosed(t, roundTrip(t, dial(t, s), bad))
	mustPing(t, s)
}

func TestNestingPastTheLimit(t *testing.T) {
	s := startServer(t)
	var nested any = bson.D{{Key: "leaf", Value: 1}}
	for range 250 {
		nested = bson.D{{Key: "a", Value: nested}}
	}
	msg := command(t, bson.D{{Key: "insert", Value: "deep"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: nested}}}}, {Key: "$db", Value: "r"}})
	errorOrClosed(t, roundTrip(t, dial(t, s), msg))
	mustPing(t, s)
}

func TestSeventeenMegabyteDocument(t *testing.T) {
	s := startServer(t)
	big := bson.D{{Key: "_id", Value: 1}, {Key: "blob", Value: make([]byte, 17<<20)}}
	msg := command(t, bson.D{{Key: "insert", Value: "big"}, {Key: "documents", Value: bson.A{big}}, {Key: "$db", Value: "r"}})
	reply := roundTrip(t, dial(t, s), msg)
	if reply == nil {
		t.Fatal("the server closed the connection instead of refusing the document")
	}
	werr, err := reply.LookupErr("writeErrors", "0", "code")
	if err != nil || werr.Int32() != 10334 {
		t.Fatalf("reply %s: want a writeError with code 10334 BSONObjectTooLarge", truncate(reply))
	}
	mustPing(t, s)
}

func truncate(d bsoncore.Document) string {
	s := d.String()
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestThreeHundredConnections(t *testing.T) {
	s := startServer(t)
	const n = 300
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := bson.Marshal(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
			if _, err := nc.Write(wire.AppendMsg(nil, int32(i+1), 0, 0, body)); err != nil {
				errs <- err.Error()
				return
			}
			m, err := wire.NewReader(nc, 0).ReadMessage()
			if err != nil || m.Msg.Body.Lookup("ok").Double() != 1 {
				errs <- "no hello reply"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("one of %d concurrent connections failed: %s", n, e)
	}
	if got := s.env.Connections.Current.Load(); got < n {
		t.Errorf("serverStatus would report %d current connections, want ≥ %d", got, n)
	}
	mustPing(t, s)
}

func TestLegacyOpQuery(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	q, _ := bson.Marshal(bson.D{{Key: "isMaster", Value: 1}, {Key: "client", Value: bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "legacy"}}}}}})
	_, _ = nc.Write(wire.AppendQuery(nil, 9, &wire.Query{FullCollectionName: "admin.$cmd", NumberToReturn: -1, Query: q}))
	m, err := wire.NewReader(nc, 0).ReadMessage()
	if err != nil || m.Header.OpCode != wire.OpReply || m.Header.ResponseTo != 9 || len(m.Reply.Documents) != 1 {
		t.Fatalf("legacy handshake: %v %+v", err, m)
	}
	if !m.Reply.Documents[0].Lookup("ismaster").Boolean() {
		t.Fatalf("isMaster reply %s", m.Reply.Documents[0])
	}
	// Anything but the handshake over OP_QUERY is refused with code 352.
	f, _ := bson.Marshal(bson.D{{Key: "find", Value: "x"}})
	_, _ = nc.Write(wire.AppendQuery(nil, 10, &wire.Query{FullCollectionName: "db.$cmd", NumberToReturn: -1, Query: f}))
	m, err = wire.NewReader(nc, 0).ReadMessage()
	if err != nil || m.Reply.Documents[0].Lookup("code").Int32() != 352 {
		t.Fatalf("OP_QUERY find: %v", err)
	}
}

func TestUnacknowledgedWrite(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "w0"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 0}}}, {Key: "$db", Value: "r"}})
	_, _ = nc.Write(wire.AppendMsg(nil, 1, 0, wire.FlagMoreToCome, body))
	// The next reply on the connection must answer the next request, not the w:0 one.
	reply := roundTrip(t, nc, command(t, bson.D{{Key: "count", Value: "w0"}, {Key: "$db", Value: "r"}}))
	if n, _ := reply.Lookup("n").AsInt64OK(); reply == nil || n != 1 {
		t.Fatalf("after an unacknowledged insert, count replied %v", reply)
	}
}
