package repl

import (
	"sync"
	"time"
)

// Clock is where a node's time comes from: its Raft ticks are driven by a
// ticker of its clock, so tests can run time fast, stop it, or skew one
// member against the others.
type Clock interface {
	// NewTicker returns a ticker that fires every d of this clock's time.
	NewTicker(d time.Duration) Ticker
}

// Ticker is a clock's periodic signal. Like time.Ticker it drops ticks
// its reader is too slow to take.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// RealClock is the machine's clock.
type RealClock struct{}

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// NewTicker implements Clock.
func (RealClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// ManualClock is a clock that moves only when Advance is called.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[*manualTicker]struct{}
}

// NewManualClock returns a manual clock standing at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, tickers: map[*manualTicker]struct{}{}}
}

type manualTicker struct {
	c     *ManualClock
	ch    chan time.Time
	every time.Duration
	next  time.Time
}

func (t *manualTicker) C() <-chan time.Time { return t.ch }
func (t *manualTicker) Stop() {
	t.c.mu.Lock()
	delete(t.c.tickers, t)
	t.c.mu.Unlock()
}

// NewTicker implements Clock.
func (c *ManualClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTicker{c: c, ch: make(chan time.Time, 1), every: d, next: c.now.Add(d)}
	c.tickers[t] = struct{}{}
	return t
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and fires every ticker whose time
// has come (once per ticker: like time.Ticker, missed ticks are dropped).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.tickers {
		if c.now.Before(t.next) {
			continue
		}
		for !c.now.Before(t.next) {
			t.next = t.next.Add(t.every)
		}
		select {
		case t.ch <- c.now:
		default:
		}
	}
}
