// Package ttl is the TTL monitor: a background goroutine that, every
// ttlMonitorSleepSecs seconds, deletes the documents whose TTL-indexed date
// is older than the index's expireAfterSeconds (MongoDB's TTLMonitor).
//
// The engine finds and deletes expired documents (engine.DeleteExpired,
// through the ordinary delete path, so every index stays consistent); this
// package only decides when, and logs what was deleted.
//
// Invariant "One pass at a time": passes run on the monitor's goroutine
// (or the caller's, for Pass), serialised by a mutex, so two passes never
// race to delete the same documents.
package ttl

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/periodic"
)

// DefaultPeriod is ttlMonitorSleepSecs' default, MongoDB's.
const DefaultPeriod = 60 * time.Second

// Options configure a Monitor.
type Options struct {
	// Period returns the time between passes; it is read before every
	// sleep, so it may change at runtime. Nil or a non-positive result
	// means DefaultPeriod.
	Period func() time.Duration
	// Logger receives one line per index that expired documents.
	Logger *slog.Logger
	// Now is the clock that decides expiry. Default: time.Now.
	Now func() time.Time
	// Active, if set, is asked before every timed pass; false skips it
	// (a replica set member that is not primary: only the primary's
	// deletes replicate).
	Active func() bool
}

// Monitor is a running TTL monitor.
type Monitor struct {
	eng  *engine.Engine
	opts Options
	loop *periodic.Loop

	passMu  sync.Mutex
	passes  atomic.Int64
	deleted atomic.Int64
}

// Start starts a monitor over eng; Stop it before closing eng.
func Start(eng *engine.Engine, opts Options) *Monitor {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Monitor{eng: eng, opts: opts}
	m.loop = periodic.Start(opts.Period, DefaultPeriod, opts.Active, func() { m.Pass() })
	return m
}

// Stop ends the monitor, waiting for a pass in progress. Stopping twice,
// or a nil Monitor, is harmless.
func (m *Monitor) Stop() {
	if m == nil {
		return
	}
	m.loop.Stop()
}

// Pass runs one pass now over every TTL index and returns how many
// documents it deleted. Errors are logged, not returned: one failing
// index must not stop the others, and the next pass retries.
func (m *Monitor) Pass() int {
	m.passMu.Lock()
	defer m.passMu.Unlock()
	defer m.passes.Add(1)
	indexes, err := m.eng.TTLIndexes()
	if err != nil {
		m.opts.Logger.Error("ttl: listing TTL indexes failed", "err", err)
		return 0
	}
	now := m.opts.Now()
	total := 0
	for _, ix := range indexes {
		began := time.Now()
		n, err := m.eng.DeleteExpired(ix.NS, ix.Name, now.Add(-ix.ExpireAfter))
		total += n
		m.deleted.Add(int64(n))
		if err != nil {
			m.opts.Logger.Error("ttl: deleting expired documents failed", "ns", ix.NS.String(), "index", ix.Name, "deleted", n, "err", err)
			continue
		}
		if n > 0 {
			m.opts.Logger.Info("ttl: deleted expired documents", "ns", ix.NS.String(), "index", ix.Name,
				"numDeleted", n, "durationMillis", time.Since(began).Milliseconds())
		}
	}
	for _, c := range m.eng.ClusteredTTLs() {
		n, err := m.eng.DeleteExpiredIDs(c.NS, now.Add(-c.ExpireAfter))
		total += n
		m.deleted.Add(int64(n))
		if err != nil {
			m.opts.Logger.Error("ttl: deleting expired documents of a clustered collection failed", "ns", c.NS.String(), "deleted", n, "err", err)
		} else if n > 0 {
			m.opts.Logger.Info("ttl: deleted expired documents", "ns", c.NS.String(), "index", "clustered", "numDeleted", n)
		}
	}
	for _, t := range m.eng.TimeseriesTTLs() {
		began := time.Now()
		n, err := m.eng.DeleteExpiredBuckets(t, now.Add(-t.ExpireAfter))
		total += n
		m.deleted.Add(int64(n))
		if err != nil {
			m.opts.Logger.Error("ttl: deleting expired buckets failed", "ns", t.Buckets.String(), "deleted", n, "err", err)
		} else if n > 0 {
			m.opts.Logger.Info("ttl: deleted expired buckets", "ns", t.Buckets.String(),
				"numDeleted", n, "durationMillis", time.Since(began).Milliseconds())
		}
	}
	return total
}

// Passes counts the passes run so far (serverStatus metrics.ttl.passes).
func (m *Monitor) Passes() int64 {
	if m == nil {
		return 0
	}
	return m.passes.Load()
}

// Deleted counts the documents deleted so far (metrics.ttl.deletedDocuments).
func (m *Monitor) Deleted() int64 {
	if m == nil {
		return 0
	}
	return m.deleted.Load()
}
