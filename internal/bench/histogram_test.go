package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramQuantiles checks the histogram against exact quantiles of
// the same samples: within the bucket precision (1/128) at every scale.
func TestHistogramQuantiles(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	h := newHistogram()
	var samples []int64
	for range 20000 {
		// Log-uniform from 1 ns to ~100 s: every bucket scale.
		v := int64(1) << r.IntN(37)
		v += r.Int64N(v)
		samples = append(samples, v)
		h.record(time.Duration(v))
	}
	slices.Sort(samples)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
		exact := samples[max(int(q*float64(len(samples)))-1, 0)]
		got := int64(h.quantile(q))
		if diff := float64(got-exact) / float64(exact); diff > 1.0/64 || diff < -1.0/64 {
			t.Errorf("q%.3f: histogram %d, exact %d (%.2f%% off)", q, got, exact, diff*100)
		}
	}
	if h.quantile(1) != time.Duration(samples[len(samples)-1]) {
		t.Errorf("q1 %v, want the exact max %d", h.quantile(1), samples[len(samples)-1])
	}
}

func TestHistogramMergeAndOrder(t *testing.T) {
	a, b := newHistogram(), newHistogram()
	for i := range 1000 {
		a.record(time.Duration(i) * time.Microsecond)
		b.record(time.Duration(i) * time.Millisecond)
	}
	a.merge(b)
	if a.n != 2000 || a.max != int64(999*time.Millisecond) || a.min != 0 {
		t.Fatalf("merged: n %d min %d max %d", a.n, a.min, a.max)
	}
	p50, p95, p99 := a.quantile(0.5), a.quantile(0.95), a.quantile(0.99)
	if !(p50 <= p95 && p95 <= p99 && p99 <= time.Duration(a.max)) {
		t.Errorf("quantiles out of order: %v %v %v max %v", p50, p95, p99, a.max)
	}
	if newHistogram().quantile(0.5) != 0 {
		t.Error("an empty histogram's median is not 0")
	}
	// The largest durations land in the last bucket without overflowing.
	a.record(time.Duration(1 << 62))
	if a.quantile(1) != time.Duration(1<<62) {
		t.Errorf("max after a huge value: %v", a.quantile(1))
	}
}

func TestBucketRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<39 + 12345} {
		i := bucketOf(v)
		mid := bucketValue(i)
		if d := float64(mid-v) / float64(max(v, 1)); d > 1.0/128 || d < -1.0/128 {
			t.Errorf("value %d: bucket %d represents %d", v, i, mid)
		}
	}
}
