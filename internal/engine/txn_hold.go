package engine

import (
	"sync"
	"sync/atomic"
)

// What a transaction holds until it ends. A shard's transaction that wrote
// a sharded collection keeps that collection's migration gate (package
// shardsvr) from its first write there until it commits or aborts, as
// MongoDB's transactions keep their collection locks: a chunk migration's
// critical section waits for it, so the transaction's writes reach the
// donor's oplog before the recipient's last catch-up, or the migration
// gives up.
//
// Invariant "Holds end with the transaction": every release given to Hold
// runs exactly once, when the transaction ends — Commit (whatever its
// outcome), Abort of a transaction that is not prepared, CommitPrepared or
// AbortPrepared that succeeded, or Release. A prepared transaction keeps
// its holds (it may still commit). TestTxnHolds; TestTxnHoldRacesEnd (a
// hold racing the end).

// txnHolds is a transaction's holds by name. state moves from holdsNone
// to holdsSome (Hold, under mu) or holdsOver (the end), and from holdsSome
// to holdsOver (the end, under mu): a transaction that never held anything
// — every read-only one — ends with one compare-and-swap, without mu.
type txnHolds struct {
	state atomic.Uint32
	mu    sync.Mutex
	m     map[string]func()
}

const (
	holdsNone uint32 = iota // nothing held yet
	holdsSome               // m may hold releases (under mu)
	holdsOver               // the transaction ended
)

// Hold makes release run when the transaction ends; a name already held
// keeps its first release, and this one runs at once, as it does when the
// transaction has ended already.
func (t *Txn) Hold(name string, release func()) {
	h := &t.holds
	h.mu.Lock()
	if !h.state.CompareAndSwap(holdsNone, holdsSome) && h.state.Load() == holdsOver {
		h.mu.Unlock()
		release()
		return
	}
	if _, dup := h.m[name]; dup {
		h.mu.Unlock()
		release()
		return
	}
	if h.m == nil {
		h.m = map[string]func(){}
	}
	h.m[name] = release
	h.mu.Unlock()
}

// Holds reports whether the transaction holds name.
func (t *Txn) Holds(name string) bool {
	h := &t.holds
	if h.state.Load() == holdsNone {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.m[name]
	return ok
}

// ended runs and forgets the transaction's holds (it ended).
func (t *Txn) ended() {
	h := &t.holds
	if h.state.CompareAndSwap(holdsNone, holdsOver) {
		return // nothing was held, and nothing can be from now on
	}
	h.mu.Lock()
	m := h.m
	h.m = nil
	h.state.Store(holdsOver)
	h.mu.Unlock()
	for _, release := range m {
		release()
	}
}
