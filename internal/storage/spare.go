package storage

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// pebbleKeepsBytes is the largest batch buffer Pebble's batch pool keeps
// when a batch is closed (its default maximum retained size): it hands
// such a buffer to its next batch, and lets go of a larger one.
const pebbleKeepsBytes = 1 << 20

// spareBuffer holds at most one large group's batch buffer between
// groups, for the next large group (invariant "Group buffers reused"):
// during a load every group's batch passes pebbleKeepsBytes, and each
// new batch would otherwise allocate its buffer again. The completer
// gives, once the group's batch is closed; the pipeline goroutine takes.
type spareBuffer struct {
	mu  sync.Mutex
	buf []byte
	// max is the largest capacity kept: a memtable's size (at most
	// 64 MiB, memTableSize).
	max int
}

// give keeps buf for the next large group, in place of any buffer kept
// before, if Pebble does not keep it (over pebbleKeepsBytes) and it is
// not over the bound. The caller guarantees nothing else can read buf.
func (s *spareBuffer) give(buf []byte) {
	if cap(buf) <= pebbleKeepsBytes || cap(buf) > s.max {
		return
	}
	s.mu.Lock()
	s.buf = buf
	s.mu.Unlock()
}

// take returns the buffer kept, if any, and keeps none.
func (s *spareBuffer) take() []byte {
	s.mu.Lock()
	buf := s.buf
	s.buf = nil
	s.mu.Unlock()
	return buf
}

// groupBatch is a new group's indexed batch with room for p.sizeHint
// bytes: on the spare buffer when the group is expected past what
// Pebble's pool keeps and the spare has that room, else on a buffer from
// Pebble (its pool's, for a small group). A group expected small drops
// the spare: the large groups that left it are over (a store left idle
// right after them keeps it; invariant "Group buffers reused").
func (p *pipeline) groupBatch() *pebble.Batch {
	buf := p.spare.take()
	if p.sizeHint > pebbleKeepsBytes && cap(buf) >= p.sizeHint {
		b := p.pdb.NewIndexedBatch()
		// An empty batch: a zeroed header (sequence number and count 0),
		// which always reads; the batch's index is empty too.
		empty := buf[:batchrepr.HeaderLen]
		clear(empty)
		if err := b.SetRepr(empty); err == nil {
			return b
		}
		_ = b.Close()
	}
	return p.pdb.NewIndexedBatchWithSize(p.sizeHint)
}

// leftWith is repr, batch's representation taken just before its commit,
// if the commit left those bytes with the batch, else nil. Pebble takes
// the buffer of a batch of half a memtable or more (a flushable batch: a
// memtable of its own, read until it is flushed) and leaves the batch
// without one (Repr then makes it a new header); any other batch keeps
// its buffer, which is the caller's again once the batch is closed.
func leftWith(batch *pebble.Batch, repr []byte) []byte {
	if now := batch.Repr(); len(repr) == 0 || &now[0] != &repr[0] {
		return nil
	}
	return repr
}
