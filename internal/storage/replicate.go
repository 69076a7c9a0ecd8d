package storage

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/hoptrace"
	"github.com/cairndb/cairn/internal/invariants"
)

// A replica set member's pipeline with Hooks.Propose proposes group k+1
// while group k replicates (invariant "Pipelined groups", doc.go): the
// groups of a chain share one indexed batch, each appended to it, so a
// request reads every earlier group's writes whether or not the node has
// applied them to Pebble yet, and each group proposes only its own
// records (the batch's suffix since the group began).

// maxInFlight bounds the groups proposed and not yet completed: enough for
// a group to replicate while the next ones apply and propose.
const maxInFlight = 4

// maxChainBatch bounds the shared batch: past it, the next group waits for
// the groups in flight and starts a new chain on a fresh batch, so memory
// and the batch's index stay bounded under endless load.
const maxChainBatch = 8 << 20

// replicating is the pipelined member's state.
type replicating struct {
	// batch holds the writes of every group of the chain, in order (nil:
	// the next group starts a chain). Only the pipeline goroutine uses it.
	batch *pebble.Batch
	// lastChain is the byte size of the last chain's batch when it ended:
	// the next chain's batch starts with that much room (batchSizeHint),
	// so a chain of many groups does not grow its batch by doubling and
	// copying every time (the first group's size, sizeHint, is far short
	// of a chain's).
	lastChain int
	// broken is the error of a failed group of the chain; the completer
	// sets it, the pipeline goroutine clears it once every group in
	// flight completed and Hooks.Failed ran (recover).
	broken atomic.Pointer[error]
}

// fail records the first failure of the chain's groups.
func (r *replicating) fail(err error) { r.broken.CompareAndSwap(nil, &err) }

// discard ends the chain's batch.
func (r *replicating) discard() {
	if r.batch != nil {
		r.lastChain = r.batch.Len()
		_ = r.batch.Close()
		r.batch = nil
	}
}

// recover, once a group of the chain failed, waits for every group in
// flight (each fails too: they follow it), resets the state requests
// advanced (Hooks.Failed) and ends the chain. It returns the failure.
func (p *pipeline) recover() error {
	p.wait()
	e := p.rep.broken.Load()
	if e == nil {
		return nil
	}
	if p.hooks.Failed != nil {
		p.hooks.Failed()
	}
	p.rep.discard()
	p.rep.broken.Store(nil)
	return *e
}

// commitReplicated is commitGroup for a member with Hooks.Propose: it
// applies f's requests on the chain's batch and proposes f's own records
// without waiting for the set (invariant "Pipelined groups"). It reports
// whether it handed f to the completer, which waits for the outcome and
// acknowledges f; otherwise f is finished and run acknowledges it. Every
// way out that does not hand f over waits for the groups in flight first,
// so groups are acknowledged in order.
func (p *pipeline) commitReplicated(f *flight, txn *Txn) bool {
	if p.refuseStopped(f) {
		return false
	}
	if p.rep.broken.Load() != nil {
		_ = p.recover() // f's requests are not applied yet: they run afresh
	}
	if p.inFlight == 0 || p.rep.batch != nil && p.rep.batch.Len() > maxChainBatch {
		// Nothing in flight (or a batch grown large): start a chain on a
		// fresh batch, reading only what Pebble holds — which may include
		// groups another primary made since the last chain.
		p.wait()
		if p.rep.broken.Load() != nil {
			_ = p.recover()
		}
		p.rep.discard()
	}
	f.follows = p.rep.batch != nil
	if !f.follows {
		p.rep.batch = p.pdb.NewIndexedBatchWithSize(max(p.sizeHint, batchSizeHint(p.rep.lastChain)))
	}
	batch := p.rep.batch
	start, startCount := len(batch.Repr()), batch.Count()
	applied := 0
	p.ready(f, txn, batch, &applied)
	apply := func(r *request) { p.applyOne(f, txn, batch, r, &applied) }
	// While as many groups as may be are in flight, or while the set's
	// log is still writing the groups in flight ("Groups gather while the
	// log syncs"), requests that arrive join this group, so one proposal
	// carries every waiting writer.
	p.gatherReplicated(f, apply, func() bool { return batch.Len()-start >= p.maxGroupBytes })
	p.groups.noteBytes(batch.Len() - start)
	if !f.follows {
		p.sizeHint = batchSizeHint(batch.Len())
	}
	own := batch.Count() - startCount
	publishes := p.hooks.Publishes == nil || p.hooks.Publishes()
	if applied == 0 || own == 0 || publishes || p.rep.broken.Load() != nil {
		// Nothing to propose, or a group that must run alone (it changes
		// what Committed publishes), or a chain that failed under it:
		// first let every group in flight complete.
		p.wait()
	}
	if e := p.rep.broken.Load(); e != nil {
		// An earlier group failed while f applied over its writes: f's
		// requests read state the set never took.
		refuse(f.group, *e)
		_ = p.recover()
		return false
	}
	if applied == 0 {
		return false
	}
	if own == 0 {
		f.maxTick = 0 // times taken by requests that wrote nothing: unused
		if p.hooks.Committing != nil {
			p.hooks.Committing()
		}
		p.finish(f)
		return false
	}
	publishes = false
	if p.hooks.Committing != nil {
		publishes = p.hooks.Committing()
	}
	if p.failBeforeCommit.Active() {
		if _, fire := p.failBeforeCommit.Eval(nil); fire {
			p.wait()
			p.log.Error("commit group failed", "requests", applied, "err", ErrFailPoint)
			for _, r := range f.group {
				if r.err == nil {
					r.err = fmt.Errorf("storage: commit failed: %w", ErrFailPoint)
				}
			}
			p.rep.fail(ErrFailPoint)
			_ = p.recover()
			return false
		}
	}
	if f.maxTick != 0 {
		// Invariant "Cluster time survives restart": the group's highest
		// time is durable exactly when its changes are.
		var buf [8]byte
		_ = batch.Set(clusterTimeKey, f.maxTick.AppendBinary(buf[:0]), nil)
		own++
	}
	// The group's own records: a batch header counting them, then the
	// batch's records since the group began (Pebble's Apply and Set
	// append records in order).
	data := batch.Repr()
	room := p.hooks.ProposeRoom
	repr := make([]byte, room+batchHeaderLen, room+batchHeaderLen+len(data)-start)
	binary.LittleEndian.PutUint32(repr[room+8:], own)
	repr = append(repr, data[start:]...)
	if hoptrace.Enabled {
		hoptrace.Count(hoptrace.GroupInFlight, p.inFlight-len(p.synced)) // not counting those done
		f.tHanded = hoptrace.Since(hoptrace.GroupApply, f.tFirst)
	}
	f.proposed = p.hooks.Propose(repr, publishes, f.follows)
	if f.follows {
		p.groups.follows.Add(1)
	}
	p.inFlight++
	p.syncing <- f
	if publishes || invariants.Enabled && p.hooks.Verify != nil {
		// As commitGroup: the next group is applied only after this one
		// published its state, and builds that verify do not overlap
		// (Verify reads state only the pipeline goroutine may change).
		p.wait()
		if p.rep.broken.Load() != nil {
			_ = p.recover()
		}
	}
	return true
}

// gatherReplicated is gather for a pipelined member (invariant "Groups
// gather while the log syncs"): f takes the requests that arrive while
// maxInFlight groups are in flight, or while at least one is and the
// set's log has not written them all (Hooks.LogBusy) — a request proposed
// then would wait for that write's sync anyway before its own, and one
// entry for all of them costs each member one append, one acknowledgement
// and one apply instead of one each. Then whatever is already queued.
// With nothing in flight f is proposed at once, so the wait always ends:
// every group in flight completes.
func (p *pipeline) gatherReplicated(f *flight, apply func(*request), full func() bool) {
	for len(f.group) < maxGroup && !full() {
		var idle <-chan struct{}
		if p.inFlight > 0 && p.hooks.LogBusy != nil {
			idle = p.hooks.LogBusy()
		}
		if p.inFlight < maxInFlight && idle == nil {
			break
		}
		if !p.takeOne(f, apply, idle) {
			return
		}
	}
	p.gather(f, maxInFlight, apply, full) // what is queued already
}

// batchHeaderLen is the size of a Pebble batch representation's header:
// an 8-byte sequence number (zero until committed) and a 4-byte count.
const batchHeaderLen = 12
