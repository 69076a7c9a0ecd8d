// Package hlc owns Cairn's cluster time: a hybrid logical clock whose
// readings are MongoDB timestamps (seconds since the epoch, and a counter
// within the second), the oplog's ts, change streams' clusterTime, the
// atClusterTime of snapshot reads and the validity bounds of document
// versions (DESIGN.md §8: one clock, one meaning).
//
// # Invariants
//
// "Strictly rising": every [Clock.Now] returns a timestamp above every
// timestamp the clock returned or observed before, whatever the wall clock
// does (it may stand still or run backwards). Checked by TestNowRises and,
// across goroutines, TestNowRisesConcurrently.
//
// "Bounded drift": [Clock.Observe] refuses a time more than MaxDrift ahead
// of the wall clock (MongoDB's maxAcceptableLogicalClockDriftSecs), with
// ClusterTimeFailsRateLimiter (205), and leaves the clock as it was, so a
// client or member with a wild clock cannot push every later write's time
// out of reach. TestObserve.
//
// The clock keeps no state on disk: the storage commit pipeline persists the
// highest time each commit group used and restores the clock's floor from
// it at open (storage's invariant "Cluster time survives restart").
package hlc

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Timestamp is a cluster time: the seconds since the Unix epoch in the high
// 32 bits and a counter within that second in the low 32 bits, which is
// BSON's timestamp layout, so timestamps compare as integers.
type Timestamp uint64

// New returns the timestamp (t, i).
func New(t, i uint32) Timestamp { return Timestamp(uint64(t)<<32 | uint64(i)) }

// T is the seconds part.
func (ts Timestamp) T() uint32 { return uint32(ts >> 32) }

// I is the counter part.
func (ts Timestamp) I() uint32 { return uint32(ts) }

// IsZero reports whether ts is the zero timestamp (no time).
func (ts Timestamp) IsZero() bool { return ts == 0 }

// String prints ts as mongosh does: Timestamp({ t: T, i: I }).
func (ts Timestamp) String() string {
	return fmt.Sprintf("Timestamp({ t: %d, i: %d })", ts.T(), ts.I())
}

// AppendBinary appends ts as 8 big-endian bytes, which sort as the
// timestamps do (for keys and stored records).
func (ts Timestamp) AppendBinary(dst []byte) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ts))
}

// FromBinary reads a timestamp written by AppendBinary; ok is false when b
// is not 8 bytes long.
func FromBinary(b []byte) (ts Timestamp, ok bool) {
	if len(b) != 8 {
		return 0, false
	}
	return Timestamp(binary.BigEndian.Uint64(b)), true
}

// DefaultMaxDrift is MongoDB's default maxAcceptableLogicalClockDriftSecs:
// one year.
const DefaultMaxDrift = 365 * 24 * time.Hour

// Clock is a hybrid logical clock. Its methods are safe for concurrent use.
type Clock struct {
	wall     func() time.Time
	maxDrift time.Duration
	last     atomic.Uint64 // the highest timestamp issued or observed
}

// NewClock returns a clock reading wall (time.Now when nil) that accepts
// observed times up to maxDrift ahead of it (DefaultMaxDrift when 0).
func NewClock(wall func() time.Time, maxDrift time.Duration) *Clock {
	if wall == nil {
		wall = time.Now
	}
	if maxDrift <= 0 {
		maxDrift = DefaultMaxDrift
	}
	return &Clock{wall: wall, maxDrift: maxDrift}
}

// Now returns a new timestamp above every earlier one ("Strictly
// rising"): the wall clock's second with counter 1 when that second is
// ahead of the last timestamp, else the last timestamp plus one (a counter
// that fills carries into the seconds).
func (c *Clock) Now() Timestamp {
	wall := New(c.wallSeconds(), 1)
	for {
		last := c.last.Load()
		next := max(last+1, uint64(wall))
		if c.last.CompareAndSwap(last, next) {
			return Timestamp(next)
		}
	}
}

// Current returns the highest timestamp issued or observed, without
// issuing one.
func (c *Clock) Current() Timestamp { return Timestamp(c.last.Load()) }

// Observe advances the clock to ts if ts is above it, so the next Now is
// above ts. A time more than the clock's drift bound ahead of the wall
// clock is refused with ClusterTimeFailsRateLimiter ("Bounded drift").
func (c *Clock) Observe(ts Timestamp) error {
	limit := int64(c.wallSeconds()) + int64(c.maxDrift/time.Second)
	if int64(ts.T()) > limit {
		return mongoerr.New(mongoerr.ClusterTimeFailsRateLimiter,
			"New cluster time, %d, is too far from this node's wall clock time, %d.", ts.T(), c.wallSeconds())
	}
	c.Restore(ts)
	return nil
}

// Restore raises the clock to at least ts with no drift check: for times
// this node itself issued before (the floor read back at startup).
func (c *Clock) Restore(ts Timestamp) {
	for {
		last := c.last.Load()
		if uint64(ts) <= last || c.last.CompareAndSwap(last, uint64(ts)) {
			return
		}
	}
}

func (c *Clock) wallSeconds() uint32 {
	s := c.wall().Unix()
	switch {
	case s < 0:
		return 0
	case s > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(s)
}
