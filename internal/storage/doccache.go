package storage

import (
	"bytes"
	"encoding/binary"
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
//
// Entries live in slabs: each shard appends them to a few large byte
// segments (a segmented ring, as freecache's), so the collector sees a
// handful of pointer-free objects per shard, never marks an entry, and an
// install allocates nothing once its shard's segments exist (BENCHMARKS.md
// "Document cache entries in slabs": with one Go object per entry, each
// collection marked every entry, ~220 ms of mark CPU with 100,000
// documents cached against ~10 ms in slabs). The index maps a key's hash
// to its entry's segment and offset (pointer-free too). Eviction reclaims
// the oldest segment in place: the entries hit since it was last
// reclaimed (CLOCK's bit) are slid to its front with the bit cleared —
// their second chance —, the others are forgotten, and the segment
// becomes the newest, appended to after the entries it kept.
//
// A write's invalidation does not forget an entry: it marks it stale
// (a bit in its header; a read of it is a miss) and the index keeps its
// slot for the key. An install of a document whose entry is there, stale
// or not (a group's commit refreshing what it set: changeRefreshing; a
// reader's miss after a write), rewrites the value in the entry's slot
// when it fits (its span), so updating the same documents over and over
// appends nothing to the ring and the segments stay as many as the
// documents need (invariant "Refresh in place", doc.go); only a document
// cached for the first time, or one grown past its slot, appends — the
// grown one with an eighth more room, so a document that keeps growing
// moves once every few updates, not at each. A reclaim forgets the stale
// entries of its segment.

const (
	// docCacheShards is the number of independently locked shards: a hit
	// holds its shard's mutex for a map lookup and one copy.
	docCacheShards = 64
	// maxDocSegments is the most segments a shard has: reclaiming one
	// moves at most a 64th of the shard (the entries kept), and an
	// install that leaves a segment's tail unused wastes less than one
	// entry of a segment. Small segments also keep what a shard allocates
	// near what it holds (segments are allocated as it fills, whole): at
	// the default gigabyte, a shard's first segment was 896 KiB with 16
	// (56 MiB over the 64 shards before a document was cached), 326 KiB
	// with 64, as the largest entry four times over bounds it
	// (BENCHMARKS.md "The soak's memory, counted").
	maxDocSegments = 64
	// docEntryHeader is an entry's header in its segment: the key's
	// hash (8 bytes), the key's length with CLOCK's bit on top (4), the
	// document's length (4), the entry's span (4: the bytes its slot
	// takes in the segment, header included, at least the header, key
	// and document); the key and the document follow, then the slot's
	// unused room, if any.
	docEntryHeader = 20
	// docRefBit is CLOCK's bit in the header's key length: set by a hit,
	// cleared when its segment is reclaimed.
	docRefBit = 1 << 31
	// docStaleBit, in the header's key length too, marks an entry a
	// write invalidated: not served, its slot kept for the key's next
	// install. docKeyLen masks both bits off (a key is shorter than a
	// segment, at most 1 GiB).
	docStaleBit = 1 << 30
	docKeyLen   = docStaleBit - 1
	// docIndexOverhead is what an entry costs in the index: a Go map
	// slot of a uint64 key and value is 16 bytes and a control byte,
	// ~19 at the map's full load, ~39 just after a table doubled.
	docIndexOverhead = 40
	// maxDocCacheSize caps the default share: past a gigabyte of hot
	// documents the block cache (compressed blocks, indexes and filters
	// for every document) serves a cache budget better than more copies.
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

// docShard is one shard: an index from a key's 64-bit hash to its entry,
// and the segments holding the entries. Everything under mu.
type docShard struct {
	mu sync.Mutex
	// index maps a hash to its entry's location: the segment's number
	// times 2^32 plus the entry's offset in it.
	index map[uint64]uint64
	// segs are the segments, allocated when first needed (nil before):
	// each a []byte of capacity segSize whose length is what its entries
	// take, one after another.
	segs    [maxDocSegments][]byte
	nsegs   int   // segments in the ring: segs[:nsegs]
	segSize int   // each segment's capacity
	head    int   // the segment appended to; head+1 (mod nsegs) is the oldest
	alloc   int64 // bytes of the segments allocated
	// bytes is what the shard is charged: its segments' allocations plus
	// docIndexOverhead an entry (invariant "Document cache bounded").
	bytes    int64
	capacity int64
	stale    int // entries of the index marked stale
	stats    docCacheCounts
	_        [64]byte // keeps neighbouring shards' mutexes off one cache line
}

// docCacheCounts are a shard's counters (DocumentCacheStats sums them).
type docCacheCounts struct {
	hits, misses, evictions, invalidations, refused, raced, refreshed int64
}

func newDocCache(capacity int64) *docCache {
	c := &docCache{seed: maphash.MakeSeed(), capacity: capacity}
	per := capacity / docCacheShards
	c.maxEntry = int(min(per/4, maxCachedDoc))
	// An eighth of the share is left to the index; the rest is split
	// into segments that each hold the largest entry (a document of
	// maxEntry bytes and a key of a quarter of that) four times over
	// when the share allows, and at least once (two segments when they
	// can, so that a reclaim does not empty the whole shard).
	ring := per - per/8
	largest := int64(docEntryHeader + c.maxEntry + c.maxEntry/4)
	n := max(min(ring/(4*largest), maxDocSegments), min(ring/largest, 2), 1)
	size := segmentSize(int(min(ring/n, 1<<30)))
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = per
		s.nsegs = int(n)
		s.head = s.nsegs - 1 // the first install advances to segment 0
		s.segSize = size
		s.index = map[uint64]uint64{}
	}
	return c
}

// segmentSize is a segment's size near want whose allocation is exactly
// that size, so that a shard's charge is what it allocated: a multiple
// of the runtime's 8 KiB page for a large one, the size class want
// rounds up to for a small one.
func segmentSize(want int) int {
	if want > 32<<10 {
		return want &^ (8<<10 - 1)
	}
	return cap(slices.Grow([]byte(nil), max(want, 1)))
}

func (c *docCache) hash(key []byte) uint64 { return maphash.Bytes(c.seed, key) }

// shard is the shard of a key of hash h (its top bits; the index uses all).
func (c *docCache) shard(h uint64) *docShard { return &c.shards[h>>58] }

// docLoc is an entry's location in the index.
func docLoc(seg, off int) uint64 { return uint64(seg)<<32 | uint64(off) }

// entry returns the entry at loc: its header (the key's length and
// CLOCK's bit at 8, the document's length at 12, the span at 16), its key
// and its document.
func (s *docShard) entry(loc uint64) (hdr []byte, key, val []byte) {
	b := s.segs[loc>>32][uint32(loc):]
	kw := binary.LittleEndian.Uint32(b[8:])
	kl := int(kw & docKeyLen)
	vl := int(binary.LittleEndian.Uint32(b[12:]))
	return b[:docEntryHeader], b[docEntryHeader : docEntryHeader+kl], b[docEntryHeader+kl : docEntryHeader+kl+vl]
}

// entrySpan is the span of the entry whose header is hdr.
func entrySpan(hdr []byte) int { return int(binary.LittleEndian.Uint32(hdr[16:])) }

// get appends key's cached document to dst; ok is false on a miss.
func (c *docCache) get(dst, key []byte, h uint64) (out []byte, ok bool) {
	s := c.shard(h)
	s.mu.Lock()
	if loc, found := s.index[h]; found {
		hdr, k, v := s.entry(loc)
		if string(k) == string(key) && hdr[11]&(docStaleBit>>24) == 0 {
			hdr[11] |= docRefBit >> 24 // the key length's top byte
			dst = append(dst, v...)
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
	n := docEntryHeader + len(key) + len(val)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(val) > c.maxEntry || n > s.segSize {
		s.stats.refused++ // a large document, or a long key in a small shard
		return
	}
	if gen.Load() != seen {
		s.stats.raced++
		return
	}
	span := n
	if loc, found := s.index[h]; found {
		hdr, k, _ := s.entry(loc)
		kw := binary.LittleEndian.Uint32(hdr[8:])
		stale := kw&docStaleBit != 0
		if string(k) == string(key) && n <= entrySpan(hdr) {
			// The same key, its new value fitting the slot: rewritten in
			// place (invariant "Refresh in place"), fresh, CLOCK's bit
			// kept.
			binary.LittleEndian.PutUint32(hdr[8:], kw&^docStaleBit)
			binary.LittleEndian.PutUint32(hdr[12:], uint32(len(val)))
			copy(s.segs[loc>>32][uint32(loc)+docEntryHeader+uint32(len(key)):], val)
			if stale {
				s.stale--
			}
			s.stats.refreshed++
			return
		}
		if string(k) == string(key) {
			// Grown past its slot: appended with an eighth more room
			// (within a segment), its old bytes unreachable until their
			// segment is reclaimed.
			span = min(n+len(val)/8, s.segSize)
		} else if !stale {
			s.stats.evictions++ // a colliding key: replaced
		}
		if stale {
			s.stale--
		}
		delete(s.index, h)
	}
	// Room for the index entry, then for the entry in the head segment:
	// each reclaim clears CLOCK's bit of every entry it keeps, and no hit
	// can set one while the lock is held, so within one turn of the ring
	// every bit is clear, and the next reclaim empties its segment.
	for tries := 0; ; tries++ {
		if tries > 2*s.nsegs+1 {
			s.stats.refused++ // not reached: the ring turned twice
			s.charge()
			return
		}
		if s.alloc+int64(len(s.index)+1)*docIndexOverhead > s.capacity {
			s.advance()
			continue
		}
		if seg := s.segs[s.head]; seg == nil || cap(seg)-len(seg) < span {
			s.advance()
			continue
		}
		break
	}
	seg := s.segs[s.head]
	off := len(seg)
	seg = binary.LittleEndian.AppendUint64(seg, h)
	seg = binary.LittleEndian.AppendUint32(seg, uint32(len(key)))
	seg = binary.LittleEndian.AppendUint32(seg, uint32(len(val)))
	seg = binary.LittleEndian.AppendUint32(seg, uint32(span))
	seg = append(append(seg, key...), val...)
	s.segs[s.head] = seg[:off+span] // the slot's room past the value: within cap, checked above
	s.index[h] = docLoc(s.head, off)
	s.charge()
}

// charge recomputes the shard's charged bytes.
func (s *docShard) charge() {
	s.bytes = s.alloc + int64(len(s.index))*docIndexOverhead
	if invariants.Enabled && s.bytes > s.capacity {
		invariants.Fail("Document cache bounded", "a shard charged %d bytes, its share %d", s.bytes, s.capacity)
	}
}

// advance makes the oldest segment the head: a segment not allocated yet
// is allocated if the share has room for it (with the index as it is and
// one more entry), and passed over if not; an allocated one is reclaimed.
func (s *docShard) advance() {
	s.head++
	if s.head == s.nsegs {
		s.head = 0
	}
	if s.segs[s.head] == nil {
		if s.alloc+int64(s.segSize)+int64(len(s.index)+1)*docIndexOverhead <= s.capacity {
			s.segs[s.head] = make([]byte, 0, s.segSize)
			s.alloc += int64(s.segSize)
		}
		return
	}
	s.reclaim(s.head)
}

// reclaim empties segment i but for the entries hit since it was last
// reclaimed, which it slides to the segment's front with their slots,
// clearing their bit. An entry is live when the index still points at it
// (a dropped or replaced entry's bytes stay where they were until now).
func (s *docShard) reclaim(i int) {
	b := s.segs[i]
	w := 0
	for r := 0; r < len(b); {
		h := binary.LittleEndian.Uint64(b[r:])
		kw := binary.LittleEndian.Uint32(b[r+8:])
		n := entrySpan(b[r:])
		if loc, ok := s.index[h]; ok && loc == docLoc(i, r) {
			if kw&docStaleBit != 0 {
				delete(s.index, h) // invalidated already: its slot goes
				s.stale--
			} else if kw&docRefBit != 0 {
				copy(b[w:], b[r:r+n])
				binary.LittleEndian.PutUint32(b[w+8:], kw&^docRefBit)
				s.index[h] = docLoc(i, w)
				w += n
			} else {
				delete(s.index, h)
				s.stats.evictions++
			}
		}
		r += n
	}
	s.segs[i] = b[:w]
}

// drop invalidates key's entry, if any: marked stale, no read serves it,
// its slot kept for the key's next install (a reclaim forgets it).
func (c *docCache) drop(key []byte) { c.dropHashed(key, c.hash(key)) }

// dropHashed is drop of key, whose hash is h; it reports whether a fresh
// entry was invalidated.
func (c *docCache) dropHashed(key []byte, h uint64) bool {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if loc, found := s.index[h]; found {
		hdr, k, _ := s.entry(loc)
		if kw := binary.LittleEndian.Uint32(hdr[8:]); string(k) == string(key) && kw&docStaleBit == 0 {
			binary.LittleEndian.PutUint32(hdr[8:], kw|docStaleBit)
			s.stale++
			s.stats.invalidations++
			return true
		}
	}
	return false
}

// clear forgets every entry (none on a nil cache) and releases the
// segments.
func (c *docCache) clear() {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.stats.invalidations += int64(len(s.index) - s.stale)
		clear(s.index)
		s.stale = 0
		clear(s.segs[:])
		s.head, s.alloc = s.nsegs-1, 0
		s.charge()
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
	Entries   int64 // documents cached, not counting stale entries
	Hits      int64
	Misses    int64
	Evictions int64
	// Invalidations are entries marked stale (no longer served) because
	// a write changed (or might have changed) their document, or dropped
	// by a clear.
	Invalidations int64
	// Refused are documents read from Pebble but not cached for their
	// size (Options.DocumentCacheSize's shard share, or 64 KiB).
	Refused int64
	// Raced are documents read from Pebble but not cached because a
	// change became visible during the read.
	Raced int64
	// Refreshed are installs of a document already cached whose new
	// value was written over the old one in its slot (invariant "Refresh
	// in place"): a group's commit refreshing what it set, mostly.
	Refreshed int64
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
		st.Entries += int64(len(s.index) - s.stale)
		st.Hits += s.stats.hits
		st.Misses += s.stats.misses
		st.Evictions += s.stats.evictions
		st.Invalidations += s.stats.invalidations
		st.Refused += s.stats.refused
		st.Raced += s.stats.raced
		st.Refreshed += s.stats.refreshed
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
	// Pebble may keep the key it is given: a miss gives it a copy, so a
	// hit's caller may hold key on its stack (GetDocument).
	k := bytes.Clone(key)
	out, found, err := get(db.pdb, dst, k)
	if testBeforeInstall != nil {
		testBeforeInstall(k)
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

// Invariant "Group reads through the cache": on a standalone store, a
// pipeline request's Get of a document key that neither the request's
// own writes nor an earlier applied request of its group covers is the
// value the store holds, since the pipeline is the only writer that makes
// changes visible and applies one group after the last one became
// visible; so it is served from the document cache when the cache holds
// the key (a hit is the store's value: "Document cache exact"), without
// Pebble's Get through the group's batch. The group's written document
// keys are kept as the cache's hashes (flight.docWrites: a colliding
// hash only sends a read to the batch) and a range deletion reaching
// into the documents stops cached reads for the rest of the group. Not
// for a transaction's statement (its own view) nor a replica set
// member's groups. Builds with the invariants tag compare every hit with
// the batch's Get. TestGroupReadsThroughCache.

// getCached is Get of document key through the cache, for a key the
// request's own writes do not decide (Txn.Get): ok is false when the
// group wrote the key (or a range of documents), when a change is under
// way (a checkpoint restore), or on a miss — the caller reads the batch.
// A miss installs nothing (the request is about to rewrite the
// document); it notes the key for the group's commit to cache its new
// value (flight.refresh).
func (t *Txn) getCached(dst, key []byte) ([]byte, bool) {
	f, v := t.flight, t.docs
	if f.docRange {
		return dst, false
	}
	c := v.docs
	h := c.hash(key)
	if _, wrote := f.docWrites[h]; wrote {
		return dst, false
	}
	g := v.gen.Load()
	if g%2 == 1 {
		return dst, false
	}
	out, ok := c.get(dst, key, h)
	if !ok {
		// A document the request reads, and then rewrites: the group's
		// commit caches its new value (changeRefreshing), so the next
		// read of it, or its next update's, hits.
		f.refresh[h] = 0
	}
	if ok && invariants.Enabled {
		want, found, err := get(t.batch, nil, key)
		if err == nil && v.gen.Load() == g && (!found || !bytes.Equal(want, out[len(dst):])) {
			invariants.Fail("Group reads through the cache", "key %x: the cache had %d bytes, the group's batch reads %d (found %v)", key, len(out)-len(dst), len(want), found)
		}
	}
	return out, ok
}

// noteDocWrites adds the document keys of the request's writes, which
// just joined the group's batch, to the group's (flight.docWrites).
func (t *Txn) noteDocWrites(f *flight) {
	c := t.docs.docs
	for _, o := range t.ops {
		switch o.kind {
		case opDeleteRange:
			if bytes.Compare(o.key, docSpaceEnd) < 0 && bytes.Compare(o.value, docSpace) > 0 {
				f.docRange = true
			}
		default:
			if len(o.key) > 0 && o.key[0] == SpaceDocument {
				f.docWrites[c.hash(o.key)] = struct{}{}
			}
		}
	}
}

// refreshSet is the flight's set for the documents its commit refreshes
// (changeRefreshing): those its requests read through the cache and
// missed; nil without cached reads (applier).
func (f *flight) refreshSet() map[uint64]uint32 {
	if f.docWrites == nil {
		return nil
	}
	return f.refresh
}

// changeRefreshing is change for a group's commit that keeps the cache
// warm (invariant "Document cache exact" holds as for change): refresh
// holds the documents the group's requests read and missed (getCached;
// none for a replicated group's apply, applyRefreshSet), the entries the
// batch drops are added to it, and once the batch is applied and gen even
// again, the documents among them whose last record in the batch is a set
// are installed with that record's value, through install's check that
// no change began since. Only the last: a batch may set a document twice
// (two requests of a group updating it, a request setting it twice), and
// installing each version in turn served the earlier one from the cache
// for a moment after the later one was visible (a reader could read the
// later one from Pebble, then the earlier one: TestDocumentCacheNeverStale,
// whose writers set a key twice in one request). So a document updated is
// cached afterwards (a load's inserts, which read nothing, are not): a
// read after an update, and the next update's read of it in the pipeline,
// hit. A nil refresh is change.
func (v *visibility) changeRefreshing(repr []byte, apply func() error, refresh map[uint64]uint32) error {
	if refresh == nil || v.docs == nil {
		return v.change(repr, apply)
	}
	v.gen.Add(1)
	whole := v.docs.invalidateNoting(repr, refresh)
	err := apply()
	g := v.gen.Add(1)
	if err == nil && whole && len(refresh) > 0 {
		v.docs.refresh(repr, refresh, &v.gen, g)
	}
	return err
}

// applyRefreshSet is ApplyReplicated's refresh set for changeRefreshing:
// empty, so that the apply refreshes the documents it sets whose entries
// were fresh before it (invalidateNoting notes them), and no other — a
// member's groups read nothing through the cache, and a document no one
// read stays uncached, as a standalone's inserts do. Nil without a cache.
// One map serves every group (ApplyReplicated runs one at a time), as a
// flight's does (clearedKeys).
func (db *DB) applyRefreshSet() map[uint64]uint32 {
	if db.visible.docs == nil {
		return nil
	}
	if db.applyNoted = clearedKeys(db.applyNoted); db.applyNoted == nil {
		db.applyNoted = make(map[uint64]uint32)
	}
	return db.applyNoted
}

// invalidateNoting is invalidate that notes, for refresh, the documents
// to cache again: the hash of every document key a set record dropped a
// fresh entry of is added to noted, and every noted hash is mapped to the
// number of the last record of its key in repr (counting from 1; 0 for a
// key noted that repr does not write). whole is false when it dropped
// every entry (a range of documents, a record of another kind) and noted
// is not to be refreshed.
func (c *docCache) invalidateNoting(repr []byte, noted map[uint64]uint32) (whole bool) {
	if len(repr) == 0 {
		return true
	}
	var n uint32
	for r := batchrepr.Read(repr); ; {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			c.clear()
			return false
		}
		if !ok {
			return true
		}
		n++
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
			pebble.InternalKeyKindMerge, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindSetWithDelete:
			if len(k) > 0 && k[0] == SpaceDocument {
				h := c.hash(k)
				dropped := c.dropHashed(k, h)
				if _, was := noted[h]; was || dropped && kind == pebble.InternalKeyKindSet {
					noted[h] = n
				}
			}
		case pebble.InternalKeyKindLogData:
		case pebble.InternalKeyKindRangeDelete:
			if bytes.Compare(k, docSpaceEnd) < 0 && bytes.Compare(v, docSpace) > 0 {
				c.clear()
				return false
			}
		default:
			c.clear()
			return false
		}
	}
}

// refresh installs the value of every document set record of repr that
// is the last record of a noted key (invalidateNoting's numbers), as the
// store holds it at gen seen (the batch applied, no change since: install
// checks it). A key whose last record deletes it stays dropped.
func (c *docCache) refresh(repr []byte, noted map[uint64]uint32, gen *atomic.Uint64, seen uint64) {
	var n uint32
	for r := batchrepr.Read(repr); ; {
		kind, k, v, ok, err := r.Next()
		if err != nil || !ok {
			return
		}
		n++
		if kind != pebble.InternalKeyKindSet || len(k) == 0 || k[0] != SpaceDocument {
			continue
		}
		if h := c.hash(k); noted[h] == n {
			c.install(k, v, h, gen, seen)
		}
	}
}
