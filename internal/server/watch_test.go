package server

import (
	"net"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// eventually waits up to within for cond, polling.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// startLookLoop starts a server's look loop over one connection of a
// net.Pipe (the server's side watched, the client's returned), stopped
// with the test.
func startLookLoop(t *testing.T) (*Server, *conn, net.Conn) {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := commands.NewEnv(eng, commands.Config{CairnVer: "test"}, nil)
	t.Cleanup(func() { env.Close(); _ = eng.Close() })
	s := New(env, Options{})
	server, client := net.Pipe()
	c := newConn(s, server, 1)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	stopped := make(chan struct{})
	go func() { s.lookLoop(); close(stopped) }()
	t.Cleanup(func() { close(s.done); <-stopped })
	return s, c, client
}

// watched reports whether the look loop watches the connection's command.
func (c *conn) watched() bool {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	return c.watch.active
}

// TestLookLoopParksAndWakes: an idle server's look loop parks; a command
// that begins wakes it and is watched, so its client closing is seen at
// once; a command already watched (a driver's awaitable hello) lets the
// loop park again.
func TestLookLoopParksAndWakes(t *testing.T) {
	s, c, client := startLookLoop(t)

	eventually(t, time.Second, "an idle server's look loop did not park", s.looks.parked.Load)
	c.watch.begin() // a command begins while the loop is parked
	eventually(t, 100*time.Millisecond, "the command was not watched", c.watched)
	eventually(t, time.Second, "the loop did not park again while the command is watched", s.looks.parked.Load)
	closed := time.Now()
	_ = client.Close()
	eventually(t, 100*time.Millisecond, "the client's close was not seen", func() bool { return c.ctx.Err() != nil })
	if got := mongoerr.CodeOf(opctx.Err(c.ctx)); got != mongoerr.ClientDisconnect {
		t.Fatalf("the connection ended with code %d, want ClientDisconnect", got)
	}
	t.Logf("close seen %v after it", time.Since(closed))
	c.watch.end()
}

// TestShortWaitNotWatched: a command in a short wait of its own (a change
// stream's pace, commands.Session.ShortWait) is not watched while it
// waits, however long; once the wait ends it counts as begun again and is
// watched as any command (its client's close seen), the loop woken if it
// parked meanwhile.
func TestShortWaitNotWatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		park bool // wait on until the loop parked
	}{
		{"a wait of the pace's ceiling", 2 * watchAfter, false},
		{"a wait past parkAfter: the loop parks, the wait's end wakes it", parkAfter, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, client := startLookLoop(t)
			active := c.watched

			c.watch.begin()
			c.sess.ShortWait(true) // the hook newConn set
			// The wait lasts tc.wait, or with park until the loop parked
			// (its looks find nothing to watch for parkAfter: under load
			// its ticks come late).
			for end := time.Now().Add(tc.wait); time.Now().Before(end) || tc.park && !s.looks.parked.Load(); time.Sleep(time.Millisecond) {
				if active() {
					t.Fatal("a command in a short wait was watched")
				}
				if time.Since(end) > 5*time.Second {
					t.Fatal("the loop did not park while the only command waited")
				}
			}
			c.sess.ShortWait(false)
			eventually(t, 100*time.Millisecond, "the command was not watched after its wait", active)
			_ = client.Close()
			eventually(t, 100*time.Millisecond, "the client's close was not seen", func() bool { return c.ctx.Err() != nil })
			c.watch.end()
		})
	}
}
