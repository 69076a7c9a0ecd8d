package session

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/engine"
)

// TestExpire: a session unused for the timeout expires, one in use or used
// since does not.
func TestExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	tbl := NewTable(nil, func() time.Time { return now })
	old, busy, fresh := ID{UUID: [16]byte{1}}, ID{UUID: [16]byte{2}}, ID{UUID: [16]byte{3}}
	tbl.Refresh([]ID{old, busy}, "")
	use, err := tbl.Checkout(context.Background(), busy, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultTimeout / 2)
	tbl.Refresh([]ID{fresh}, "")
	now = now.Add(DefaultTimeout/2 + time.Second)
	if n := tbl.Expire(); n != 1 {
		t.Errorf("expired %d sessions, want 1", n)
	}
	if tbl.Has(old) || !tbl.Has(busy) || !tbl.Has(fresh) {
		t.Errorf("after expiry: old %v busy %v fresh %v, want false true true", tbl.Has(old), tbl.Has(busy), tbl.Has(fresh))
	}
	use.Release()
}

// TestCheckoutSerializes: a second command of a session waits for the
// first, and killing the session interrupts the one running.
func TestCheckoutSerializes(t *testing.T) {
	tbl := NewTable(nil, nil)
	id := ID{UUID: [16]byte{7}}
	var stopped error
	use, err := tbl.Checkout(context.Background(), id, "", func(err error) { stopped = err })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := tbl.Checkout(ctx, id, "", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second checkout while the first runs: %v, want a wait ended by the deadline", err)
	}
	cause := errors.New("killed")
	if n := tbl.Kill(func(ID, string) bool { return true }, cause); n != 1 || stopped != cause {
		t.Errorf("Kill: %d sessions, running command stopped with %v", n, stopped)
	}
	// A command waiting for its turn gets it when the first releases.
	got := make(chan error, 1)
	go func() {
		u, err := tbl.Checkout(context.Background(), id, "", nil)
		if err == nil {
			u.Release()
		}
		got <- err
	}()
	time.Sleep(5 * time.Millisecond)
	use.Release()
	if err := <-got; err != nil {
		t.Errorf("a waiting checkout after the release: %v", err)
	}
}

// TestForget: after Forget a session's newest transaction number is read
// again from its record, as a replica set's new primary must (records made
// through another primary arrive as replicated commits).
func TestForget(t *testing.T) {
	tbl := NewTable(nil, nil)
	id := ID{UUID: [16]byte{9}}
	tbl.Refresh([]ID{id}, "")
	tbl.mu.Lock()
	e := tbl.m[id]
	e.loaded, e.txn = true, 4
	tbl.mu.Unlock()
	tbl.Forget()
	tbl.mu.Lock()
	defer tbl.mu.Unlock()
	if e.loaded || e.txn != -1 {
		t.Errorf("after Forget: loaded %v, txn %d; want false, -1", e.loaded, e.txn)
	}
}

// TestRunFlushesWhenWritable: the refresh loop writes the table only while
// the node may write (a secondary's flush would be refused): a dirty
// session stays dirty while writable says no, and is written once it says
// yes.
func TestRunFlushesWhenWritable(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	tbl := NewTable(eng, nil)
	id := tbl.Start("")
	var primary atomic.Bool
	tbl.Run(time.Millisecond, slog.New(slog.DiscardHandler), primary.Load)
	defer tbl.Stop()
	dirty := func() bool {
		tbl.mu.Lock()
		defer tbl.mu.Unlock()
		return tbl.m[id].dirty
	}
	time.Sleep(20 * time.Millisecond)
	if !dirty() {
		t.Fatal("a secondary's refresh loop flushed the session table")
	}
	primary.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for dirty() {
		if time.Now().After(deadline) {
			t.Fatal("the primary's refresh loop never flushed the session table")
		}
		time.Sleep(time.Millisecond)
	}
}
