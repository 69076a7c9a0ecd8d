package periodic

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestActiveGatesPasses: a loop whose active says false runs no pass (a
// secondary's TTL and retention monitors); once it says true, passes run
// every period; Stop returns promptly.
func TestActiveGatesPasses(t *testing.T) {
	var on atomic.Bool
	var passes atomic.Int64
	l := Start(func() time.Duration { return 5 * time.Millisecond }, time.Hour, on.Load, func() { passes.Add(1) })
	time.Sleep(60 * time.Millisecond)
	if n := passes.Load(); n != 0 {
		t.Fatalf("%d passes while inactive", n)
	}
	on.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for passes.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := passes.Load(); n < 3 {
		t.Fatalf("%d passes in 5 s once active, want at least 3", n)
	}
	began := time.Now()
	l.Stop()
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("Stop took %v", took)
	}
}
