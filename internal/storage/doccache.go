package storage

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"

	"github.com/cairndb/cairn/internal/invariants"
)

// The document cache: copies of stored documents (SpaceDocument keys) in
// front of Pebble's Get, for point reads of the latest committed state
// ([DB.Get] only). A point read that hits it copies the document from one
// shard's entry instead of searching Pebble's memtables and tables (about
// 17,600 instructions a read, BENCHMARKS.md "A point read's instructions
// against the protocol floor's"). Its invariants ("Document cache exact",
// "Document cache bounded") are in doc.go.

const (
	// docCacheShards is the number of independently locked shards: a hit
	// holds its shard's mutex for a map lookup and one copy.
	docCacheShards = 64
	// docEntryOverhead is what an entry costs beyond its bytes' allocation:
	// its slot (40 bytes) and its index entry (a map slot, ~24 bytes).
	docEntryOverhead = 64
	// maxDocCacheSize caps the default share: past a gigabyte of hot
	// documents the block cache (compressed blocks, indexes and filters
	// for every document) serves a cache budget better than more copies,
	// and the Go collector marks every entry of this cache each cycle.
	maxDocCacheSize = 1 << 30
	// maxCachedDoc is the largest document (value) cached: a Pebble Get's
	// fixed cost is what a hit saves, which a large document's copy
	// outweighs, and one large document would evict many small ones.
	maxCachedDoc = 64 << 10
)

// DefaultDocumentCacheSize is the document cache's share of a cache of
// cacheSize bytes (Options.CacheSize): an eighth, at most 1 GiB. It is
// taken out of Pebble's block cache, not added to it, so the process's
// memory stays within the configured cache plus the same bounded overhead.
func DefaultDocumentCacheSize(cacheSize int64) int64 {
	return min(cacheSize/8, maxDocCacheSize)
}

// docCache is the document cache. A nil *docCache is no cache.
type docCache struct {
	seed     maphash.Seed
	capacity int64
	maxEntry int // the largest value cached
	shards   [docCacheShards]docShard
}

// docShard is one shard: an index from a key's 64-bit hash to a slot, and
// the slots a CLOCK hand sweeps for eviction. Everything under mu.
type docShard struct {
	mu       sync.Mutex
	index    map[uint64]int32
	slots    []docSlot
	free     []int32 // indexes of empty slots
	hand     int
	bytes    int64 // charged: each entry's allocation plus docEntryOverhead
	capacity int64
	stats    docCacheCounts
	_        [64]byte // keeps neighbouring shards' mutexes off one cache line
}

// docSlot is one entry: the key's bytes then the document's, in one
// pointer-free allocation (the collector marks it without scanning it).
type docSlot struct {
	data []byte // nil: an empty slot
	hash uint64
	klen int32
	ref  bool // CLOCK's bit: set by a hit, cleared by the passing hand
}

// docCacheCounts are a shard's counters (DocumentCacheStats sums them).
type docCacheCounts struct {
	hits, misses, evictions, invalidations, refused, raced int64
}

func newDocCache(capacity int64) *docCache {
	c := &docCache{seed: maphash.MakeSeed(), capacity: capacity}
	per := capacity / docCacheShards
	c.maxEntry = int(min(per/4, maxCachedDoc))
	for i := range c.shards {
		c.shards[i].capacity = per
		c.shards[i].index = map[uint64]int32{}
	}
	return c
}

func (c *docCache) hash(key []byte) uint64 { return maphash.Bytes(c.seed, key) }

// shard is the shard of a key of hash h (its top bits; the index uses all).
func (c *docCache) shard(h uint64) *docShard { return &c.shards[h>>58] }

// get appends key's cached document to dst; ok is false on a miss.
func (c *docCache) get(dst, key []byte, h uint64) (out []byte, ok bool) {
	s := c.shard(h)
	s.mu.Lock()
	if i, found := s.index[h]; found {
		sl := &s.slots[i]
		if string(sl.data[:sl.klen]) == string(key) {
			sl.ref = true
			dst = append(dst, sl.data[sl.klen:]...)
			s.stats.hits++
			s.mu.Unlock()
			return dst, true
		}
	}
	s.stats.misses++
	s.mu.Unlock()
	return dst, false
}

// install caches val as key's document, read from Pebble after gen was
// seen (even) — unless gen has moved since: a change became visible, or
// is being applied, after the read began, so val may be older than the
// store (invariant "Document cache exact"). The check and the insert are
// one critical section of the shard that invalidate's drop also takes.
func (c *docCache) install(key, val []byte, h uint64, gen *atomic.Uint64, seen uint64) {
	s := c.shard(h)
	if len(val) > c.maxEntry {
		s.mu.Lock()
		s.stats.refused++
		s.mu.Unlock()
		return
	}
	// Outside the lock; Grow rounds the capacity up to the allocation's
	// size class, which is what the entry is charged.
	data := slices.Grow([]byte(nil), len(key)+len(val))
	data = append(append(data, key...), val...)
	charge := int64(cap(data)) + docEntryOverhead
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen.Load() != seen {
		s.stats.raced++
		return
	}
	if charge > s.capacity {
		s.stats.refused++ // a long key in a small shard
		return
	}
	if i, found := s.index[h]; found {
		s.remove(i) // the same key (another reader installed it) or a colliding one
	}
	for s.bytes+charge > s.capacity && len(s.index) > 0 {
		s.evict()
	}
	var i int32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
	} else {
		i = int32(len(s.slots))
		s.slots = append(s.slots, docSlot{})
	}
	s.slots[i] = docSlot{data: data, hash: h, klen: int32(len(key))}
	s.index[h] = i
	s.bytes += charge
}

// remove empties slot i.
func (s *docShard) remove(i int32) {
	sl := &s.slots[i]
	delete(s.index, sl.hash)
	s.bytes -= int64(cap(sl.data)) + docEntryOverhead
	*sl = docSlot{}
	s.free = append(s.free, i)
}

// evict removes one entry by CLOCK: the hand clears the bits of entries
// hit since it last passed and takes the first entry without one. It
// ends within two sweeps (the first clears every bit); the shard holds at
// least one entry.
func (s *docShard) evict() {
	for {
		if s.hand >= len(s.slots) {
			s.hand = 0
		}
		sl := &s.slots[s.hand]
		i := int32(s.hand)
		s.hand++
		switch {
		case sl.data == nil:
		case sl.ref:
			sl.ref = false
		default:
			s.remove(i)
			s.stats.evictions++
			return
		}
	}
}

// drop forgets key's entry, if any.
func (c *docCache) drop(key []byte) {
	h := c.hash(key)
	s := c.shard(h)
	s.mu.Lock()
	if i, found := s.index[h]; found {
		if sl := &s.slots[i]; string(sl.data[:sl.klen]) == string(key) {
			s.remove(i)
			s.stats.invalidations++
		}
	}
	s.mu.Unlock()
}

// clear forgets every entry (none on a nil cache).
func (c *docCache) clear() {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.stats.invalidations += int64(len(s.index))
		clear(s.index)
		clear(s.slots) // the documents go to the collector
		s.slots, s.free, s.hand, s.bytes = s.slots[:0], s.free[:0], 0, 0
		s.mu.Unlock()
	}
}

// docSpaceEnd is the first key past SpaceDocument's keyspace.
var docSpace, docSpaceEnd = []byte{SpaceDocument}, []byte{SpaceDocument + 1}

// invalidate drops, before a batch is applied to Pebble, the entry of
// every document key the batch writes (set, delete, single delete,
// merge), and every entry when it deletes a range reaching into the
// documents or holds a record of another kind (range keys, which Cairn
// does not write) or cannot be read. A nil or empty repr, or a nil
// cache, drops nothing.
func (c *docCache) invalidate(repr []byte) {
	if c == nil || len(repr) == 0 {
		return
	}
	for r := batchrepr.Read(repr); ; {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			c.clear()
			return
		}
		if !ok {
			return
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
			pebble.InternalKeyKindMerge, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindSetWithDelete:
			if len(k) > 0 && k[0] == SpaceDocument {
				c.drop(k)
			}
		case pebble.InternalKeyKindLogData:
		case pebble.InternalKeyKindRangeDelete:
			if bytes.Compare(k, docSpaceEnd) < 0 && bytes.Compare(v, docSpace) > 0 {
				c.clear() // a collection dropped or emptied: rare
				return
			}
		default:
			c.clear()
			return
		}
	}
}

// DocumentCacheStats describe the document cache.
type DocumentCacheStats struct {
	Capacity  int64 // configured bytes (0: no cache)
	Size      int64 // bytes charged: entries' allocations and overhead
	Entries   int64
	Hits      int64
	Misses    int64
	Evictions int64
	// Invalidations are entries dropped because a write changed (or
	// might have changed) their document.
	Invalidations int64
	// Refused are documents read from Pebble but not cached for their
	// size (Options.DocumentCacheSize's shard share, or 64 KiB).
	Refused int64
	// Raced are documents read from Pebble but not cached because a
	// change became visible during the read.
	Raced int64
}

// DocumentCacheStats reports the document cache's size and use.
func (db *DB) DocumentCacheStats() DocumentCacheStats {
	c := db.visible.docs
	if c == nil {
		return DocumentCacheStats{}
	}
	st := DocumentCacheStats{Capacity: c.capacity}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Size += s.bytes
		st.Entries += int64(len(s.index))
		st.Hits += s.stats.hits
		st.Misses += s.stats.misses
		st.Evictions += s.stats.evictions
		st.Invalidations += s.stats.invalidations
		st.Refused += s.stats.refused
		st.Raced += s.stats.raced
		s.mu.Unlock()
	}
	return st
}

// testBeforeInstall, when a test sets it, runs between a miss's Pebble
// read and its install (TestDocumentCacheInstallRace).
var testBeforeInstall func(key []byte)

// getCached is DB.Get of a document key through the cache c.
func (db *DB) getCached(c *docCache, dst, key []byte) ([]byte, bool, error) {
	h := c.hash(key)
	var before uint64
	if invariants.Enabled {
		before = db.visible.gen.Load()
	}
	if out, ok := c.get(dst, key, h); ok {
		if invariants.Enabled {
			db.checkCachedHit(key, out[len(dst):], before)
		}
		return out, true, nil
	}
	// gen before the read: install refuses the value if any change began
	// since (or was under way: an odd gen is never seen again).
	seen := db.visible.gen.Load()
	out, found, err := get(db.pdb, dst, key)
	if testBeforeInstall != nil {
		testBeforeInstall(key)
	}
	if found && err == nil && seen%2 == 0 {
		c.install(key, out[len(dst):], h, &db.visible.gen, seen)
	}
	return out, found, err
}

// checkCachedHit fails invariant "Document cache exact" when a hit
// differs from what Pebble holds for key, nothing having become visible
// since before the hit (gen even and unchanged across the hit and the
// check's read). Invariants builds only.
func (db *DB) checkCachedHit(key, hit []byte, before uint64) {
	want, found, err := get(db.pdb, nil, key)
	if err != nil || before%2 == 1 || db.visible.gen.Load() != before {
		return // a change came between: nothing to compare
	}
	if !found {
		invariants.Fail("Document cache exact", "key %x: the cache had %d bytes, Pebble holds no document", key, len(hit))
	}
	if !bytes.Equal(want, hit) {
		invariants.Fail("Document cache exact", "key %x: the cache had %d bytes that differ from Pebble's %d", key, len(hit), len(want))
	}
}
