package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The collector's heap floor. With GOGC 100 the Go collector runs when
// the heap reaches twice what was live after the last collection, at
// least 4 MiB. A server's live Go heap under reads is small — a couple of
// MiB, the block cache and memtables being C memory — so YCSB-C ran a
// collection every ~1,200 point reads (every 3 MB of garbage), and the
// collections' fixed work (every goroutine's stack, the globals, the
// live heap) was 13,400 of the 67,500 instructions each read cost the
// server (BENCHMARKS.md, "A point read's instructions against the
// protocol floor's"). The protocol floor, holding its documents on the
// Go heap, collected about never.
//
// So `cairn serve` keeps the collector's goal at least a floor sized from
// the block cache (gcHeapFloor): after every collection it sets the GC
// percentage to what takes the goal from the live heap to the floor, and
// back to 100 once twice the live heap is above it. Garbage may then
// reach the floor before a collection; the memory limit (setMemoryLimit)
// still rules above it. GOGC, when set, is left alone, as GOMEMLIMIT is.
//
// Invariant "Heap floor" (TestHeapFloorSpacesCollections): with the floor
// on, allocating F bytes of garbage over a small live heap runs at most
// a couple of collections, where GOGC 100 runs F / 4 MiB of them.

const (
	minHeapFloor = 16 << 20
	maxHeapFloor = 64 << 20
)

// gcHeapFloor is the heap floor for a block cache of cacheSize bytes: a
// sixteenth of it (as the memtables), from 16 to 64 MiB.
func gcHeapFloor(cacheSize int64) int64 {
	return min(max(cacheSize/16, minHeapFloor), maxHeapFloor)
}

// heapFloor re-arms itself after every collection through a finalizer,
// which the runtime runs once the collection that found its sentinel
// unreachable has finished.
type heapFloor struct {
	floor   uint64
	stopped atomic.Bool
	mu      sync.Mutex // serializes adjust with stop
	samples []metrics.Sample
	percent int // the GC percentage last set
}

type floorSentinel struct {
	h *heapFloor
	_ [16]byte // not a tiny allocation: those share blocks, and finalizers with them
}

// startHeapFloor keeps the collector's goal at least floor bytes until the
// returned stop is called, which restores GOGC 100.
func startHeapFloor(floor int64) (stop func()) {
	h := &heapFloor{
		floor:   uint64(floor),
		samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}},
		percent: 100,
	}
	h.adjust()
	h.arm()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.stopped.Store(true)
		debug.SetGCPercent(100)
	}
}

func (h *heapFloor) arm() {
	runtime.SetFinalizer(&floorSentinel{h: h}, func(s *floorSentinel) {
		if s.h.stopped.Load() {
			return
		}
		s.h.adjust()
		s.h.arm()
	})
}

// adjust sets the GC percentage that puts the next goal at the floor: the
// goal is live + (live + stacks + globals) × percent / 100.
func (h *heapFloor) adjust() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped.Load() {
		return
	}
	metrics.Read(h.samples)
	live := h.samples[0].Value.Uint64()
	scan := live + h.samples[1].Value.Uint64() + h.samples[2].Value.Uint64()
	p := floorPercent(h.floor, live, scan)
	if p != h.percent {
		debug.SetGCPercent(p)
		h.percent = p
	}
}

// floorPercent is the GC percentage whose goal is at least floor for a
// live heap of live bytes and scan bytes of roots and heap: 100 when that
// already puts the goal past the floor.
func floorPercent(floor, live, scan uint64) int {
	if scan == 0 || live+scan >= floor {
		return 100
	}
	p := math.Ceil(float64(floor-live) * 100 / float64(scan))
	return int(min(max(p, 100), math.MaxInt32))
}
