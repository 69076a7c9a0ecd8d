//go:build cairntrace

package hoptrace

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBuckets: every value falls in the bucket whose bounds hold it, and
// the buckets are contiguous and rising.
func TestBuckets(t *testing.T) {
	for i := 0; i+1 < numBuckets; i++ {
		if lower(i+1) <= lower(i) {
			t.Fatalf("bucket %d starts at %d, bucket %d at %d", i+1, lower(i+1), i, lower(i))
		}
		for _, v := range []uint64{lower(i), lower(i+1) - 1} {
			if b := bucket(v); b != i {
				t.Fatalf("value %d in bucket %d, want %d [%d, %d)", v, b, i, lower(i), lower(i+1))
			}
		}
	}
}

// TestQuantiles checks "Quantiles bound the samples" on random samples of
// several shapes: each reported quantile is within 12.5 % of the true
// sample of that rank.
func TestQuantiles(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	shapes := []struct {
		name string
		gen  func() uint64
	}{
		{"uniform µs", func() uint64 { return 1000 + r.Uint64N(9000) }},
		{"exponential", func() uint64 { return uint64(r.ExpFloat64() * 2e6) }},
		{"small counts", func() uint64 { return r.Uint64N(12) }},
		{"two modes", func() uint64 {
			if r.IntN(10) == 0 {
				return 5e6 + r.Uint64N(1e6)
			}
			return 2e5 + r.Uint64N(1e4)
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			var h hist
			vals := make([]uint64, 1+r.IntN(5000))
			for i := range vals {
				vals[i] = sh.gen()
				h.add(vals[i])
			}
			slices.Sort(vals)
			s := h.snapshot()
			if s.n != uint64(len(vals)) || s.max != vals[len(vals)-1] {
				t.Fatalf("n %d max %d, want %d %d", s.n, s.max, len(vals), vals[len(vals)-1])
			}
			for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
				rank := max(int(q*float64(len(vals))+0.999999), 1)
				want := float64(vals[rank-1])
				got := s.quantile(q)
				if got < want-want/8 || got > want+want/8 || got < float64(vals[0]) {
					t.Errorf("q%.2f = %.0f, the sample of rank %d is %.0f (n %d)", q, got, rank, want, len(vals))
				}
			}
		})
	}
}

// TestWrite: Since records only real intervals, Write lists the hops that
// recorded something, and Reset empties them.
func TestWrite(t *testing.T) {
	Reset()
	t0 := Now()
	if t0 == 0 {
		t.Fatal("Now is 0")
	}
	Since(GroupRepl, t0)
	Since(GroupAck, 0) // never taken: not recorded
	Count(GroupSize, 3)
	var b strings.Builder
	Write(&b)
	out := b.String()
	if !strings.Contains(out, "group.repl") || !strings.Contains(out, "group.size") || strings.Contains(out, "group.ack") {
		t.Fatalf("Write:\n%s", out)
	}
	Reset()
	b.Reset()
	Write(&b)
	if strings.Contains(b.String(), "group.repl") {
		t.Fatalf("after Reset:\n%s", b.String())
	}
}

// TestMark: a Mark returns the last timestamp set.
func TestMark(t *testing.T) {
	var m Mark
	if m.Get() != 0 {
		t.Fatal("a new Mark holds a timestamp")
	}
	m.Set(5)
	if m.Set(7); m.Get() != 7 {
		t.Fatalf("Get = %d, want 7", m.Get())
	}
}
