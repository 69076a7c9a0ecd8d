package storage

import (
	"math/bits"
	"sync/atomic"
)

// groupSizeBuckets: bucket i counts commit groups of [2^i, 2^(i+1))
// requests; maxGroup (512) falls in bucket 9.
const groupSizeBuckets = 10

// groupStats count the commit pipeline's groups, for the metrics endpoint:
// how many groups committed and how many requests they carried, with a
// histogram of group sizes. The pipeline loop is their only writer.
type groupStats struct {
	groups, requests atomic.Int64
	// follows counts a pipelined member's groups proposed over the writes
	// of groups still in flight (replicate.go).
	follows atomic.Int64
	sizes   [groupSizeBuckets]atomic.Int64
	// maxBytes is the largest group's batch in bytes (invariant "Bounded
	// group").
	maxBytes atomic.Int64
	// failed counts groups whose applied requests were answered with an
	// error (pipeline.ack, before it wakes them).
	failed atomic.Uint64
}

// noteBytes records a group's batch size in bytes.
func (g *groupStats) noteBytes(n int) {
	if int64(n) > g.maxBytes.Load() {
		g.maxBytes.Store(int64(n))
	}
}

func (g *groupStats) record(n int) {
	g.groups.Add(1)
	g.requests.Add(int64(n))
	g.sizes[min(bits.Len(uint(n))-1, groupSizeBuckets-1)].Add(1)
}

// GroupStats is a copy of the commit pipeline's group counters.
type GroupStats struct {
	Groups, Requests int64
	// Follows counts a replica set member's groups proposed while earlier
	// ones still replicated ("Pipelined groups").
	Follows int64
	// Sizes[i] counts groups of 2^i to 2^(i+1)-1 requests.
	Sizes [groupSizeBuckets]int64
	// MaxBytes is the largest group's batch in bytes.
	MaxBytes int64
}

// FailedGroups counts the commit groups so far whose requests' writes
// were applied and then answered with an error: the group failed (or its
// outcome is unknown), so its writes may never have reached the store, and
// no in-memory state a request advanced past them may be trusted. It is
// counted before the group's requests are woken (invariant "Failures
// counted before acknowledged"): a writer that got such an error, and
// whatever it told, sees the count raised. Package session keeps its
// sessions' statement keys in memory only while it has not moved.
func (db *DB) FailedGroups() uint64 { return db.pipe.groups.failed.Load() }

// CommitGroups reports the commit groups written so far.
func (db *DB) CommitGroups() GroupStats {
	g := &db.pipe.groups
	out := GroupStats{Groups: g.groups.Load(), Requests: g.requests.Load(), Follows: g.follows.Load(), MaxBytes: g.maxBytes.Load()}
	for i := range g.sizes {
		out.Sizes[i] = g.sizes[i].Load()
	}
	return out
}
