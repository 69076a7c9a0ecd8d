// Package planner chooses and runs the plan of a read: which index to scan
// and within which bounds, or a collection scan, and the stages above it
// (FETCH, SORT, SKIP, LIMIT, PROJECTION_*). Plans are trees of stages named
// and counted as MongoDB's classic engine names and counts them, and
// explain renders the tree that actually ran.
//
// # Pieces
//
//   - analysis.go reads a filter: per path, the conditions that must all
//     hold; condOIL and fieldOIL turn them into bounds, hashedOIL into the
//     hashes a hashed field's equality or $in names.
//   - interval.go: Interval and OIL (ordered interval list), one per index
//     field, in MongoDB's value order, printed as MongoDB prints bounds.
//   - ixscan.go expands per-field bounds to ranges of encoded keys (every
//     combination of the leading point fields, then the intervals of the
//     next field) and checks later fields key by key.
//   - plan.go enumerates candidates (an _id lookup, one scan per useful
//     index — a wildcard index once per filtered path it holds, scanned as
//     the two-part key {$_path: 1, <path>: 1} — the collection scan when
//     no index helps, a hinted index); run.go runs a trial among several
//     (the multi-planner) and caches the winner per query shape (cache.go).
//   - distinct.go: the distinct scan (DISTINCT_SCAN) of a $sort then a
//     $group of $first accumulators on the sort's first field, when
//     Query.DistinctPath asks for it and an index plainly qualifies.
//   - stages.go and exec.go: the stages, worked one unit at a time, with
//     MongoDB's per-stage counters.
//
// # Invariants
//
// "Bounds are a superset": an index plan's bounds cover every key of every
// document the filter can match, and FETCH applies to each document every
// condition the bounds do not guarantee exactly (the residual filter), so a
// plan returns exactly the collection scan's documents. On a field whose
// path held an array (the index's multiKeyPaths, recorded by the write
// path in the catalog), conditions are never intersected ({a: {$gt: 5,
// $lt: 8}} matches {a: [1, 10]} through two different elements),
// and fields sharing a multikey prefix are never compounded; other fields
// of a multikey index are bounded as on any index. An index whose paths
// are unknown (a catalog from before they were recorded) counts every path
// as multikey. An equality to null also covers undefined and missing
// fields. A hashed field's bounds are hashes, which different values
// share: its conditions are never dropped from FETCH's filter, and such a
// scan never covers a query nor gives order. A wildcard index holds no key
// for a missing field nor for a document as a whole: it serves a path only
// when the bounds exclude null and undefined, and leaves equalities to
// non-empty documents to FETCH. The differential test in internal/commands
// checks this against forced collection scans.
//
// "Order from the index": a plan without a SORT stage returns documents in
// the requested order. Only index fields whose paths never held an array
// give order, after leading fields bound to a single value; a wildcard
// index orders only a sort on exactly the path it serves.
//
// "Cache follows the catalog": see Cache.
//
// "A plan stops with its operation": every plan runs under the context
// Prepare is given, checked between works (package opctx), so maxTimeMS,
// killOp and a client gone end the trial and every later Next with the
// context's cause.
package planner
