package commands

import (
	"runtime"
	"testing"
	"time"
)

// TestCPULoad checks cpuLoad over scripted counter reads: the share of
// the time between two samples that was busy; a read at most every
// cpuSampleEvery (a call sooner uses the last value); 0 before a second
// sample, when the counters cannot be read, or when they went backwards.
func TestCPULoad(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	type sample struct{ busy, total uint64 }
	type call struct {
		at    time.Duration
		reads bool    // whether this call reads the counters
		want  float64 // the value it returns
	}
	for _, tc := range []struct {
		name     string
		counters []sample // what each read returns, in turn; total 0: unreadable
		calls    []call
	}{
		{"the first call: no interval yet", []sample{{50, 100}}, []call{{0, true, 0}}},
		{"three quarters busy", []sample{{50, 100}, {125, 200}}, []call{{0, true, 0}, {100 * ms, true, 0.75}}},
		{"a call sooner uses the last value", []sample{{50, 100}, {125, 200}},
			[]call{{0, true, 0}, {100 * ms, true, 0.75}, {150 * ms, false, 0.75}, {199 * ms, false, 0.75}}},
		{"each interval alone", []sample{{0, 0 + 1}, {100, 101}, {110, 201}},
			[]call{{0, true, 0}, {100 * ms, true, 1}, {250 * ms, true, 0.1}}},
		{"idle", []sample{{10, 100}, {10, 300}}, []call{{0, true, 0}, {time.Second, true, 0}}},
		{"unreadable counters: 0", []sample{{50, 100}, {125, 200}, {0, 0}},
			[]call{{0, true, 0}, {100 * ms, true, 0.75}, {200 * ms, true, 0}}},
		{"counters gone backwards: the last value, a new base", []sample{{50, 100}, {125, 200}, {10, 20}, {20, 40}},
			[]call{{0, true, 0}, {100 * ms, true, 0.75}, {200 * ms, true, 0.75}, {300 * ms, true, 0.5}}},
	} {
		var l cpuLoad
		reads := 0
		l.read = func() (busy, total uint64, ok bool) {
			c := tc.counters[reads]
			reads++
			return c.busy, c.total, c.total != 0
		}
		for i, c := range tc.calls {
			before := reads
			got := l.get(t0.Add(c.at))
			if read := reads > before; read != c.reads {
				t.Errorf("%s, call %d: read the counters %v, want %v", tc.name, i, read, c.reads)
			}
			if got != c.want {
				t.Errorf("%s, call %d: %v, want %v", tc.name, i, got, c.want)
			}
		}
	}
}

// TestCPUTimes checks the counters read from the system where it has
// them: busy within total, both growing while this test spins a core.
func TestCPUTimes(t *testing.T) {
	b0, t0, ok := cpuTimes()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatalf("cpuTimes read counters off Linux")
		}
		t.Skip("no CPU counters off Linux")
	}
	if !ok || b0 > t0 {
		t.Fatalf("cpuTimes() = %d, %d, %v: want busy ≤ total, read", b0, t0, ok)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	b1, t1, ok := cpuTimes()
	if !ok || b1 <= b0 || t1 <= t0 || b1 > t1 {
		t.Fatalf("after 50 ms of a core busy: %d, %d (was %d, %d), %v: want both grown, busy ≤ total", b1, t1, b0, t0, ok)
	}
}
