package storage

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Invariant "Unflushed documents known": on a standalone store, a document
// key that the pipeline's group batch or one of Pebble's memtables may
// hold is in the unflushed set (unflushed.mayHold reports it), so an
// insert's uniqueness check that finds its key absent from the set reads
// the tables alone (an iterator with OnlyReadGuaranteedDurable, whose
// bloom filters stop an absent key) and skips the memtables' skiplist
// seeks, most of what the check cost (BENCHMARKS.md "The load phase,
// profiled against the pebble-oplog floor").
//
// Exactness: a false "absent" would lose a uniqueness guarantee, so the set
// errs only towards "may hold" (the check then seeks the batch and the
// memtables as before):
//   - Every document key a request sets or deletes is added, with a hash
//     (collisions answer "may hold"), on the pipeline goroutine before the
//     request's writes join the group's batch (pipeline.applyRequest), in
//     a chunk per group. Every write of a standalone store's documents
//     goes through the pipeline: transactions and prepared transactions
//     commit as one of its requests, and the other writers of Pebble
//     (ApplyReplicated, a checkpoint restore) are a replica set member's,
//     whose pipeline does not use the set at all.
//   - A group's chunk takes the first sequence number Pebble gave its
//     batch; a chunk leaves the set only once a flush has ended that wrote
//     an entry at or above that number (the FlushEnd event, raised after
//     Pebble installed the flush's tables in its read state). Memtables
//     hold contiguous ranges of sequence numbers and flush in order, and a
//     batch lands in one memtable, so the whole group is then in tables
//     that every later iterator reads. A batch Pebble took whole as a
//     flushable batch reports no number: its chunk waits for the next
//     group's. A group whose batch never reached Pebble leaves nothing;
//     one whose commit failed stays (the store takes no more writes).
//   - A range deletion reaching into the documents (a drop) may hide keys
//     that the tables still hold: while its chunk is in the set, the set
//     answers "may hold" for every key in its range.
//   - The set is bounded (invariant "Unflushed set bounded"): it names at
//     most unflushedMaxKeys keys; a group whose keys would pass that is
//     marked overflowed, its further keys not named, and while any
//     overflowed chunk is in the set it answers "may hold" for every key
//     (the check seeks the memtables, as before the set) until a flush
//     writes that group to tables. Its Go memory stays under
//     unflushedMaxBytes (~12 MiB measured at the bound), part of the Go
//     heap that HeapLimit's headroom (a quarter of the cache, at least
//     256 MiB) covers: HeapLimit is left as it was, since a YCSB load's
//     set holds ~2 MiB per memtable and raising the limit would let the
//     heap grow where nothing needs it. TestUnflushedBounded measures it
//     at the bound.
//   - After a restart, Pebble's memtables may hold what it replayed from
//     its log, which no chunk names: the set answers "may hold" until a
//     flush has written everything below the first group this process
//     committed — except in a store this Open created, which held nothing.
//
// Builds with the invariants tag compare every "absent" answer with a seek
// of the group's batch and the memtables (Txn.PrefetchHas, Txn.Has).
// TestUnflushedKnown (randomized inserts, deletes, drops, flushes and
// restarts; seed printed), TestUnflushedChunks (the set's own rules).
type unflushed struct {
	// flushed is the highest sequence number a completed flush wrote to
	// a table (FlushEnd, on Pebble's flush goroutine).
	flushed atomic.Uint64
	// off, once set, turns the set off for good: something other than
	// the pipeline wrote to Pebble (ApplyReplicated, a restore).
	off atomic.Bool

	// The rest is the pipeline goroutine's alone.
	seed   maphash.Seed
	counts map[uint64]uint32 // hash of a document key → chunks naming it
	chunks []unflushedChunk  // in commit order; the first head are gone
	head   int
	free   [][]uint64 // gone chunks' slices, for reuse
	open   bool       // the last chunk is the group being applied
	ranges int        // range deletions of documents in the chunks
	noted  int        // hashes in the chunks (at most unflushedMaxKeys)
	// overflows counts the chunks that stopped naming their keys at
	// unflushedMaxKeys.
	overflows int
	// fresh: the store was created by this Open, so its memtables held
	// nothing the set does not name; base is the first sequence number
	// of the first group committed since Open (0 before).
	fresh bool
	base  uint64
	// skipped counts the keys answered from the tables alone (tests).
	skipped uint64
}

// unflushedChunk is one group's document keys.
type unflushedChunk struct {
	seq    uint64 // its batch's first sequence number; 0 until known
	hashes []uint64
	ranges [][2][]byte // range deletions reaching into the documents: [start, end)
	// overflow: the set was full, some of the group's keys are not named.
	overflow bool
}

// unflushedMaxKeys is the most document keys the set names at once, and
// unflushedMaxBytes a bound on its Go memory then (the counts map and the
// chunks' hashes, TestUnflushedBounded; ~45 bytes a key measured). A
// 64 MiB memtable holds ~28,000 of YCSB's 1 KB documents with their oplog
// entries and ~230,000 of 50-byte ones: the bound is met only by small
// documents with several memtables waiting to flush, whose later groups'
// checks then seek the memtables until a flush.
const unflushedMaxBytes = 24 << 20

var unflushedMaxKeys = 1 << 18

// maxSpareHashes is the largest hashes slice kept for reuse.
const maxSpareHashes = 1 << 15

func newUnflushed() *unflushed {
	return &unflushed{seed: maphash.MakeSeed(), counts: make(map[uint64]uint32)}
}

// flushEnd is Pebble's FlushEnd listener: it raises flushed to the
// highest sequence number the flush wrote. A failed flush, or one that
// wrote no table, raises nothing.
func (u *unflushed) flushEnd(info pebble.FlushInfo) {
	if info.Err != nil || info.Ingest {
		return
	}
	var top uint64
	for _, t := range info.Output {
		top = max(top, uint64(t.LargestSeqNum))
	}
	for {
		cur := u.flushed.Load()
		if top <= cur || u.flushed.CompareAndSwap(cur, top) {
			return
		}
	}
}

// note adds the document keys of a request's writes to the group's chunk.
func (u *unflushed) note(ops []op) {
	if !u.open {
		u.chunks = append(u.chunks, unflushedChunk{hashes: u.spare()})
		u.open = true
	}
	c := &u.chunks[len(u.chunks)-1]
	for _, o := range ops {
		if o.kind == opDeleteRange {
			if bytes.Compare(o.key, docSpaceEnd) < 0 && bytes.Compare(o.value, docSpace) > 0 {
				c.ranges = append(c.ranges, [2][]byte{bytes.Clone(o.key), bytes.Clone(o.value)})
				u.ranges++
			}
			continue
		}
		if len(o.key) > 0 && o.key[0] == SpaceDocument && !c.overflow {
			if u.noted >= unflushedMaxKeys {
				u.prune() // drop what flushes wrote since the last check
				c = &u.chunks[len(u.chunks)-1]
			}
			if u.noted >= unflushedMaxKeys {
				c.overflow = true
				u.overflows++
				continue
			}
			h := maphash.Bytes(u.seed, o.key)
			u.counts[h]++
			c.hashes = append(c.hashes, h)
			u.noted++
		}
	}
}

// spare is a hashes slice to reuse, if a gone chunk left one.
func (u *unflushed) spare() []uint64 {
	if n := len(u.free); n > 0 {
		h := u.free[n-1]
		u.free = u.free[:n-1]
		return h
	}
	return nil
}

// committed closes the group's chunk: its batch is in Pebble from seq on
// (0: Pebble did not say, a flushable batch).
func (u *unflushed) committed(seq uint64) {
	if !u.open {
		return
	}
	u.open = false
	u.chunks[len(u.chunks)-1].seq = seq
	if seq == 0 {
		return
	}
	if u.base == 0 {
		u.base = seq
	}
	// Earlier chunks Pebble gave no number to are below this one.
	for i := len(u.chunks) - 2; i >= u.head && u.chunks[i].seq == 0; i-- {
		u.chunks[i].seq = seq
	}
}

// discarded drops the group's chunk: its batch never reached Pebble.
func (u *unflushed) discarded() {
	if !u.open {
		return
	}
	u.open = false
	u.forget(&u.chunks[len(u.chunks)-1])
	u.chunks = u.chunks[:len(u.chunks)-1]
}

func (u *unflushed) forget(c *unflushedChunk) {
	for _, h := range c.hashes {
		if n := u.counts[h]; n > 1 {
			u.counts[h] = n - 1
		} else {
			delete(u.counts, h)
		}
	}
	u.ranges -= len(c.ranges)
	u.noted -= len(c.hashes)
	if c.overflow {
		u.overflows--
	}
	if len(u.free) < 4 && cap(c.hashes) <= maxSpareHashes {
		u.free = append(u.free, c.hashes[:0])
	}
	*c = unflushedChunk{}
}

// prune drops the chunks of groups a completed flush wrote to tables, and
// reports whether the set answers for keys at all ("armed"): not after a
// restart before everything Pebble replayed is flushed, nor once turned
// off.
func (u *unflushed) prune() bool {
	flushed := u.flushed.Load()
	for u.head < len(u.chunks) {
		c := &u.chunks[u.head]
		if c.seq == 0 || c.seq > flushed {
			break
		}
		u.forget(c)
		u.head++
	}
	switch {
	case u.head == len(u.chunks):
		u.chunks, u.head = u.chunks[:0], 0
	case u.head > 64 && u.head > len(u.chunks)/2:
		n := copy(u.chunks, u.chunks[u.head:])
		clear(u.chunks[n:])
		u.chunks, u.head = u.chunks[:n], 0
	}
	if u.off.Load() {
		return false
	}
	return u.fresh || u.base != 0 && flushed+1 >= u.base
}

// mayHold reports whether key may be in the group's batch or a memtable;
// armed is prune's answer. Keys of other keyspaces always may.
func (u *unflushed) mayHold(key []byte, armed bool) bool {
	if !armed || len(key) == 0 || key[0] != SpaceDocument || u.overflows > 0 {
		return true
	}
	if _, ok := u.counts[maphash.Bytes(u.seed, key)]; ok {
		return true
	}
	if u.ranges > 0 && u.inRange(key) {
		return true
	}
	u.skipped++
	return false
}

// inRange reports whether an unflushed range deletion covers key.
func (u *unflushed) inRange(key []byte) bool {
	for i := u.head; i < len(u.chunks); i++ {
		for _, r := range u.chunks[i].ranges {
			if bytes.Compare(key, r[0]) >= 0 && bytes.Compare(key, r[1]) < 0 {
				return true
			}
		}
	}
	return false
}
