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
	"github.com/cairndb/cairn/internal/invariants"
)

// Hooks observe the commit pipeline from its own goroutine. Committing runs
// after a group's requests applied and before its batch commits, that is
// before any reader can see its writes; Committed runs after a group is
// durable and before any of its requests is acknowledged; Failed runs when a
// group could not be committed, so in-memory state that requests advanced
// can be reset to the last committed state. Set the fields before the first
// Write; the pipeline reads them when a group completes.
type Hooks struct {
	Committing func()
	Committed  func()
	Failed     func()
	// Verify runs after Committed in builds with the invariants tag only
	// (package invariants): it gets the keys the group's requests set or
	// deleted one by one (range deletions are not listed), so the caller
	// can check its invariants over what the group touched.
	Verify func(touched [][]byte)
}

// maxGroup bounds how many requests one commit group holds, so one sync does
// not wait on an unbounded amount of apply work.
const maxGroup = 512

type request struct {
	fn   func(*Txn) error
	err  error
	done chan struct{}
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

type pipeline struct {
	pdb   *pebble.DB
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

	// touched collects the point keys of a group's applied requests for
	// Hooks.Verify; used only with invariants.Enabled.
	touched [][]byte

	// sizeHint is the byte size of the last group's batch: the next group
	// starts with that much room, so a large group does not grow its batch by
	// doubling and copying (see batchSizeHint).
	sizeHint int

	groups groupStats // groupstats.go

	mu      sync.RWMutex // guards closed against submit racing stop
	closed  bool
	queue   chan *request
	stopped chan struct{}
}

func startPipeline(pdb *pebble.DB, hooks *Hooks, log *slog.Logger, fps *failpoint.Registry, space *spaceCheck) *pipeline {
	p := &pipeline{
		pdb:              pdb,
		failBeforeCommit: fps.Define(failpoint.StorageFailBeforeCommit),
		failAfterCommit:  fps.Define(failpoint.StorageFailAfterCommit),
		hooks:            hooks,
		log:              log,
		space:            space,
		queue:            make(chan *request, 4*maxGroup),
		stopped:          make(chan struct{}),
	}
	go p.run()
	return p
}

func (p *pipeline) submit(fn func(*Txn) error) error {
	if e := p.halted.Load(); e != nil {
		return e
	}
	r := requestPool.Get().(*request)
	r.fn, r.err = fn, nil
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		requestPool.Put(r)
		return ErrClosed
	}
	p.queue <- r
	p.mu.RUnlock()
	<-r.done
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

func (p *pipeline) run() {
	defer close(p.stopped)
	group := make([]*request, 0, maxGroup)
	txn := &Txn{}
	for {
		first, ok := <-p.queue
		if !ok {
			return
		}
		group = append(group[:0], first)
		group = p.drain(group)
		p.commitGroup(group, txn)
		p.groups.record(len(group))
		for _, r := range group {
			r.done <- struct{}{}
		}
	}
}

// drain adds whatever is already queued, without waiting, up to maxGroup.
func (p *pipeline) drain(group []*request) []*request {
	for len(group) < maxGroup {
		select {
		case r, ok := <-p.queue:
			if !ok {
				return group
			}
			group = append(group, r)
		default:
			return group
		}
	}
	return group
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

// commitGroup applies each request in order and commits the survivors with
// one synced batch commit.
func (p *pipeline) commitGroup(group []*request, txn *Txn) {
	if e := p.halted.Load(); e != nil {
		refuse(group, e)
		return
	}
	if err := p.space.check(); err != nil {
		refuse(group, err)
		return
	}
	batch := p.pdb.NewIndexedBatchWithSize(p.sizeHint)
	defer func() {
		p.sizeHint = batchSizeHint(batch.Len())
		_ = batch.Close()
	}()
	applied := 0
	if invariants.Enabled {
		p.touched = p.touched[:0]
	}
	for _, r := range group {
		txn.reset(batch)
		if invariants.Enabled {
			txn.gid = invariants.GoroutineID()
		}
		r.err = runRequest(r.fn, txn)
		if r.err == nil {
			r.err = txn.applyTo(batch)
		}
		if invariants.Enabled {
			txn.gid = 0
		}
		if r.err != nil {
			txn.undo(0)
			continue
		}
		if invariants.Enabled {
			p.touched = txn.appendTouched(p.touched)
		}
		applied++
	}
	if applied == 0 {
		return
	}
	if p.hooks != nil && p.hooks.Committing != nil {
		p.hooks.Committing()
	}
	var err error
	if p.failBeforeCommit.Active() {
		if _, fire := p.failBeforeCommit.Eval(nil); fire {
			err = ErrFailPoint
		}
	}
	if err == nil && !batch.Empty() {
		if err = p.commit(batch); err != nil {
			// The group is applied in Pebble's memtable and visible, but the
			// disk may not hold it: publish the state it made, as readers
			// see it, answer its requests with the error and take no more.
			p.stopWrites(err)
			refuse(group, p.halted.Load())
			if p.hooks != nil && p.hooks.Committed != nil {
				p.hooks.Committed()
			}
			return
		}
	}
	if err != nil {
		p.log.Error("commit group failed", "requests", applied, "err", err)
		for _, r := range group {
			if r.err == nil {
				r.err = fmt.Errorf("storage: commit failed: %w", err)
			}
		}
		if p.hooks != nil && p.hooks.Failed != nil {
			p.hooks.Failed()
		}
		return
	}
	if p.hooks != nil && p.hooks.Committed != nil {
		p.hooks.Committed()
	}
	if invariants.Enabled && p.hooks != nil && p.hooks.Verify != nil {
		p.hooks.Verify(p.touched)
		p.touched = p.touched[:0]
	}
	if p.failAfterCommit.Active() {
		if _, fire := p.failAfterCommit.Eval(nil); fire {
			// The group is durable and visible; only its acknowledgements
			// are lost, as when a connection drops after the sync.
			for _, r := range group {
				if r.err == nil {
					r.err = ErrFailPointAfterCommit
				}
			}
		}
	}
}

// commit writes batch to the log and waits until Pebble has synced it —
// with SyncAlways to the disk, in the interval mode to the OS (walFS) —
// invariants "Durable acknowledgement" and "Written before acknowledged".
// It waits apart from the commit (Pebble's ApplyNoSyncWait, marked
// experimental: the API CockroachDB uses to pipeline its syncs) so that a
// failed log write or sync comes back as an error: Apply treats one as fatal
// and ends the process through its logger. The batch is visible to readers
// from the apply on, in both ways of waiting (Pebble's documentation).
func (p *pipeline) commit(batch *pebble.Batch) error {
	if err := p.pdb.ApplyNoSyncWait(batch, pebble.Sync); err != nil {
		return err
	}
	return batch.SyncWait()
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
