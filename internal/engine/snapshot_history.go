package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Snapshot history: reads of plain (unversioned) collections as of a
// cluster time, readConcern {level: "snapshot", atClusterTime} outside a
// transaction on a replica set member (issue #19). The store keeps only
// the latest version of each key, so the engine keeps storage snapshots
// (held views) taken over time, each with the catalog that matches it.
//
// Invariant "A held view is exact from its time": a view's time is the
// newest oplog entry it holds. Every change to a logged namespace writes
// an entry in its own commit group, groups reach the store in the order
// of their times, and a group is in a view whole or not at all; so a view
// holds exactly the changes with times ≤ its time, and it is the state at
// every T from its time up to the next entry's time. A read at T uses the
// newest view whose time is ≤ T only after checking, in the current store,
// that the oplog holds no entry in (view time, T] and still holds entries
// from the view's time on (a trim could have hidden one): so however
// views were taken, none answers for a time it does not hold exactly;
// otherwise the read is SnapshotTooOld. TestSnapshotHistory.
//
// When views are taken: at each snapshot read, and, while the history is
// active, after every commit group (storage's Committed hook on a primary,
// ApplyReplicated on a secondary; skipped while a catalog change is in
// flight). The history is active from the
// first snapshot read outside a transaction (or a setParameter of
// minSnapshotHistoryWindowInSeconds) until a whole window passes without
// one: a member that serves no snapshot reads pays nothing, not even
// Pebble keeping old versions. Deviation from MongoDB 7.0: a time from
// before the history became active is SnapshotTooOld, where mongod keeps
// its window of history at all times.
//
// A view is dropped once the view after it is older than
// minSnapshotHistoryWindowInSeconds (MongoDB's parameter, 300 s by
// default) by its cluster time, or once maxHeldViews newer ones are held,
// and no reader holds it; readers (cursors and their getMores) keep
// theirs, so a getMore continues at the same snapshot.
type snapHistory struct {
	allowed atomic.Bool  // a replica set member (AllowSnapshotHistory)
	lastUse atomic.Int64 // unix nanos of the last snapshot read; 0: never
	window  atomic.Int64 // nanoseconds + 1; 0: the default

	mu    sync.Mutex
	views []*heldView // ascending by at
}

// heldView is one kept storage snapshot.
type heldView struct {
	at   hlc.Timestamp // the newest oplog entry it holds
	snap *storage.Snapshot
	cat  *catalog.State
	refs int // open readers (under snapHistory.mu)
	// dropped: out of the history (closeAll) while readers held it; the
	// last one's release closes it.
	dropped bool
}

// DefaultSnapshotHistoryWindow is minSnapshotHistoryWindowInSeconds' default.
const DefaultSnapshotHistoryWindow = 300 * time.Second

// AllowSnapshotHistory lets this engine serve snapshot reads of plain
// collections at a cluster time (a replica set member's; a standalone
// refuses them, as mongod does).
func (e *Engine) AllowSnapshotHistory() { e.snaps.allowed.Store(true) }

// SnapshotHistoryAllowed reports whether plain collections are read at a
// cluster time here (AllowSnapshotHistory).
func (e *Engine) SnapshotHistoryAllowed() bool { return e.snaps.allowed.Load() }

// SnapshotHistoryWindow is minSnapshotHistoryWindowInSeconds.
func (e *Engine) SnapshotHistoryWindow() time.Duration {
	if w := e.snaps.window.Load(); w > 0 {
		return time.Duration(w - 1)
	}
	return DefaultSnapshotHistoryWindow
}

// SetSnapshotHistoryWindow sets minSnapshotHistoryWindowInSeconds; it
// also starts the history (see above).
func (e *Engine) SetSnapshotHistoryWindow(d time.Duration) {
	e.snaps.window.Store(int64(d) + 1)
	e.snaps.lastUse.Store(e.now().UnixNano())
}

// active reports whether views are taken after each commit group.
func (h *snapHistory) active(e *Engine) bool {
	last := h.lastUse.Load()
	return last != 0 && e.now().UnixNano()-last < int64(e.SnapshotHistoryWindow())
}

// SnapshotNow is the cluster time a snapshot read without atClusterTime
// reads at (MongoDB picks it and returns it as atClusterTime): the time
// of a view of the store taken now.
func (e *Engine) SnapshotNow() (hlc.Timestamp, error) {
	if !e.snaps.allowed.Load() {
		return 0, mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use readConcern: snapshot")
	}
	e.snaps.lastUse.Store(e.now().UnixNano())
	v, err := e.takeView(true)
	if err != nil {
		return 0, err
	}
	return v.at, nil
}

// historyAfterCommit takes a view after a commit group (storage's completer
// goroutine, through committed) while the history is active, and drops
// views past the window.
func (e *Engine) historyAfterCommit() {
	h := &e.snaps
	if h.lastUse.Load() == 0 {
		return
	}
	if h.active(e) {
		_, _ = e.takeView(false)
	}
	h.mu.Lock()
	h.dropOld(e)
	h.mu.Unlock()
}

// takeView takes a view of the store now, or returns the newest one when
// it holds the same oplog time. wait: wait for a catalog change in flight
// (a reader may; the completer goroutine must not).
func (e *Engine) takeView(wait bool) (*heldView, error) {
	var st *catalog.State
	var snap *storage.Snapshot
	for {
		var g uint64
		if wait {
			st, g = e.cat.ReadBegin()
		} else {
			var ok bool
			if st, g, ok = e.cat.TryReadBegin(); !ok {
				return nil, nil
			}
		}
		snap = e.db.NewSnapshot()
		if e.cat.ReadValid(g) {
			break
		}
		_ = snap.Close()
		if !wait {
			return nil, nil
		}
	}
	at, err := lastOplogTime(snap)
	if err != nil {
		_ = snap.Close()
		return nil, err
	}
	h := &e.snaps
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.views); n > 0 && h.views[n-1].at >= at {
		_ = snap.Close() // nothing logged since: the newest view is this state
		return h.views[n-1], nil
	}
	v := &heldView{at: at, snap: snap, cat: st}
	h.views = append(h.views, v)
	h.dropOld(e)
	return v, nil
}

// lastOplogTime is the time of the newest oplog entry snap holds (0: none).
func lastOplogTime(snap *storage.Snapshot) (hlc.Timestamp, error) {
	prefix := []byte{storage.SpaceOplog}
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return 0, err
	}
	var at hlc.Timestamp
	if it.Last() {
		at, _ = hlc.FromBinary(it.Key()[1:])
	}
	return at, it.Close()
}

// maxHeldViews bounds the history: past it the oldest views go, whatever
// the window (a read at their times is then SnapshotTooOld), so a member
// under a heavy write load does not keep a Pebble snapshot per commit
// group for the whole window.
const maxHeldViews = 1 << 14

// dropOld closes, from the oldest on, the views whose successor's time is
// older than the window (they answer only for times before it) or that
// pass maxHeldViews; it stops at one a reader holds, so each call costs
// what it drops. Under mu.
func (h *snapHistory) dropOld(e *Engine) {
	horizon := uint32(e.now().Add(-e.SnapshotHistoryWindow()).Unix())
	n := 0
	for n+1 < len(h.views) && h.views[n].refs == 0 && (h.views[n+1].at.T() < horizon || len(h.views)-n > maxHeldViews) {
		_ = h.views[n].snap.Close()
		n++
	}
	if n > 0 {
		clear(h.views[:n])
		h.views = h.views[n:]
	}
}

// closeAll empties the history (Engine.Close, a member's store replaced
// by a snapshot of the set's): views readers hold close at their release.
func (h *snapHistory) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range h.views {
		if v.refs == 0 {
			_ = v.snap.Close()
		} else {
			v.dropped = true
		}
	}
	h.views = nil
}

// viewAt finds the view exact at (see "A held view is exact from its
// time") and holds it for a reader; release it with releaseView.
func (e *Engine) viewAt(ns Namespace, at hlc.Timestamp) (*heldView, error) {
	h := &e.snaps
	if !h.allowed.Load() {
		return nil, errNotVersioned(ns)
	}
	if !logged(ns) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern snapshot with atClusterTime cannot read %s: its changes are not in the oplog", ns)
	}
	if err := e.preparedAt(ns, at); err != nil { // snapshot_prepared.go
		return nil, err
	}
	return e.heldAt(at)
}

// heldAt is viewAt of the whole store: the view exact at at, held.
func (e *Engine) heldAt(at hlc.Timestamp) (*heldView, error) {
	h := &e.snaps
	if last := e.db.LastCommitted(); at > last {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: %s; current clusterTime: %s", at, last)
	}
	h.lastUse.Store(e.now().UnixNano())
	for try := 0; try < 2; try++ {
		if v := h.hold(at); v != nil {
			exact, err := e.exactAt(v, at)
			if err == nil && exact {
				return v, nil
			}
			e.releaseView(v)
			if err != nil {
				return nil, err
			}
		}
		if try == 0 {
			if _, err := e.takeView(true); err != nil { // at may be the present
				return nil, err
			}
		}
	}
	return nil, errSnapshotTooOld(at, h.oldest())
}

// hold returns the newest view whose time is ≤ at, held, or nil.
func (h *snapHistory) hold(at hlc.Timestamp) *heldView {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.views) - 1; i >= 0; i-- {
		if v := h.views[i]; v.at <= at {
			v.refs++
			return v
		}
	}
	return nil
}

func (h *snapHistory) oldest() hlc.Timestamp {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.views) == 0 {
		return 0
	}
	return h.views[0].at
}

func errSnapshotTooOld(at, oldest hlc.Timestamp) error {
	return mongoerr.New(mongoerr.SnapshotTooOld, "Read timestamp %s is older than the oldest available timestamp: this member keeps snapshots of plain collections from %s on, while snapshot reads arrive (minSnapshotHistoryWindowInSeconds)", at, oldest)
}

// exactAt checks, in the current store, that the oplog holds no entry in
// (v.at, at] and still holds v.at's successors (its oldest entry is at or
// before v.at, or there is none after v.at at all and none was trimmed).
func (e *Engine) exactAt(v *heldView, at hlc.Timestamp) (bool, error) {
	if at == v.at {
		return true, nil
	}
	var lo, hi [9]byte
	it, err := e.db.NewIter(oplogKey(lo[:0], v.at), oplogKey(hi[:0], at+1))
	if err != nil {
		return false, err
	}
	defer it.Close()
	if !it.First() {
		return false, nil // v.at's own entry is gone: trimmed, entries after it may be too
	}
	if ts, _ := hlc.FromBinary(it.Key()[1:]); ts != v.at {
		return false, nil
	}
	return !it.Next(), nil
}

func (e *Engine) releaseView(v *heldView) {
	h := &e.snaps
	h.mu.Lock()
	v.refs--
	if v.dropped && v.refs == 0 {
		_ = v.snap.Close()
	}
	h.mu.Unlock()
}

// heldReader closes a reader on a held view: it releases the view.
type heldReader struct {
	e *Engine
	v *heldView
}

func (c heldReader) Close() error {
	c.e.releaseView(c.v)
	return nil
}

// newReaderHeld opens a reader of ns at cluster time at from the history.
func (e *Engine) newReaderHeld(ns Namespace, at hlc.Timestamp) (*Reader, error) {
	v, err := e.viewAt(ns, at)
	if err != nil {
		return nil, err
	}
	r := &Reader{e: e, snap: v.snap, closer: heldReader{e: e, v: v}}
	if err := r.describe(v.cat.Collection(ns.DB, ns.Coll)); err != nil {
		return nil, err
	}
	return r, nil
}

// getHeld is GetAt of a plain collection: one point read from the history.
func (e *Engine) getHeld(dst []byte, ns Namespace, id bsoncore.Value, at hlc.Timestamp) ([]byte, bool, error) {
	r, err := e.newReaderHeld(ns, at)
	if err != nil {
		return dst, false, err
	}
	defer r.Close()
	return r.Fetch(dst, appendIDKey(nil, id))
}
