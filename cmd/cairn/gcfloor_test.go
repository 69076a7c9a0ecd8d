package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
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

func gcPercent() uint64 { return readMetric("/gc/gogc:percent") }

// heapGoal is the heap size at which the collector's next cycle starts.
func heapGoal() uint64 { return readMetric("/gc/heap/goal:bytes") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapFloorChildEnv marks the process TestHeapFloorSpacesCollections runs
// itself in: the test counts collections, so it needs a heap nothing else
// in this package's tests has grown (CI once saw 3 collections where a
// fresh process runs a dozen: earlier tests' servers were still live).
const heapFloorChildEnv = "CAIRN_TEST_HEAP_FLOOR_CHILD"

// TestHeapFloorSpacesCollections checks invariant "Heap floor": with GOGC
// 100 the collector's goal is far below the garbage the test allocates
// (eight times this process's live heap, at least 48 MiB), and under a floor
// that leaves room for it the goal is at the floor and allocating that
// garbage runs at most two collections; stopping the floor restores GOGC
// 100. It runs in a child process of its own (heapFloorChildEnv).
//
// The control reads the goal rather than counting collections without the
// floor: how many cycles complete while garbage is allocated depends on the
// CPU the collector gets (a `.ci/run` beside a build once counted 2 where a
// quiet one counts a dozen), while the goal is the collector's own
// arithmetic. The count is still logged.
func TestHeapFloorSpacesCollections(t *testing.T) {
	if os.Getenv(heapFloorChildEnv) == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestHeapFloorSpacesCollections$", "-test.v", "-test.count=1")
		cmd.Env = append(withoutEnv(os.Environ(), "GOGC"), heapFloorChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child process:\n%s", out)
		if err != nil {
			t.Fatalf("the child process failed: %v", err)
		}
		if !strings.Contains(string(out), "--- PASS: TestHeapFloorSpacesCollections") {
			t.Fatal("the child process did not run the test")
		}
		return
	}
	if old := debug.SetGCPercent(100); old != 100 {
		t.Fatalf("GOGC is %d in the child process; the parent removed it", old)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := ms.HeapAlloc
	garbage := max(uint64(48<<20), 8*live)
	floor := max(uint64(64<<20), live+garbage)
	goalWithout := heapGoal()
	without := collectionsWhileAllocating(int(garbage))
	stop := startHeapFloor(int64(floor))
	defer stop()
	runtime.GC() // its finalizer pass re-adjusts after a collection, too
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("the floor did not raise the GC percentage (still %d)", gcPercent())
		}
		time.Sleep(time.Millisecond)
	}
	goalWith := heapGoal()
	with := collectionsWhileAllocating(int(garbage))
	t.Logf("live heap %d KiB; heap goal %d KiB with GOGC 100, %d KiB with a %d MiB floor (percent %d); collections while allocating %d MiB: %d with GOGC 100, %d with the floor",
		live>>10, goalWithout>>10, goalWith>>10, floor>>20, gcPercent(), garbage>>20, without, with)
	if goalWithout > garbage/4 {
		t.Errorf("the heap goal with GOGC 100 is %d KiB, not far below the %d MiB of garbage: the control would not tell the floor's effect", goalWithout>>10, garbage>>20)
	}
	if goalWith < floor {
		t.Errorf("the heap goal under the floor is %d KiB, below the %d MiB floor", goalWith>>10, floor>>20)
	}
	if with > 2 {
		t.Errorf("%d collections with a %d MiB floor, want at most 2", with, floor>>20)
	}
	stop()
	if p := gcPercent(); p != 100 {
		t.Errorf("after stop the GC percentage is %d, want 100", p)
	}
}

// withoutEnv is env without the variable named name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
