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

// CacheStats describe the block cache.
type CacheStats struct {
	Capacity int64 // configured bytes
	Size     int64 // bytes in use
	Hits     int64
	Misses   int64
}

// CacheStats reports the block cache's size and use.
func (db *DB) CacheStats() CacheStats {
	m := db.pdb.Metrics().BlockCache
	return CacheStats{Capacity: db.opts.CacheSize, Size: m.Size, Hits: m.Hits, Misses: m.Misses}
}
