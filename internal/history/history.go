// Package history is the retention monitor of versioned collections: a
// background goroutine that, every period, prunes from each versioned
// collection the versions its retention bounds (minVersionsToKeep,
// minSecondsToKeep) let go, as the TTL monitor (package ttl) deletes
// expired documents.
//
// The engine decides what goes and removes it (engine.PruneHistory, in
// small pipeline requests, so writers wait at most for one of them); this
// package only decides when, logs what it pruned, and counts it for
// serverStatus (metrics.versioning).
//
// Invariant "One pass at a time": passes run on the monitor's goroutine
// (or the caller's, for Pass), serialised by a mutex.
package history

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/periodic"
)

// DefaultPeriod is the time between passes unless Options.Period says
// otherwise (the TTL monitor's default).
const DefaultPeriod = 60 * time.Second

// Options configure a Monitor.
type Options struct {
	// Period returns the time between passes, read before every sleep;
	// nil or non-positive means DefaultPeriod.
	Period func() time.Duration
	// Logger receives one line per collection that lost versions.
	Logger *slog.Logger
	// Now is the clock that ages versions (minSecondsToKeep). Default:
	// time.Now. Tests control it.
	Now func() time.Time
	// Active, if set, is asked before every timed pass; false skips it
	// (a replica set member that is not primary: only the primary's
	// pruning replicates).
	Active func() bool
}

// Monitor is a running retention monitor.
type Monitor struct {
	eng  *engine.Engine
	opts Options
	loop *periodic.Loop

	passMu sync.Mutex
	passes atomic.Int64
	pruned atomic.Int64
}

// Start starts a monitor over eng; Stop it before closing eng.
func Start(eng *engine.Engine, opts Options) *Monitor {
	m := New(eng, opts)
	m.loop = periodic.Start(opts.Period, DefaultPeriod, opts.Active, func() { m.Pass() })
	return m
}

// New returns a monitor that runs only when Pass is called (tests).
func New(eng *engine.Engine, opts Options) *Monitor {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Monitor{eng: eng, opts: opts}
}

// Stop ends a started monitor, waiting for a pass in progress. Stopping
// twice, or a nil or never started Monitor, is harmless.
func (m *Monitor) Stop() {
	if m == nil {
		return
	}
	m.loop.Stop()
}

// Pass prunes every versioned collection now and returns how many
// versions it removed. Errors are logged, not returned: one failing
// collection must not stop the others, and the next pass retries.
func (m *Monitor) Pass() int {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	defer m.passes.Add(1)
	now := m.opts.Now()
	total := 0
	for _, c := range m.eng.VersionedCollections() {
		if c.Versioning.KeepsAll() {
			continue
		}
		began := time.Now()
		n, err := m.eng.PruneHistory(c.NS, now)
		total += n
		m.pruned.Add(int64(n))
		if err != nil {
			m.opts.Logger.Error("history: pruning versions failed", "ns", c.NS.String(), "pruned", n, "err", err)
			continue
		}
		if n > 0 {
			m.opts.Logger.Info("history: pruned versions beyond retention", "ns", c.NS.String(),
				"numPruned", n, "minVersionsToKeep", c.Versioning.MinVersions, "minSecondsToKeep", c.Versioning.MinSeconds,
				"durationMillis", time.Since(began).Milliseconds())
		}
	}
	return total
}

// Passes counts the passes run so far (serverStatus metrics.versioning.passes).
func (m *Monitor) Passes() int64 {
	if m == nil {
		return 0
	}
	return m.passes.Load()
}

// Pruned counts the versions pruned so far (metrics.versioning.prunedVersions).
func (m *Monitor) Pruned() int64 {
	if m == nil {
		return 0
	}
	return m.pruned.Load()
}
