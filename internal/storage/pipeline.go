package storage

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/hoptrace"
	"github.com/cairndb/cairn/internal/invariants"
)

// Hooks observe the commit pipeline. Committing runs on the pipeline
// goroutine after a group's requests applied and before its batch commits,
// that is before any reader can see its writes; it reports whether the group
// changed state that Committed publishes (the catalog), in which case the
// next group is applied only after this one completes. Committed runs after
// a group is durable and before any of its requests is acknowledged, on the
// goroutine that waits for the group's sync; it publishes the state as of
// its group's Committing, not what later groups applied since. Failed runs
// on the pipeline goroutine when a group could not be committed, so
// in-memory state that requests advanced can be reset to the last committed
// state; it runs only when no group is between Committing and Committed
// but failed ones. Committed calls come in the order of the Committing
// calls. Without Hooks.Propose the hooks of one group never overlap those
// of another: Committing of group k+1 runs only after Committed of group k
// returned. With it ("Pipelined groups") Committing of later groups may
// run before group k's Committed, but never of a group that publishes,
// nor while one that publishes is in flight. Set the fields before the
// first Write; the pipeline reads them when a group completes.
type Hooks struct {
	Committing func() (publishes bool)
	Committed  func()
	Failed     func()
	// Verify runs after Committed in builds with the invariants tag only
	// (package invariants): it gets the keys the group's requests set or
	// deleted one by one (range deletions are not listed), so the caller
	// can check its invariants over what the group touched.
	Verify func(touched [][]byte)
	// Replicate, when set, makes the store a replica set member's: a
	// group's batch is not committed by the pipeline but handed, as its
	// Pebble batch representation, to Replicate, which returns once the
	// group is committed by the set and applied to this store (through
	// ApplyReplicated) — or with the error every request of the group then
	// gets (the group is not applied here; Failed runs). publishes is
	// Committing's answer. It runs on the pipeline goroutine, so groups are
	// replicated one at a time, in order (invariant "Replicated in order").
	// Nil (a standalone server) leaves the pipeline as it is.
	Replicate func(repr []byte, publishes bool) error
	// Propose, when set, makes the store a pipelined replica set
	// member's (replicate.go, invariant "Pipelined groups"): it hands a
	// group's own records, as a Pebble batch representation, to the set
	// and returns at once with a function that waits until the group is
	// committed and applied to this store (ApplyReplicated) or failed;
	// the pipeline meanwhile applies and proposes the next groups on top
	// of its writes. follows says the group was built over the writes of
	// groups proposed before it that had not all completed: the set must
	// then refuse it unless every one of them is in its log, in order.
	// Propose is called on the pipeline goroutine, in group order; it
	// takes precedence over Replicate.
	Propose func(repr []byte, publishes, follows bool) (wait func() error)
	// ProposeRoom is how many bytes Propose's repr has before the batch
	// representation: the set's headers go there, so the group is
	// proposed without another copy. Propose then owns repr.
	ProposeRoom int
	// LogBusy, with Propose, returns nil when the set's log (the
	// primary's own) has nothing left to write, else a channel closed
	// once it wrote everything proposed so far. While it is busy and a
	// group is in flight, the pipeline gathers the requests that arrive
	// into the next group rather than proposing them one by one: they
	// would wait for the log's sync in progress either way, and one
	// entry costs every member less than several (invariant "Groups
	// gather while the log syncs", replicate.go). Nil: groups are
	// proposed at once, up to maxInFlight.
	LogBusy func() <-chan struct{}
	// Applied, when set, runs after each ApplyReplicated made its group
	// visible and raised LastCommitted, on the caller's goroutine (groups
	// one at a time, in log order): prev is LastCommitted before the group,
	// now after it, and records visits the group's point writes (Set
	// records) to one keyspace, valid only during the call. So a reader of
	// a keyspace written in cluster-time order (the oplog) learns each
	// group's new keys without reading them back; one that holds every key
	// up to prev holds every key up to now with them, unless something else
	// wrote that keyspace meanwhile (then prev is past what it holds).
	Applied func(prev, now hlc.Timestamp, records func(space byte, fn func(key, value []byte)))
	// Publishes, with Propose, reports before Committing runs whether the
	// group just applied changed state that Committed publishes: such a
	// group is proposed only once every group in flight completed, and the
	// next group only once it completed. Nil: every group is so.
	Publishes func() bool
}

// maxGroup bounds how many requests one commit group holds, so one sync does
// not wait on an unbounded amount of apply work.
const maxGroup = 512

// groupBytes is how many bytes of writes a commit group gathers before it
// commits (pipeline.maxGroupBytes), for memtables of memTable bytes: a
// quarter of a memtable. Pebble turns a batch of half a memtable or more
// into a memtable of its own (a "flushable batch": the memtable in use is
// rotated and flushed early, and the batch's memory stays on the Go heap
// until it is flushed), so a group of bulk inserts that gathered every
// waiting writer (16 clients inserting 1,000 documents each: 40 MB) made
// every group a flush, and two groups in flight held twice that on the
// heap. With the cap a group commits at the first request that takes it
// past a quarter: a single request larger than that still commits alone.
// Invariant "Bounded group": a group's batch holds at most maxGroupBytes
// plus its last request's writes (TestGroupBytesBound).
func groupBytes(memTable uint64) int { return int(memTable / 4) }

type request struct {
	fn   func(*Txn) error
	err  error
	done chan struct{}
	// applied: the request's writes joined its group's batch (its own
	// function did not fail), so an error for it afterwards is its group's
	// failure (groupStats.failed).
	applied bool
	// t0 and tAck are when the request was submitted and acknowledged
	// (package hoptrace; 0 unless built with the cairntrace tag).
	t0, tAck int64
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

// flight is one commit group on its way through the pipeline: applied on
// the pipeline goroutine, then, once its batch is in Pebble, handed to the
// completer, which waits for its log sync and acknowledges it.
type flight struct {
	group []*request
	batch *pebble.Batch // set while the completer owns the group
	// maxTick is the highest cluster time the group's requests took
	// (Txn.Tick); zero when none did.
	maxTick hlc.Timestamp
	// touched collects the point keys of the group's applied requests for
	// Hooks.Verify; used only with invariants.Enabled.
	touched [][]byte
	// docWrites are the document cache's hashes of the document keys the
	// group's applied requests wrote, and docRange says one deleted a
	// range reaching into the documents: a request's Get of such a key
	// is not served from the cache ("Group reads through the cache").
	// Kept only while cached reads are on (Txn.docs).
	docWrites map[uint64]struct{}
	docRange  bool
	// refresh is the hashes of the documents the group's requests read
	// through the cache and missed, and of the cached documents its batch
	// dropped, which its commit caches with their new values
	// (visibility.changeRefreshing, which maps each to the number of its
	// key's last record in the group's batch).
	refresh map[uint64]uint32
	// proposed waits for a pipelined member's group to be committed by
	// the set and applied here (Hooks.Propose); follows says the group
	// was proposed as its predecessor's follower (replicate.go).
	proposed func() error
	follows  bool
	// buf is the group's batch buffer, given to the spare once the batch
	// is closed (invariant "Group buffers reused"); nil unless the store
	// committed the batch itself and Pebble left the bytes with it.
	buf []byte
	// Timestamps for package hoptrace (0 unless built with the cairntrace
	// tag): the group's first request taken, the group handed on
	// (proposed, or committed to Pebble), its wait returned.
	tFirst, tHanded, tDone int64
}

type pipeline struct {
	pdb     *pebble.DB
	visible *visibility // every group's commit is a change of it (shared_view.go)
	// held are the store's transactions' intents: a request may not
	// write a prepared transaction's keys (prepare.go).
	held *intents
	// unf is the store's unflushed set ("Unflushed documents known"),
	// used by a standalone store's groups only.
	unf   *unflushed
	hooks *Hooks
	log   *slog.Logger
	space *spaceCheck
	// halted is set once the disk failed the log (invariant "Stop on a
	// failed log"); every later write gets it.
	halted atomic.Pointer[StoppedError]
	// failBeforeCommit fails a whole group just before its batch commits
	// (failpoint.StorageFailBeforeCommit); failAfterCommit answers every
	// request of a committed group with an error
	// (failpoint.StorageFailAfterCommit).
	failBeforeCommit, failAfterCommit *failpoint.Point

	// maxGroupBytes ends a group once its batch holds this many bytes
	// (groupBytes, invariant "Bounded group").
	maxGroupBytes int

	// sizeHint is the byte size of the last group's batch: the next group
	// starts with that much room, so a large group does not grow its batch by
	// doubling and copying (see batchSizeHint).
	sizeHint int

	// spare is a large group's batch buffer, waiting for the next large
	// group (invariant "Group buffers reused", spare.go).
	spare spareBuffer

	groups groupStats // groupstats.go

	// inRequest is the pipeline goroutine's id while a request function
	// runs (0 otherwise); builds with the invariants tag only
	// (checkNotInRequest).
	inRequest atomic.Uint64

	// clock issues cluster times (Txn.Tick); lastCommitted is the store's
	// highest acknowledged one (DB.LastCommitted), advanced by finish.
	clock         *hlc.Clock
	lastCommitted *atomic.Uint64
	// syncing hands a committed group to the completer goroutine; synced
	// says it is done with it (synced, published, acknowledged). inFlight
	// is true between the two; only the pipeline goroutine reads it.
	syncing   chan *flight
	synced    chan struct{}
	inFlight  int
	completed chan struct{} // closed when the completer returns

	// The pipelined replica set member's state (replicate.go), pipeline
	// goroutine only but broken, which the completer sets.
	rep replicating

	mu      sync.RWMutex // guards closed against submit racing stop
	closed  bool
	queue   chan *request
	stopped chan struct{}
}

func startPipeline(pdb *pebble.DB, visible *visibility, hooks *Hooks, log *slog.Logger, fps *failpoint.Registry, space *spaceCheck, maxGroupBytes int) *pipeline {
	p := &pipeline{
		pdb:              pdb,
		maxGroupBytes:    maxGroupBytes,
		visible:          visible,
		failBeforeCommit: fps.Define(failpoint.StorageFailBeforeCommit),
		failAfterCommit:  fps.Define(failpoint.StorageFailAfterCommit),
		hooks:            hooks,
		log:              log,
		space:            space,
		queue:            make(chan *request, 4*maxGroup),
		stopped:          make(chan struct{}),
		syncing:          make(chan *flight, maxInFlight),
		synced:           make(chan struct{}, maxInFlight),
		completed:        make(chan struct{}),
	}
	p.spare.max = 4 * maxGroupBytes // a memtable (groupBytes)
	go p.complete()
	go p.run()
	return p
}

func (p *pipeline) submit(fn func(*Txn) error) error {
	if e := p.halted.Load(); e != nil {
		return e
	}
	r := requestPool.Get().(*request)
	r.fn, r.err, r.applied = fn, nil, false
	r.t0 = hoptrace.Now()
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		requestPool.Put(r)
		return ErrClosed
	}
	p.queue <- r
	p.mu.RUnlock()
	<-r.done
	if hoptrace.Enabled {
		hoptrace.Since(hoptrace.ReqWake, r.tAck)
		hoptrace.Since(hoptrace.ReqTotal, r.t0)
	}
	err := r.err
	r.fn = nil
	requestPool.Put(r)
	return err
}

// stop refuses new requests, lets queued ones finish and waits for the loop.
func (p *pipeline) stop() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	<-p.stopped
}

// run applies group after group (invariant "Overlapped sync"): while the
// completer waits for group k's log sync, run applies group k+1 into its
// batch; it commits that batch only after group k is acknowledged. Two
// flights alternate, since at most one is with the completer.
func (p *pipeline) run() {
	defer close(p.stopped)
	var flights [maxInFlight + 1]flight
	txn := &Txn{}
	for next := 0; ; next = (next + 1) % len(flights) {
		first, ok := <-p.queue
		if !ok {
			p.wait()
			p.rep.discard()
			close(p.syncing)
			<-p.completed
			return
		}
		f := &flights[next]
		f.tFirst = hoptrace.Now()
		f.group = append(f.group[:0], first)
		var inFlight bool
		if p.hooks != nil && p.hooks.Propose != nil {
			inFlight = p.commitReplicated(f, txn)
		} else {
			inFlight = p.commitGroup(f, txn)
		}
		hoptrace.Count(hoptrace.GroupSize, len(f.group))
		if !inFlight {
			p.groups.record(len(f.group))
			p.ack(f.group)
		}
	}
}

// complete is the completer goroutine: it finishes each group run hands it.
func (p *pipeline) complete() {
	defer close(p.completed)
	for f := range p.syncing {
		p.finish(f)
		// Recorded before the acknowledgement, so a writer that returns
		// finds its group counted (CommitGroups).
		p.groups.record(len(f.group))
		p.ack(f.group)
		if hoptrace.Enabled {
			groupAcked.Set(hoptrace.Since(hoptrace.GroupAck, f.tDone))
		}
		p.synced <- struct{}{}
	}
}

// groupAcked is when the completer last told the pipeline a group was
// acknowledged (package hoptrace's trace builds only).
var groupAcked hoptrace.Mark

// wait returns once every group with the completer is acknowledged.
func (p *pipeline) wait() {
	for ; p.inFlight > 0; p.inFlight-- {
		<-p.synced
	}
}

// ack wakes every request of group; none may be touched after. A group
// whose applied requests are answered with an error is counted failed
// first (DB.FailedGroups), so a writer that returns finds it counted.
func (p *pipeline) ack(group []*request) {
	for _, r := range group {
		if r.applied && r.err != nil {
			p.groups.failed.Add(1)
			break
		}
	}
	for _, r := range group {
		r.tAck = hoptrace.Now()
		r.done <- struct{}{}
	}
}

// stopWrites makes every later write fail with the disk's error (invariant
// "Stop on a failed log"); the first error is kept.
func (p *pipeline) stopWrites(cause error) {
	if p.halted.CompareAndSwap(nil, newStoppedError(cause, time.Now())) {
		p.log.Error("the disk failed the write-ahead log: writes stopped until restart", "err", cause)
	}
}

// refuse answers every request of group with err, applying none.
func refuse(group []*request, err error) {
	for _, r := range group {
		r.err = err
	}
}

// refuseStopped refuses f's group, once the groups in flight are done,
// when the store halted on a failed log or the disk is too full to write
// (commitGroup's and commitReplicated's first check); it reports whether
// it did.
func (p *pipeline) refuseStopped(f *flight) bool {
	var err error
	if e := p.halted.Load(); e != nil {
		err = e
	} else {
		err = p.space.check()
	}
	if err == nil {
		return false
	}
	p.wait()
	refuse(f.group, err)
	return true
}

// commitGroup applies each request of f in order and commits the survivors
// with one batch commit. It reports whether it handed f to the completer,
// which then waits for the sync and acknowledges f; otherwise f is finished
// and run acknowledges it. Every way out waits for the previous group first,
// so groups are acknowledged in order and their hooks never overlap.
func (p *pipeline) commitGroup(f *flight, txn *Txn) bool {
	if p.refuseStopped(f) {
		return false
	}
	batch := p.groupBatch()
	handed := false
	defer func() {
		if !handed {
			_ = batch.Close()
		}
		p.unf.discarded() // unless committed: the batch never reached Pebble
	}()
	waited := p.inFlight > 0 // for package hoptrace: the group waits for the previous one
	applied := 0
	p.ready(f, txn, batch, &applied)
	// A closure of this frame, which gather does not keep: on the stack.
	apply := func(r *request) { p.applyOne(f, txn, batch, r, &applied) }
	// Until the previous group is acknowledged, requests that arrive join
	// this group (closed-loop clients acknowledged by the previous group
	// come back here), so one sync still carries every waiting writer —
	// up to maxGroupBytes (invariant "Bounded group").
	p.gather(f, 0, apply, func() bool { return batch.Len() >= p.maxGroupBytes })
	p.groups.noteBytes(batch.Len())
	p.sizeHint = batchSizeHint(batch.Len())
	p.wait() // the previous group is synced and acknowledged
	if applied == 0 {
		return false
	}
	if e := p.halted.Load(); e != nil {
		// The previous group's log failed while this one applied: its
		// writes never reach Pebble; reset what its requests advanced.
		refuse(f.group, e)
		if p.hooks != nil && p.hooks.Failed != nil {
			p.hooks.Failed()
		}
		return false
	}
	publishes := false
	if p.hooks != nil && p.hooks.Committing != nil {
		publishes = p.hooks.Committing()
	}
	var err error
	if p.failBeforeCommit.Active() {
		if _, fire := p.failBeforeCommit.Eval(nil); fire {
			err = ErrFailPoint
		}
	}
	if err != nil {
		p.log.Error("commit group failed", "requests", applied, "err", err)
		for _, r := range f.group {
			if r.err == nil {
				r.err = fmt.Errorf("storage: commit failed: %w", err)
			}
		}
		if p.hooks != nil && p.hooks.Failed != nil {
			p.hooks.Failed()
		}
		return false
	}
	if batch.Empty() {
		f.maxTick = 0 // times taken by requests that wrote nothing: unused
		p.finish(f)
		return false
	}
	if f.maxTick != 0 {
		// Invariant "Cluster time survives restart": the group's highest
		// time is durable exactly when its changes are.
		var buf [8]byte
		batch.Set(clusterTimeKey, f.maxTick.AppendBinary(buf[:0]), nil)
	}
	if p.hooks != nil && p.hooks.Replicate != nil {
		// A replica set member: the group reaches Pebble only through the
		// replicated log (ApplyReplicated, on the member's apply loop),
		// the same way on the primary and on every secondary.
		if err := p.hooks.Replicate(batch.Repr(), publishes); err != nil {
			refuse(f.group, err)
			if p.hooks.Failed != nil {
				p.hooks.Failed()
			}
			return false
		}
		p.finish(f)
		return false
	}
	// Pebble's ApplyNoSyncWait (marked experimental: the API CockroachDB
	// uses to pipeline its syncs) makes the batch visible and queues its
	// log record with a sync; the completer's SyncWait returns once Pebble
	// has synced it — with SyncAlways to the disk, in the interval mode to
	// the OS (walFS): invariants "Durable acknowledgement" and "Written
	// before acknowledged". A failed log write or sync comes back as an
	// error there, where Apply would treat it as fatal and end the process
	// through its logger.
	var tCommit int64
	if hoptrace.Enabled {
		tCommit = hoptrace.Now()
		if waited {
			hoptrace.Since(hoptrace.GroupNext, groupAcked.Get())
		}
	}
	repr := batch.Repr()
	err = p.visible.changeRefreshing(repr, func() error { return p.pdb.ApplyNoSyncWait(batch, pebble.Sync) }, f.refreshSet())
	if hoptrace.Enabled {
		groupCommitted.Set(hoptrace.Since(hoptrace.GroupCommit, tCommit))
	}
	if err != nil {
		// Whatever Pebble applied is visible, but the disk may not hold
		// it: publish the state it made, as readers see it, answer the
		// requests with the error and take no more.
		p.stopWrites(err)
		p.unf.committed(0) // Pebble may hold some of it
		refuse(f.group, p.halted.Load())
		if p.hooks != nil && p.hooks.Committed != nil {
			p.hooks.Committed()
		}
		return false
	}
	f.buf = leftWith(batch, repr)
	p.unf.committed(uint64(batch.SeqNum()))
	f.batch, handed = batch, true
	if hoptrace.Enabled {
		f.tHanded = hoptrace.Since(hoptrace.GroupApply, f.tFirst)
	}
	p.inFlight++
	p.syncing <- f
	if publishes || invariants.Enabled && p.hooks != nil && p.hooks.Verify != nil {
		// The next group's requests must see this group's state published
		// (the catalog, and what its Committed hook forgets), so the next
		// group is applied only after it. Builds with the invariants tag
		// do not overlap at all when they verify: Verify reads state only
		// the pipeline goroutine may change (the engine's tail bounds),
		// and runs before the group is acknowledged.
		p.wait()
	}
	return true
}

// ready readies f for its requests on batch and applies those it holds;
// *applied counts those whose writes joined the group. The callers apply
// each later request with applyOne.
func (p *pipeline) ready(f *flight, txn *Txn, batch *pebble.Batch, applied *int) {
	if invariants.Enabled {
		f.touched = f.touched[:0]
	}
	f.maxTick = 0
	txn.clock, txn.flight = p.clock, f
	// A standalone store's groups read documents through the cache: the
	// pipeline is the only writer that makes changes visible, one group
	// after another, so the store holds every earlier group's writes
	// when this one applies, and the cache holds the store's values
	// ("Group reads through the cache"). A replica set member's groups
	// reach the store through its log (maybe after later groups applied
	// over them): they read as before.
	standalone := p.hooks == nil || p.hooks.Replicate == nil && p.hooks.Propose == nil
	txn.docs, txn.unf, txn.pdb = nil, nil, p.pdb
	if standalone {
		txn.unf = p.unf
	} else {
		p.unf.off.Store(true)
	}
	if p.visible.docs != nil && standalone {
		txn.docs = p.visible
		f.docWrites, f.refresh = clearedKeys(f.docWrites), clearedKeys(f.refresh)
		if f.docWrites == nil {
			f.docWrites = make(map[uint64]struct{})
		}
		if f.refresh == nil {
			f.refresh = make(map[uint64]uint32)
		}
		f.docRange = false
	}
	for _, r := range f.group {
		p.applyOne(f, txn, batch, r, applied)
	}
}

// applyOne applies r, one of f's requests, counting it in *applied when
// its writes joined the group.
func (p *pipeline) applyOne(f *flight, txn *Txn, batch *pebble.Batch, r *request, applied *int) {
	if r.applied = p.applyRequest(f, txn, batch, r); r.applied {
		*applied++
	}
}

// gather adds to f, applying each, the requests that arrive while more
// than busy groups are in flight, then whatever is already queued, up to
// maxGroup requests and until the group's writes reach maxGroupBytes
// (full reports that they have).
func (p *pipeline) gather(f *flight, busy int, apply func(*request), full func() bool) {
	for p.inFlight > busy && len(f.group) < maxGroup && !full() {
		if !p.takeOne(f, apply, nil) {
			return
		}
	}
	for len(f.group) < maxGroup && !full() {
		select {
		case r, ok := <-p.queue:
			if !ok {
				return // run sees the closed queue next
			}
			f.group = append(f.group, r)
			apply(r)
		default:
			return
		}
	}
}

// takeOne waits for one of: a request (added to f and applied), a group
// in flight acknowledged, or idle closed. It reports false once the queue
// is closed, after waiting for the groups in flight (run sees the closed
// queue next). A nil idle never fires.
func (p *pipeline) takeOne(f *flight, apply func(*request), idle <-chan struct{}) bool {
	select {
	case r, ok := <-p.queue:
		if !ok {
			p.wait()
			return false
		}
		f.group = append(f.group, r)
		apply(r)
	case <-p.synced:
		p.inFlight--
	case <-idle:
	}
	return true
}

// applyRequest runs r's function into batch on the pipeline goroutine and
// reports whether its writes joined the group (r.err says why not).
func (p *pipeline) applyRequest(f *flight, txn *Txn, batch *pebble.Batch, r *request) bool {
	txn.reset(batch)
	if hoptrace.Enabled {
		hoptrace.Since(hoptrace.ReqQueue, r.t0)
	}
	if invariants.Enabled {
		txn.gid = invariants.GoroutineID()
		p.inRequest.Store(txn.gid)
	}
	r.err = runRequest(r.fn, txn)
	if r.err == nil {
		r.err = p.held.checkPrepared(txn)
	}
	if r.err == nil {
		if txn.unf != nil {
			txn.unf.note(txn.ops) // before the batch holds them
		}
		r.err = txn.applyTo(batch)
	}
	if invariants.Enabled {
		txn.gid = 0
		p.inRequest.Store(0)
	}
	if r.err != nil {
		txn.undo(0)
		return false
	}
	if invariants.Enabled {
		f.touched = txn.appendTouched(f.touched)
	}
	if txn.docs != nil {
		txn.noteDocWrites(f)
	}
	return true
}

// finish waits for f's log sync if it was committed and runs the Committed
// and Verify hooks; the caller acknowledges f.
func (p *pipeline) finish(f *flight) {
	if f.proposed != nil {
		// A pipelined member's group (replicate.go): wait for the set.
		err := f.proposed()
		f.proposed = nil
		if hoptrace.Enabled {
			f.tDone = hoptrace.Since(hoptrace.GroupRepl, f.tHanded)
		}
		if err != nil {
			refuse(f.group, err)
			p.rep.fail(err)
			return
		}
		if invariants.Enabled && p.rep.broken.Load() != nil && f.follows {
			invariants.Fail("Chained groups fail together", "a group that follows a failed one was committed")
		}
	}
	if f.batch != nil {
		err := f.batch.SyncWait()
		if hoptrace.Enabled {
			f.tDone = hoptrace.Since(hoptrace.GroupSync, f.tHanded)
			hoptrace.Since(hoptrace.SyncWake, logSynced.Get())
		}
		_ = f.batch.Close()
		f.batch = nil
		// Closed: Pebble let go of a buffer over what its pool keeps.
		p.spare.give(f.buf)
		f.buf = nil
		if err != nil {
			// The group is applied in Pebble's memtable and visible, but
			// the disk may not hold it: publish the state it made, as
			// readers see it, answer its requests with the error and take
			// no more.
			p.stopWrites(err)
			refuse(f.group, p.halted.Load())
			if p.hooks != nil && p.hooks.Committed != nil {
				p.hooks.Committed()
			}
			return
		}
	}
	if f.maxTick != 0 {
		// (A replica set member's ApplyReplicated may have raised it to
		// this group's time already: not below, then.)
		if p.hooks != nil && p.hooks.Propose != nil {
			// ApplyReplicated raised it already, maybe past this group
			// to a later one applied meanwhile: never lower it.
			raiseTo(p.lastCommitted, uint64(f.maxTick))
		} else {
			if invariants.Enabled && uint64(f.maxTick) < p.lastCommitted.Load() {
				panic(fmt.Sprintf("storage: group's cluster time %v is below the last committed %v", f.maxTick, hlc.Timestamp(p.lastCommitted.Load())))
			}
			p.lastCommitted.Store(uint64(f.maxTick))
		}
	}
	if p.hooks != nil && p.hooks.Committed != nil {
		p.hooks.Committed()
	}
	if invariants.Enabled && p.hooks != nil && p.hooks.Verify != nil {
		p.hooks.Verify(f.touched)
		f.touched = f.touched[:0]
	}
	if p.failAfterCommit.Active() {
		if _, fire := p.failAfterCommit.Eval(nil); fire {
			// The group is durable and visible; only its acknowledgements
			// are lost, as when a connection drops after the sync.
			for _, r := range f.group {
				if r.err == nil {
					r.err = ErrFailPointAfterCommit
				}
			}
		}
	}
}

// checkNotInRequest fails invariant "Reads through the request" when a
// request function reads the store around its Txn (op is the DB method):
// such a read misses the earlier requests of its group, and on a
// pipelined member every group still in flight. Invariants builds only.
func (p *pipeline) checkNotInRequest(op string) {
	if g := p.inRequest.Load(); g != 0 && g == invariants.GoroutineID() {
		invariants.Fail("Reads through the request", "a request function called DB.%s: it must read through its Txn", op)
	}
}

// runRequest calls fn, turning a panic into that request's error so one bad
// request can neither kill the process nor fail its neighbours.
func runRequest(fn func(*Txn) error, txn *Txn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("storage: write request panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(txn)
}

// maxSizeHint bounds the room a group's batch starts with, so one huge group
// does not make every later group allocate as much.
const maxSizeHint = 64 << 20

// batchSizeHint is the room to give the next group's batch after a group of
// n bytes. Pebble keeps a pooled batch's buffer only up to 1 MiB, so a group
// of steady batch inserts just over that size (a thousand 1 KiB documents)
// would otherwise start from a small buffer every time and copy itself about
// eleven times while it doubles. The quarter of slack covers a slightly
// larger next group (Pebble also reserves worst-case varint room for the
// record it is adding, so an exact fit would still copy once at the end).
func batchSizeHint(n int) int { return min(n+n/4, maxSizeHint) }
