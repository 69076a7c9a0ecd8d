package hlc

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// manual is a wall clock the test sets.
type manual struct {
	mu sync.Mutex
	t  time.Time
}

func (m *manual) now() time.Time  { m.mu.Lock(); defer m.mu.Unlock(); return m.t }
func (m *manual) set(t time.Time) { m.mu.Lock(); m.t = t; m.mu.Unlock() }
func at(sec int64) time.Time      { return time.Unix(sec, 0) }
func ts(t, i uint32) Timestamp    { return New(t, i) }

// TestNowRises checks "Strictly rising" while the wall clock advances,
// stands still and runs backwards.
func TestNowRises(t *testing.T) {
	w := &manual{t: at(1000)}
	c := NewClock(w.now, 0)
	steps := []struct {
		wall int64
		want Timestamp
	}{
		{1000, ts(1000, 1)},
		{1000, ts(1000, 2)}, // same second: the counter
		{1002, ts(1002, 1)}, // a new second restarts it
		{999, ts(1002, 2)},  // wall clock backwards: keep rising
		{1002, ts(1002, 3)},
		{1003, ts(1003, 1)},
	}
	for i, s := range steps {
		w.set(at(s.wall))
		if got := c.Now(); got != s.want {
			t.Fatalf("step %d (wall %d): Now = %v, want %v", i, s.wall, got, s.want)
		}
	}
	if got := c.Current(); got != ts(1003, 1) {
		t.Fatalf("Current = %v, want the last issued", got)
	}
}

func TestCounterCarries(t *testing.T) {
	w := &manual{t: at(10)}
	c := NewClock(w.now, 0)
	c.Restore(ts(10, 1<<32-1))
	if got := c.Now(); got != ts(11, 0) {
		t.Fatalf("Now after a full counter = %v, want %v", got, ts(11, 0))
	}
}

func TestNowRisesConcurrently(t *testing.T) {
	c := NewClock(func() time.Time { return at(5) }, 0)
	const workers, each = 8, 2000
	out := make([][]Timestamp, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				out[g] = append(out[g], c.Now())
			}
		}()
	}
	wg.Wait()
	seen := map[Timestamp]bool{}
	for _, o := range out {
		for i, v := range o {
			if seen[v] {
				t.Fatalf("timestamp %v issued twice", v)
			}
			seen[v] = true
			if i > 0 && v <= o[i-1] {
				t.Fatalf("one goroutine saw %v after %v", v, o[i-1])
			}
		}
	}
}

func TestObserve(t *testing.T) {
	w := &manual{t: at(100)}
	c := NewClock(w.now, time.Hour)
	cases := []struct {
		name    string
		observe Timestamp
		wantErr bool
		want    Timestamp // Current after
	}{
		{"behind the wall clock: still raises", ts(50, 7), false, ts(50, 7)},
		{"ahead within drift", ts(3000, 4), false, ts(3000, 4)},
		{"older than current: no change", ts(2000, 1), false, ts(3000, 4)},
		{"beyond drift refused", ts(100+3601, 1), true, ts(3000, 4)},
		{"at the drift bound", ts(100+3600, 9), false, ts(3700, 9)},
	}
	for _, tc := range cases {
		err := c.Observe(tc.observe)
		if tc.wantErr {
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != mongoerr.ClusterTimeFailsRateLimiter {
				t.Fatalf("%s: err = %v, want ClusterTimeFailsRateLimiter", tc.name, err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := c.Current(); got != tc.want {
			t.Fatalf("%s: Current = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := c.Now(); got != ts(3700, 10) {
		t.Fatalf("Now after observing = %v, want above the observed time", got)
	}
}

func TestBinaryRoundTripSorts(t *testing.T) {
	a, b := ts(1, 1<<31), ts(2, 0)
	ea, eb := a.AppendBinary(nil), b.AppendBinary(nil)
	if string(ea) >= string(eb) {
		t.Fatalf("encodings do not sort as the timestamps")
	}
	if got, ok := FromBinary(ea); !ok || got != a {
		t.Fatalf("FromBinary = %v %v", got, ok)
	}
	if _, ok := FromBinary(ea[:7]); ok {
		t.Fatalf("FromBinary accepted 7 bytes")
	}
}
