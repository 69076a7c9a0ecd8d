package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/server"
)

// lockedBuffer collects a server's JSON log lines from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(b.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Past --max-conns the server closes a new connection without a reply, as
// mongod does, logs why, and counts it in serverStatus.connections.rejected.
func TestMaxConnsRejectsLogsAndCounts(t *testing.T) {
	const limit = 3
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	srv, addr := startServerWith(t, server.Options{MaxConns: limit, Logger: log})
	env := srv.env
	s := &testServer{addr: addr, env: env}
	ping := command(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	open := make([]net.Conn, limit)
	for i := range open {
		open[i] = dial(t, s)
		if r := roundTrip(t, open[i], ping); r == nil {
			t.Fatalf("connection %d of %d (within the limit) got no reply", i+1, limit)
		}
	}
	for range 2 {
		extra := dial(t, s)
		_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = extra.Write(ping)
		if n, err := extra.Read(make([]byte, 64)); err == nil || (err != io.EOF && !isReset(err)) {
			t.Fatalf("a connection past the limit read %d bytes, err %v; want it closed", n, err)
		}
	}
	status := roundTrip(t, open[0], command(t, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}}))
	conns, err := status.LookupErr("connections")
	if err != nil {
		t.Fatalf("serverStatus has no connections: %s", truncate(status))
	}
	want := map[string]int64{"current": limit, "available": 0, "totalCreated": limit, "rejected": 2}
	for field, w := range want {
		v, err := bsoncore.Document(conns.Document()).LookupErr(field)
		got, isInt := v.AsInt64OK()
		if err != nil || !isInt || got != w {
			t.Errorf("serverStatus.connections.%s = %v, want %d", field, v, w)
		}
	}
	var refusals int
	for _, l := range logs.lines() {
		if l["msg"] == "connection refused because there are too many open connections" {
			refusals++
			if l["level"] != "WARN" || !strings.Contains(l["reason"].(string), "--max-conns") || l["limit"] != float64(limit) {
				t.Errorf("refusal logged as %v", l)
			}
		}
	}
	if refusals != 2 {
		t.Errorf("%d refusals logged, want 2", refusals)
	}
	// A slot freed is a slot a new client can take.
	_ = open[1].Close()
	deadline := time.Now().Add(5 * time.Second)
	for env.Connections.Current.Load() >= limit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r := roundTrip(t, dial(t, s), ping); r == nil {
		t.Fatal("after a connection closed, a new one was still refused")
	}
}
