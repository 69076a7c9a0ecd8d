package storage

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// minCacheSize is the smallest default block cache (WiredTiger's 256 MB).
const minCacheSize = 256 << 20

// DefaultCacheSize is the block cache a machine with total bytes of memory
// gets by default: as WiredTiger's cache, the larger of half of (memory − 1
// GiB) and 256 MiB. total 0 (unknown) gives the minimum.
func DefaultCacheSize(total int64) int64 {
	return max((total-1<<30)/2, minCacheSize)
}

// MachineMemory is the machine's total memory in bytes (MemTotal of
// /proc/meminfo), or 0 where it cannot be read.
func MachineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// CacheStats describe the cache: the block cache and the document cache.
type CacheStats struct {
	Capacity int64 // configured bytes, both caches'
	Size     int64 // bytes in use, both caches'
	Hits     int64 // the block cache's
	Misses   int64 // the block cache's
}

// CacheStats reports the cache's size and the block cache's use.
func (db *DB) CacheStats() CacheStats {
	m := db.pdb.Metrics().BlockCache
	return CacheStats{Capacity: db.opts.CacheSize, Size: m.Size + db.DocumentCacheStats().Size, Hits: m.Hits, Misses: m.Misses}
}

// minHeapLimit is the smallest Go memory limit HeapLimit gives.
const minHeapLimit = 256 << 20

// HeapLimit is the soft limit on the Go runtime's memory
// (runtime/debug.SetMemoryLimit) that `cairn serve` sets for a block cache
// of cacheSize bytes unless GOMEMLIMIT is set: a quarter of the cache, at
// least 256 MiB, plus the cache itself in builds where Pebble allocates it
// on the Go heap (without cgo, and in race builds). With cgo, the block
// cache and the memtables it reserves are C memory, outside the limit.
//
// Without a limit the garbage collector lets the heap grow to twice what
// is live (GOGC 100) whatever the cache size, so a batched load (sixteen
// 1,000-document inserts in flight, their parsed copies, oplog entries and
// commit groups) took the process 600 MiB past a 256 MiB cache. With it,
// the collector runs earlier as the heap nears the limit, and the process
// stays within the cache plus the limit (plus what is neither: the
// runtime's stacks and the C allocator's slack) as long as what is live
// fits; what is live is what the requests in flight hold, which the commit
// pipeline bounds per group (invariant "Bounded group"). The limit is soft:
// when more is live, the heap grows past it rather than fail.
//
// The document cache (documentCache bytes of cacheSize, doccache.go) is
// Go memory in every build: the limit holds it on top, so its live bytes
// never squeeze what the requests in flight need, and the process still
// stays within the cache plus the same overhead (its share is taken out
// of the block cache).
func HeapLimit(cacheSize, documentCache int64) int64 {
	limit := max(cacheSize/4, minHeapLimit) + documentCache
	if cacheOnGoHeap {
		limit += cacheSize - documentCache
	}
	return limit
}
