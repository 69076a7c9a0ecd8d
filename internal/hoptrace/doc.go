// Package hoptrace is a debug-only latency trace of the write path, hop by
// hop: where one replicated (or standalone) update's time goes between the
// connection reading it and the reply written — the commit pipeline, the
// Raft node loop, the log's appender and its sync, the followers'
// acknowledgements, the apply, the wake-ups between goroutines (issue 18,
// BENCHMARKS.md's session-10 section).
//
// Built with `-tags cairntrace`, [Enabled] is true: each [Hop] keeps a
// histogram (four buckets per power of two, so quantiles are within 12.5 %),
// [Now] reads the monotonic clock and [Since] records the time since a
// timestamp; `cairn` built so dumps every histogram to its standard error
// and resets them on SIGUSR2 (cmd/cairn/trace_dev.go), and the in-process
// replica set benchmark prints them. In a normal build Enabled is the
// constant false, Now returns 0, Since and Count do nothing, and every
// `if hoptrace.Enabled { … }` block compiles away: the trace costs the hot
// path nothing but a few unused timestamp fields.
//
// The standalone's hops past group.ack (group.next … sync.wake) time the
// commit pipeline's hand-offs between one sync of the log and the next, and
// the floor.* hops the same for the durable floor (internal/bench).
//
// Invariants:
//
// "Quantiles bound the samples": a quantile reported for a hop lies within
// the bucket that holds that rank of the recorded samples (its midpoint),
// so it is within 12.5 % of the true sample of that rank and never above
// the largest recorded one. TestQuantiles (built with the tag).
//
// "Off is free": without the tag, Now is 0 and the recording calls are
// empty, so callers' timestamp arithmetic records nothing. TestOff (built
// without the tag).
package hoptrace
