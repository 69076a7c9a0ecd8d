package repl

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

// laggingSM is memSM whose durable state lags its applied one (a data
// store without a log of its own): Snapshot returns the state at durable,
// or raft.ErrSnapOutOfDate when that is not above the log's snapshot. It
// counts its calls.
type laggingSM struct {
	*memSM
	mu      sync.Mutex
	durable uint64
	calls   int
}

func (s *laggingSM) Snapshot(above, _, _ uint64) (uint64, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.durable <= above {
		return 0, nil, raft.ErrSnapOutOfDate
	}
	return s.durable, []byte(fmt.Sprint(s.durable)), nil
}

func (s *laggingSM) set(durable uint64) (calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.durable = durable
	return s.calls
}

// TestSnapshotAtStateMachineIndex checks "Snapshot at the state machine's
// index": the log's snapshot is at the index the state machine returns,
// not the applied one, so the log keeps every entry above what it holds
// durably; a state machine with nothing durable past the log's snapshot
// is asked again only compactRetry entries later; an index outside what
// the node allows is an error.
func TestSnapshotAtStateMachineIndex(t *testing.T) {
	var sm *laggingSM
	c := newClusterWith(t, 1, 1, false, "", func(c *cluster) {
		c.compactEvery, c.compactKeep = 10, 0
		c.machine = func(m *memSM) StateMachine { sm = &laggingSM{memSM: m}; return sm }
	})
	c.waitLeader(5 * time.Second)
	n := c.node(1)
	for i := range 40 {
		if _, err := c.propose(fmt.Sprintf("put k%d v", i), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing durable: the bound was passed at every apply since the
	// tenth entry, and the state machine was asked every quarter of the
	// bound (at most compactRetry entries): at entries 10(ish), 12, …
	// — 40 entries (and the leader's first) ask at most 16 times.
	if calls := sm.set(0); calls < 2 || calls > 16 {
		t.Errorf("the state machine was asked for a snapshot %d times over 40 entries with nothing durable, want every other entry or so (a quarter of the bound of 10)", calls)
	}
	first, _ := c.logs[1].FirstIndex()
	if first != 1 {
		t.Errorf("the log starts at %d with nothing durable, want 1 (nothing truncated)", first)
	}
	applied := n.Status().Applied
	sm.set(applied - 7)
	if err := n.Compact(); err != nil {
		t.Fatal(err)
	}
	snap, _ := c.logs[1].Snapshot()
	if got := snap.GetMetadata().GetIndex(); got != applied-7 {
		t.Errorf("the log's snapshot is at %d, want the state machine's durable %d (applied %d)", got, applied-7, applied)
	}
	if first, _ := c.logs[1].FirstIndex(); first != applied-6 {
		t.Errorf("the log starts at %d, want %d: every entry above the durable index kept", first, applied-6)
	}
	// Past the applied index: refused.
	sm.set(applied + 5)
	if err := n.Compact(); err == nil || errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Errorf("a snapshot past the applied index: %v, want an error", err)
	}
}
