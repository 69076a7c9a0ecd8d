package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// This file holds YCSB's request distributions, written from their
// definitions (Gray et al., "Quickly generating billion-record synthetic
// databases", SIGMOD 1994, as YCSB's CoreWorkload uses them):
//
//   - uniform: every loaded record equally likely;
//   - zipfian: YCSB's scrambled zipfian — a zipfian (constant 0.99) over
//     10^10 items, whose popular items are spread over the key space by an
//     FNV-1a hash, so hot records are not neighbours;
//   - latest: a zipfian over the records inserted so far, counted back from
//     the newest, so the most recent inserts are the most popular.

// Distribution names, as --distribution takes them.
const (
	DistUniform = "uniform"
	DistZipfian = "zipfian"
	DistLatest  = "latest"
)

const (
	// zipfianConstant is YCSB's default skew (theta).
	zipfianConstant = 0.99
	// scrambledItems is the item count of the zipfian behind the scrambled
	// zipfian; scrambledZetan is zeta(scrambledItems, 0.99), which YCSB
	// precomputes because summing 10^10 terms takes minutes.
	scrambledItems = 10_000_000_000
	scrambledZetan = 26.46902820178302
)

// fnv64 is YCSB's key hash: FNV-1a over the 8 little-endian bytes of v,
// made non-negative. It turns key numbers into record keys ("user" + hash)
// and scatters the scrambled zipfian's hot items.
func fnv64(v int64) int64 {
	const (
		offset = 0xCBF29CE484222325
		prime  = 1099511628211
	)
	h := uint64(offset)
	u := uint64(v)
	for range 8 {
		h ^= u & 0xff
		u >>= 8
		h *= prime
	}
	s := int64(h)
	if s < 0 && s != math.MinInt64 {
		s = -s
	}
	return s
}

// zeta is the generalised harmonic number sum_{i=from+1..to} 1/i^theta,
// added to partial (zeta over the first from items).
func zeta(from, to int64, theta, partial float64) float64 {
	for i := from + 1; i <= to; i++ {
		partial += 1 / math.Pow(float64(i), theta)
	}
	return partial
}

// zipfian draws integers in [0, items) with P(i) proportional to
// 1/(i+1)^theta: item 0 is the most popular. The item count may grow
// between draws (the latest distribution), and zeta is extended
// incrementally when it does.
type zipfian struct {
	theta, alpha, zeta2 float64
	items               int64 // items zetan covers
	zetan, eta          float64
}

func newZipfian(items int64, theta float64) *zipfian {
	return newZipfianWithZeta(items, theta, zeta(0, items, theta, 0))
}

func newZipfianWithZeta(items int64, theta, zetan float64) *zipfian {
	z := &zipfian{theta: theta, alpha: 1 / (1 - theta), zeta2: zeta(0, 2, theta, 0)}
	z.setZeta(items, zetan)
	return z
}

func (z *zipfian) setZeta(items int64, zetan float64) {
	z.items, z.zetan = items, zetan
	z.eta = (1 - math.Pow(2/float64(items), 1-z.theta)) / (1 - z.zeta2/zetan)
}

// next draws from [0, items). items must be at least the count zetan was
// computed for; a larger count extends it (cost: one pow per new item).
func (z *zipfian) next(r *rand.Rand, items int64) int64 {
	if items > z.items {
		z.setZeta(items, zeta(z.items, items, z.theta, z.zetan))
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return 1
	}
	v := int64(float64(items) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(v, items-1)
}

// keyChooser picks the key number of the record a read, update, scan or
// read-modify-write targets. One per worker goroutine: not safe for
// concurrent use.
type keyChooser interface {
	next(r *rand.Rand) int64
}

// uniformChooser picks among the records loaded before the run, as YCSB's
// uniform distribution does (records inserted during the run are not
// chosen).
type uniformChooser struct{ records int64 }

func (u uniformChooser) next(r *rand.Rand) int64 { return r.Int64N(u.records) }

// scrambledChooser is YCSB's scrambled zipfian over the loaded records plus
// room for the inserts the run expects, skipping keys not yet acknowledged.
type scrambledChooser struct {
	z     *zipfian
	items int64
	keys  *keySequence
}

func (s *scrambledChooser) next(r *rand.Rand) int64 {
	for {
		k := fnv64(s.z.next(r, scrambledItems)) % s.items
		if k <= s.keys.last() {
			return k
		}
	}
}

// latestChooser is YCSB's skewed-latest distribution: the newest
// acknowledged record is the most popular.
type latestChooser struct {
	z    *zipfian
	keys *keySequence
}

func (l *latestChooser) next(r *rand.Rand) int64 {
	last := l.keys.last()
	return last - l.z.next(r, last+1)
}

// zetaCache computes zeta over the loaded records once per record count,
// so sixteen workers do not each sum 10^5 powers.
var zetaCache sync.Map // int64 -> float64

func zetaFor(items int64) float64 {
	if v, ok := zetaCache.Load(items); ok {
		return v.(float64)
	}
	z := zeta(0, items, zipfianConstant, 0)
	zetaCache.Store(items, z)
	return z
}

// newKeyChooser returns a chooser for one worker. expectedInserts sizes the
// scrambled zipfian's range as YCSB does (twice the inserts the run should
// make), so new records can become hot too.
func newKeyChooser(dist string, records, expectedInserts int64, keys *keySequence) (keyChooser, error) {
	switch dist {
	case DistUniform:
		return uniformChooser{records: records}, nil
	case DistZipfian:
		return &scrambledChooser{
			z:     newZipfianWithZeta(scrambledItems, zipfianConstant, scrambledZetan),
			items: records + expectedInserts,
			keys:  keys,
		}, nil
	case DistLatest:
		n := keys.last() + 1
		return &latestChooser{z: newZipfianWithZeta(n, zipfianConstant, zetaFor(n)), keys: keys}, nil
	}
	return nil, fmt.Errorf("bench: unknown distribution %q (want uniform, zipfian or latest)", dist)
}

// keySequence hands out the key numbers of new records and tracks the
// highest number below which every insert has been acknowledged, so that
// readers never ask for a record still in flight (YCSB's acknowledged
// counter). It is shared by the workers of one target and lives as long
// as the target's data: later workloads continue the sequence.
type keySequence struct {
	mu      sync.Mutex
	nextNum int64
	acked   int64          // every key number <= acked is acknowledged
	pending map[int64]bool // acknowledged numbers above acked+1
	lastVal atomic.Int64   // acked, readable on the hot path without the lock
}

func newKeySequence(records int64) *keySequence {
	s := &keySequence{nextNum: records, acked: records - 1, pending: map[int64]bool{}}
	s.lastVal.Store(records - 1)
	return s
}

// allocate returns the key number for a new record.
func (s *keySequence) allocate() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nextNum
	s.nextNum++
	return n
}

// acknowledge records that the insert of key number n succeeded.
func (s *keySequence) acknowledge(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[n] = true
	for s.pending[s.acked+1] {
		delete(s.pending, s.acked+1)
		s.acked++
	}
	s.lastVal.Store(s.acked)
}

// last is the highest key number below which every record exists.
func (s *keySequence) last() int64 { return s.lastVal.Load() }
