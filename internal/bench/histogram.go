package bench

import (
	"math"
	"math/bits"
	"time"
)

// histogram records latencies in log-linear buckets, as HDR histograms do:
// values below 2^subBits nanoseconds are exact, and every power of two
// above is split into 2^subBits equal buckets, so a reported percentile is
// within 1/2^subBits (0.8%) of the true value at any magnitude. Recording
// is an index computation and an increment; each worker owns its
// histograms, so nothing is shared on the hot path, and they are merged
// after the run.
type histogram struct {
	counts   []uint64
	n        uint64
	sum      float64 // nanoseconds, for the mean
	min, max int64
}

const (
	subBits    = 7
	subBuckets = 1 << subBits
	// maxTracked is the largest latency kept in its own bucket (about 18
	// minutes); slower operations land in the last bucket, but max is exact.
	maxTrackedBits = 40
	numBuckets     = (maxTrackedBits - subBits + 1) * subBuckets
)

func newHistogram() *histogram {
	return &histogram{counts: make([]uint64, numBuckets), min: math.MaxInt64}
}

func bucketOf(v int64) int {
	if v < subBuckets {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	i := (shift+1)*subBuckets + int(uint64(v)>>shift) - subBuckets
	return min(i, numBuckets-1)
}

// bucketValue is a representative value of bucket i: its midpoint.
func bucketValue(i int) int64 {
	if i < subBuckets {
		return int64(i)
	}
	shift := i/subBuckets - 1
	lower := int64(i%subBuckets+subBuckets) << shift
	return lower + (int64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// quantile returns the latency at or below which a fraction q of the
// recorded operations fell (0 for an empty histogram). It never exceeds
// the exact maximum, so p50 <= p99 <= max always holds.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	if rank == h.n {
		return time.Duration(h.max)
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(bucketValue(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}
