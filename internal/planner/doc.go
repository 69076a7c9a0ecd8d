// Package planner chooses and runs the plan of a read: which index to scan
// and within which bounds, or a collection scan, and the stages above it
// (FETCH, SORT, SKIP, LIMIT, PROJECTION_*). Plans are trees of stages named
// and counted as MongoDB's classic engine names and counts them, and
// explain renders the tree that actually ran.
//
// # Pieces
//
//   - analysis.go reads a filter's tree (query.Filter.Tree): per path, the
//     conditions that must all hold; condOIL and fieldOIL turn them into
//     bounds, hashedOIL into the hashes a hashed field's equality or $in
//     names.
//   - interval.go: Interval and OIL (ordered interval list), one per index
//     field, in MongoDB's value order, printed as MongoDB prints bounds.
//   - ixscan.go expands per-field bounds to ranges of encoded keys (every
//     combination of the leading point fields, then the intervals of the
//     next field, up to maxRanges ranges) and checks later fields key by
//     key. A key whose first checked field misses its bounds makes the
//     scan seek (engine.Cursor.Skip) to the next key that field's next
//     interval admits under the same earlier fields, as MongoDB's
//     IndexBoundsChecker does: an $in of more than maxRanges values reads
//     about one or two keys per value, not the whole index. On a collated
//     index the first field's intervals are always all expanded (its keys
//     cannot be checked, and FETCH counts on the ranges).
//   - plan.go: Open, the entry point (it opens the snapshot), and
//     Prepare, which plans over a snapshot. A plain {_id: v} is the IDHACK
//     plan, the only point-read path: run, it reads without a snapshot
//     (one read is consistent by itself, and the point read is the hot
//     path) or, in a transaction, through the transaction's view
//     (engine.GetIn); explained, it plans as any other query. Express
//     is the same read without the plan, for a find that has checked it
//     needs nothing else (package commands' express path).
//   - plan.go enumerates candidates (an _id lookup, one scan per useful
//     index — a wildcard index once per filtered path it holds, scanned as
//     the two-part key {$_path: 1, <path>: 1} — the collection scan when
//     no index helps, a hinted index); run.go runs a trial among several
//     (the multi-planner) and caches the winner per query shape (cache.go).
//   - geo.go: 2dsphere bounds (the S2 cell ranges of a $geoWithin or
//     $geoIntersects region) and the GEO_NEAR_2DSPHERE stage of $near and
//     $nearSphere, an expanding ring search in distance order; geo2d.go:
//     the same over 2d indexes (grid-cell bounds of a legacy shape's
//     bounding rectangle, the GEO_NEAR_2D stage).
//   - clustered.go: explain of an _id range on a clustered collection as
//     one CLUSTERED_IXSCAN stage.
//   - collation.go: which indexes a query's collation may use (MongoDB's
//     rule: strings only through an index of the same collation), their
//     ranges in key order, exact bounds on a collated index.
//   - distinct.go: the distinct scan (DISTINCT_SCAN) of a $sort then a
//     $group of $first accumulators on the sort's first field, when
//     Query.DistinctPath asks for it and an index plainly qualifies.
//   - text.go: the text plan of a $text query (TEXT_MATCH over FETCH over
//     TEXT_OR or OR over one IXSCAN per term, within a compound text
//     index's equality prefix), the only plan such a query has; under $or
//     its subtree is one branch of orCandidate's OR. It binds the filter's
//     $text to the index's reading of the search (query.Filter.BindText),
//     so FETCH and writes re-checking documents decide it alike. When the
//     query reads {$meta: "textScore"}, TEXT_OR sums each document's term
//     scores and TEXT_MATCH appends the score as the document's last field
//     (query.TextScoreField), which sort reads and projection (or a final
//     strip) removes.
//   - stages.go and exec.go: the stages, worked one unit at a time, with
//     MongoDB's per-stage counters. SHARDING_FILTER (Query.Owned) sits
//     right above the stage that yields documents in every plan; a query
//     with it neither covers, counts keys nor scans distinct, and its point
//     read plans over a snapshot: the filter reads the shard key from the
//     whole document.
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
// non-empty documents to FETCH. A path with a numeric component ("a.0")
// is never bounded: the matcher reads "0" both as a position and as a field
// name and sees a missing field through array elements that are documents
// ({"a.0": null} matches {a: [5, {x: 1}]}), while an index on "a.0" keys
// only the element at position 0; an index on such a path is scanned whole
// when hinted. The differential test in internal/commands checks this
// against forced collection scans (TestNumericPathIndexMatchesScan for
// numeric paths).
//
// "Order from the index": a plan without a SORT stage returns documents in
// the requested order. Only index fields whose paths never held an array
// give order, after leading fields bound to a single value; a wildcard
// index orders only a sort on exactly the path it serves.
//
// "Skips go ahead": a seek past keys the bounds exclude moves the cursor
// strictly on in the scan's direction, to the start of the field's next
// interval or past the earlier fields' prefix, so it passes over no key
// the bounds admit and never loops; builds with the invariants tag check
// each seek's target against the key it leaves. TestLongInSeeks checks
// results against collection scans and the keys examined (at most two per
// value of a sparse $in) over _id, secondary, descending, compound,
// multikey, hashed and collated indexes, both directions.
//
// "Cache follows the catalog": see Cache.
//
// "A plan stops with its operation": every plan runs under the context
// Open or Prepare is given, checked every few works (package opctx), so
// maxTimeMS, killOp and a client gone end the trial and every later Next
// with the context's cause. The point read alone keeps no context: it is
// one read, with nothing to interrupt.
//
// "Filters are read through their tree": the planner never reads filter
// BSON. What it knows of a filter (bounds, residual filters, covered
// filters, $or branches, partial-index implication, explain's parsedQuery)
// comes from query.Filter.Tree, and a partial index's filter from
// index.Spec.PartialFilter().Tree(); residual filters are built by
// query.Filter.Select and plan cache shapes by query.Filter.AppendShape.
// Query.RawFilter and Spec.PartialFilterExpression are only carried: into
// a stage's rawFilter field for explain to print, returned, or measured
// with len. TestLintFilterTree (lint_test.go at the root) checks this in
// internal/planner and internal/index: those selectors and rawFilter
// fields appear only as a composite literal's value, on the right of an
// assignment, in a return, under len() or as bson.Raw(x) for explain; and
// no file there calls query.Parse or query.ParseWith except
// index/partial.go, which parses a specification's filter.
//
// # Tests
//
// A planner case is a stanza of testdata/plans (format in plans_test.go):
// documents, indexes, a query and the plan that ran with its counters,
// regenerated with -rewrite; every case's results are also checked against
// a collection scan's. testdata/bounds.txt holds golden index bounds.
package planner
