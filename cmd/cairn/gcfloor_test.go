package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCHeapFloorSize(t *testing.T) {
	for _, c := range []struct {
		cache, want int64
	}{
		{0, 16 << 20},
		{256 << 20, 16 << 20},    // --cacheSizeGB 0.25
		{512 << 20, 32 << 20},    // a sixteenth
		{1 << 30, 64 << 20},      // the cap
		{11776 << 20, 64 << 20},  // the default on a 24 GiB machine
		{-1, 16 << 20},           // nonsense stays within bounds
		{1 << 40, maxHeapFloor},  // so does a huge cache
		{300 << 20, 300 << 16},   // 18.75 MiB
		{1023 << 20, 1023 << 16}, // just under the cap
	} {
		if got := gcHeapFloor(c.cache); got != c.want {
			t.Errorf("gcHeapFloor(%d) = %d, want %d", c.cache, got, c.want)
		}
	}
}

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name              string
		floor, live, scan uint64
		want              int
	}{
		{"nothing measured yet", 64 * mib, 0, 0, 100},
		{"heap past the floor", 64 * mib, 40 * mib, 41 * mib, 100},
		{"goal exactly at the floor", 64 * mib, 32 * mib, 32 * mib, 100},
		{"small heap", 64 * mib, 2 * mib, 3 * mib, 2067}, // 2 + 3 × 20.67 ≥ 64
		{"tiny heap", 16 * mib, 1, 1, 1677721500},
		{"never below 100", 64 * mib, 30 * mib, 33 * mib, 104},
	} {
		got := floorPercent(c.floor, c.live, c.scan)
		if got != c.want {
			t.Errorf("%s: floorPercent = %d, want %d", c.name, got, c.want)
		}
		if got > 100 && c.live+c.scan*uint64(got)/100 < c.floor {
			t.Errorf("%s: percent %d puts the goal below the floor", c.name, got)
		}
	}
}

var floorSink []byte

// collectionsWhileAllocating is how many collections allocating n bytes of
// garbage in 64 KiB pieces runs.
func collectionsWhileAllocating(n int) uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	for range n / (64 << 10) {
		floorSink = make([]byte, 64<<10)
	}
	floorSink = nil
	runtime.ReadMemStats(&ms)
	return ms.NumGC - before
}

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestHeapFloorSpacesCollections checks invariant "Heap floor": 48 MiB of
// garbage over this test's small live heap runs a collection every few MiB
// with GOGC 100, and at most two under a 64 MiB floor; stopping the floor
// restores GOGC 100.
func TestHeapFloorSpacesCollections(t *testing.T) {
	if old := debug.SetGCPercent(100); old != 100 {
		t.Skipf("GOGC is %d in this process; the test needs the default", old)
	}
	runtime.GC()
	const garbage = 48 << 20
	without := collectionsWhileAllocating(garbage)
	stop := startHeapFloor(64 << 20)
	defer stop()
	runtime.GC() // its finalizer pass re-adjusts after a collection, too
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the floor did not raise the GC percentage (still %d)", gcPercent())
		}
		time.Sleep(time.Millisecond)
	}
	with := collectionsWhileAllocating(garbage)
	t.Logf("collections while allocating %d MiB: %d with GOGC 100, %d with a 64 MiB floor (percent %d)", garbage>>20, without, with, gcPercent())
	if without < 6 {
		t.Errorf("only %d collections without the floor: the test's live heap is too large to show anything", without)
	}
	if with > 2 {
		t.Errorf("%d collections with a 64 MiB floor, want at most 2", with)
	}
	stop()
	if p := gcPercent(); p != 100 {
		t.Errorf("after stop the GC percentage is %d, want 100", p)
	}
}
