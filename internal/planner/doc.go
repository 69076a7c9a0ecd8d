// Package planner chooses how a query reads a collection: a collection scan
// or a range of one secondary index.
//
// Invariant "Bounds are a superset": an index plan's bounds cover every key
// of every document the filter can match, so the executor, which applies
// the whole filter to each fetched document, returns exactly the
// collection scan's documents. Range predicates are never intersected (on a
// multikey index {a: {$gt: 5, $lt: 8}} matches {a: [1, 10]} through two
// different elements), and an equality to null also covers undefined,
// which the same filter matches.
//
// This first planner is rule-based: it uses the first field of ordinary
// (non-sparse, non-partial, non-hashed, non-wildcard, non-hidden) indexes,
// preferring equality on a unique index, then equality, then $in, then a
// one-sided range. Trial execution, plan caching, compound bounds, sort by
// index order, covered plans and explain come with issue 6.
package planner
