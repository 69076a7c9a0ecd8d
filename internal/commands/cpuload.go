package commands

import (
	"sync"
	"sync/atomic"
	"time"
)

// cpuLoad is the machine's CPU use, for the pace of change streams'
// getMores (changestream.go): the share of all cores' time that was not
// idle over the interval between its last two samples of the operating
// system's counters (cpuTimes). It samples lazily, when asked and its
// last sample is cpuSampleEvery old or more, so a value used is at most
// that old (or as old as a sample another caller is taking); it has no
// goroutine of its own, and costs nothing while no paced stream asks.
// Where the counters cannot be read it reports 0: today's pace.
type cpuLoad struct {
	mu          sync.Mutex // held to sample; a caller that finds it held uses the last value
	at          time.Time  // the last sample (zero: none yet)
	busy, total uint64     // the counters at the last sample
	based       bool       // busy and total were read (the next read measures from them)
	use         atomic.Uint32
	// read returns the counters (nil: cpuTimes); tests set it.
	read func() (busy, total uint64, ok bool)
}

// cpuSampleEvery is how often cpuLoad reads the counters at most.
const cpuSampleEvery = 100 * time.Millisecond

// get returns the machine's CPU use at now, between 0 (idle) and 1 (every
// core busy).
func (l *cpuLoad) get(now time.Time) float64 {
	if l.mu.TryLock() {
		if l.at.IsZero() || now.Sub(l.at) >= cpuSampleEvery {
			read := l.read
			if read == nil {
				read = cpuTimes
			}
			busy, total, ok := read()
			switch {
			case !ok:
				l.use.Store(0)
			case l.based && total > l.total && busy >= l.busy:
				l.use.Store(uint32(min(1000, 1000*(busy-l.busy)/(total-l.total))))
			}
			l.at, l.based = now, ok
			if ok { // a new base, also after counters that went backwards
				l.busy, l.total = busy, total
			}
		}
		l.mu.Unlock()
	}
	return float64(l.use.Load()) / 1000
}
