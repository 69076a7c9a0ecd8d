package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Snapshot reads at a cluster time meet prepared transactions (issues #19
// and #21: one snapshot across shards). A cross-shard transaction commits
// on every participant with the coordinator's commitTimestamp C (the
// highest of its prepare timestamps); each participant's commit group
// takes a time of its own, at or after C (txn_prepare.go: its clock
// observes C first), since this node's groups reach the store in the
// order of their times ("A held view is exact from its time"). A reader
// at T on two shards must see the transaction on both or on neither.
//
// Invariant "A read at T sees a prepared commit iff its commitTimestamp ≤
// T": a read at a cluster time T of a collection a prepared transaction
// wrote (outside a transaction: planner.openAsOf; in a transaction at T:
// BeginAt's statements) first waits while a prepared transaction holds the
// collection (WaitPrepared: a prepare conflict, as MongoDB's reader at a
// time at or after the prepare waits) — a transaction prepared after the
// read began has a prepare time, hence a commitTimestamp, after T, since T
// is at most the node's last committed time then. Once none holds it, a
// commit with commitTimestamp C and own time S is in the view at T iff S
// ≤ T; so the read is right unless C ≤ T < S, where the view lacks a
// commit it must show. Each prepared commit with S > C is recorded with
// its interval [C, S) and namespaces (in its own commit request, so before
// anyone can see it), and a read at a T inside the interval of a commit
// that wrote its collection fails with SnapshotUnavailable (246, MongoDB's
// code for a snapshot the node cannot serve; a router that chose T itself
// reads again at a later one, as mongos does). Intervals are kept while
// the history window holds their times; a read before the newest dropped
// one is SnapshotTooOld. Builds with the invariants tag fail a commit
// applied before its commitTimestamp (a read between would see it, and
// nothing could refuse that). TestSnapshotPreparedInterval.
//
// Deviation from MongoDB 7.0: mongod commits a prepared transaction at C
// exactly (WiredTiger keeps versions by timestamp) and the reader sees it;
// here such a reader is refused and must read again. Intervals live in
// the primary's memory: a member that becomes primary, or restarts, keeps
// none, which is safe because its snapshot history starts empty then too
// (reads before it are SnapshotTooOld).

// preparedCommit is one prepared transaction's commit whose own time is
// after its commitTimestamp.
type preparedCommit struct {
	commitTS, at hlc.Timestamp // [commitTS, at): times whose view lacks it
	ns           []Namespace   // the collections it wrote
}

// preparedCommits are the recent ones, ascending by at (commits are
// serialized by the pipeline).
type preparedCommits struct {
	any   atomic.Bool // one was ever recorded: reads before then take no lock
	mu    sync.Mutex
	list  []preparedCommit
	floor hlc.Timestamp // the newest dropped one's at: reads before it are too old
}

// maxPreparedCommits bounds the record whatever the window.
const maxPreparedCommits = 1 << 14

// recordPreparedCommit records t's commit at at with commitTS (in the
// commit's request), when at is after commitTS. A commit that logged no
// entry (at 0: no statement of it changed a document through the engine)
// made nothing visible at any time and is not recorded.
func (e *Engine) recordPreparedCommit(t *Txn, commitTS, at hlc.Timestamp) {
	if at == 0 {
		return
	}
	if invariants.Enabled && at < commitTS {
		// A read at a T in [at, commitTS) would see a commit it must not:
		// nothing could refuse it.
		invariants.Fail("A read at T sees a prepared commit iff its commitTimestamp ≤ T", "a prepared transaction committed at %s, before its commitTimestamp %s", at, commitTS)
	}
	if at <= commitTS {
		return
	}
	c := preparedCommit{commitTS: commitTS, at: at}
	for ns := range t.written {
		c.ns = append(c.ns, ns)
	}
	p := &e.prepCommits
	horizon := uint32(e.now().Add(-e.SnapshotHistoryWindow()).Unix())
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.list) && (p.list[n].at.T() < horizon || len(p.list)-n >= maxPreparedCommits) {
		p.floor = max(p.floor, p.list[n].at)
		n++
	}
	if n > 0 {
		p.list = slices.Delete(p.list, 0, n)
	}
	p.list = append(p.list, c)
	p.any.Store(true)
}

// preparedAt refuses a read of ns at at that would miss a prepared
// commit (see above).
func (e *Engine) preparedAt(ns Namespace, at hlc.Timestamp) error {
	p := &e.prepCommits
	if !p.any.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if at < p.floor {
		return errSnapshotTooOld(at, p.floor)
	}
	for i := len(p.list) - 1; i >= 0 && p.list[i].at > at; i-- {
		if c := p.list[i]; c.commitTS <= at && slices.Contains(c.ns, ns) {
			return mongoerr.New(mongoerr.SnapshotUnavailable, "Unable to read from a snapshot at %s: a prepared transaction that wrote %s committed with commitTimestamp %s, and this member applied its commit at %s; read at another time", at, ns, c.commitTS, c.at)
		}
	}
	return nil
}

// BeginAt starts a transaction reading the store as of cluster time at
// (readConcern {level: "snapshot", atClusterTime} in a transaction; a
// replica set member's): the snapshot history's view exact at at, with its
// catalog, held until the transaction and its readers are done. Its
// statements read their collections under "A read at T sees a prepared
// commit iff its commitTimestamp ≤ T" (the caller waits on prepare
// conflicts first: planner's openInTxn).
func (e *Engine) BeginAt(at hlc.Timestamp) (*Txn, error) {
	if !e.snaps.allowed.Load() {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use readConcern: snapshot with atClusterTime")
	}
	v, err := e.heldAt(at)
	if err != nil {
		return nil, err
	}
	t := &Txn{e: e, cat: v.cat, at: at}
	e.db.BeginAtIn(&t.stx, v.snap, func() { e.releaseView(v) })
	t.st = &t.stx
	return t, nil
}

// ReadAt is the cluster time a transaction reads at (BeginAt), 0 for one
// reading what was committed when it began.
func (t *Txn) ReadAt() hlc.Timestamp { return t.at }

// WaitPreparedAt is a read of ns at cluster time at's prepare conflict
// (see "A read at T sees a prepared commit iff its commitTimestamp ≤ T"):
// it refuses a time after the last committed one (a transaction could
// still prepare at or before it), then waits until the prepared
// transaction holding ns now, if any, ends. One prepared after that
// prepared after at, and does not matter to the read: a reader does not
// wait behind a stream of prepares that began after it (WaitPrepared,
// outside a transaction, waits until none holds ns).
func (e *Engine) WaitPreparedAt(ctx context.Context, ns Namespace, at hlc.Timestamp) error {
	if last := e.db.LastCommitted(); at > last {
		return mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: %s; current clusterTime: %s", at, last)
	}
	if !e.db.AnyPrepared() {
		return nil
	}
	st, _ := e.cat.ReadBegin()
	c := st.Collection(ns.DB, ns.Coll)
	if c == nil {
		return nil
	}
	key := catalog.RecordKey(c.ID)
	first, ended := e.db.PreparedBy(key)
	for first != nil {
		select {
		case <-ended:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		var now *storage.Transaction
		if now, ended = e.db.PreparedBy(key); now != first {
			return nil
		}
	}
	return nil
}
