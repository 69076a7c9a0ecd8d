//go:build cairntrace

package hoptrace

import (
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
	"time"
)

// Enabled is true in builds with the cairntrace tag.
const Enabled = true

// epoch makes Now's values small and monotonic.
var epoch = time.Now()

// Now is the monotonic time in nanoseconds since the process started
// (never 0 once a nanosecond passed).
func Now() int64 { return int64(time.Since(epoch)) + 1 }

// Since records the time from t0 (a Now) to now in h and returns now; a
// zero t0 (a timestamp never taken) records nothing.
func Since(h Hop, t0 int64) int64 {
	now := Now()
	if t0 != 0 && now >= t0 {
		hists[h].add(uint64(now - t0))
	}
	return now
}

// Count records n in a counting hop.
func Count(h Hop, n int) {
	if n >= 0 {
		hists[h].add(uint64(n))
	}
}

// Write writes every hop that recorded something: its samples, mean and
// quantiles (µs, or the count), in the order of the path.
func Write(w io.Writer) {
	fmt.Fprintf(w, "%-15s %9s %9s %9s %9s %9s %9s\n", "hop", "n", "mean", "p50", "p90", "p99", "max")
	for h := range numHops {
		s := hists[h].snapshot()
		if s.n == 0 {
			continue
		}
		unit := func(v float64) string {
			if h.count() {
				return fmt.Sprintf("%.1f", v)
			}
			return fmt.Sprintf("%.1fµs", v/1e3)
		}
		fmt.Fprintf(w, "%-15s %9d %9s %9s %9s %9s %9s\n", h, s.n, unit(float64(s.sum)/float64(s.n)),
			unit(s.quantile(0.5)), unit(s.quantile(0.9)), unit(s.quantile(0.99)), unit(float64(s.max)))
	}
}

// Reset empties every histogram.
func Reset() {
	for h := range hists {
		hists[h].reset()
	}
}

var hists [numHops]hist

// numBuckets: four per power of two up to 2^64 (bucket 251 holds the
// largest uint64).
const numBuckets = 252

// hist is a lock-free histogram: bucket i holds the samples in
// [lower(i), lower(i+1)).
type hist struct {
	n, sum, max atomic.Uint64
	b           [numBuckets]atomic.Uint64
}

func bucket(v uint64) int {
	if v < 4 {
		return int(v)
	}
	e := bits.Len64(v) - 1 // ≥ 2
	return 4*(e-1) + int(v>>(e-2)&3)
}

func lower(i int) uint64 {
	if i < 4 {
		return uint64(i)
	}
	e, sub := i/4+1, uint64(i%4)
	return (4 + sub) << (e - 2)
}

func (h *hist) add(v uint64) {
	h.n.Add(1)
	h.sum.Add(v)
	h.b[bucket(v)].Add(1)
	for m := h.max.Load(); v > m && !h.max.CompareAndSwap(m, v); m = h.max.Load() {
	}
}

func (h *hist) reset() {
	h.n.Store(0)
	h.sum.Store(0)
	h.max.Store(0)
	for i := range h.b {
		h.b[i].Store(0)
	}
}

type snap struct {
	n, sum, max uint64
	b           [numBuckets]uint64
}

func (h *hist) snapshot() *snap {
	s := &snap{sum: h.sum.Load(), max: h.max.Load()}
	for i := range h.b {
		s.b[i] = h.b[i].Load()
		s.n += s.b[i]
	}
	return s
}

// quantile is the midpoint of the bucket holding rank ⌈q·n⌉ ("Quantiles
// bound the samples"), not above the largest sample.
func (s *snap) quantile(q float64) float64 {
	rank := uint64(q*float64(s.n) + 0.999999)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range s.b {
		seen += c
		if seen >= rank {
			lo, hi := lower(i), lower(i+1)-1
			if i+1 >= numBuckets {
				hi = lo
			}
			return min(float64(lo)+float64(hi-lo)/2, float64(s.max))
		}
	}
	return float64(s.max)
}
