// Package agg is MongoDB's aggregation pipeline over raw BSON: Parse turns a
// pipeline (an array of stage documents) into a Pipeline once, and Run
// streams documents from a Source through its stages.
//
// Stages live one per file (stage_match.go, stage_group.go, …) and register
// a parser in an init function; accumulators for $group live one family
// per file (acc_sum.go, acc_minmax.go, …). Expressions are package expr's,
// filters package query's.
//
// # Invariants
//
//   - Parse validates what MongoDB validates when it parses a pipeline
//     (stage names and shapes, expression syntax, accumulator names, stage
//     positions) and returns a *mongoerr.Error with MongoDB's code. Run and
//     the Sources it returns report what only data can reveal (a $divide by
//     zero, a non-document newRoot, a $group over its memory budget) as
//     errors from Next, with MongoDB's codes.
//   - A run stops with its operation: every stage's input is checked against
//     Run's context every few documents (package opctx), sub-pipelines
//     ($lookup, $unionWith, $facet) inherit it, and the collections they
//     read are read under it.
//   - Nothing here panics on any input: malformed BSON ends a document at
//     its first unreadable element, as package expr reads it (FuzzPipeline
//     checks this).
//   - Streaming: $match, $project, $addFields/$set, $unset, $limit, $skip,
//     $unwind, $replaceRoot/$replaceWith, $lookup, $graphLookup and $unionWith pass one
//     document through at a time, and so does $redact; $sort, $group and
//     the stages built on it ($sortByCount, $bucket), $bucketAuto,
//     $setWindowFields (and $fill, which expands into it), $densify,
//     $count, $sample and $facet block. Next's result is valid until the
//     next call; stages copy what they keep across calls.
//   - Blocking stages account the bytes they hold. Over Options.MaxMemory
//     (100 MB by default, MongoDB's limits) without AllowDiskUse they fail
//     with code 292 (QueryExceededMemoryLimitNoDiskUseAllowed); $sort
//     spills to disk through query.Sorter when allowed, and $group (with
//     $bucket) spills sorted runs of partial group states and merges them
//     (group_spill.go); $bucketAuto and $setWindowFields sort through a
//     spilling query.Sorter (spill_sort.go). The arrays and documents that
//     $setWindowFields' accumulator windows build count against the same
//     budget, spilling or not (5414201, as in MongoDB). Each accumulator
//     that keeps values ($push, $addToSet, $firstN … $bottomN) is capped
//     at 100 MB on its own (146, acc_push.go), since none can spill.
//     Parse coalesces
//     $sort followed by $limit into a top-k sort holding only k documents.
//   - $collStats, $indexStats and $currentOp only check their shape and
//     that they come first; their documents come from Options.Stats, which
//     the command layer implements for the namespace (stage_collstats.go).
//   - Variables: $$NOW (Options.Now, fixed for the whole run), the
//     command's let (Options.Vars, see EvalLet) and $lookup's let are
//     defined at parse time in an expr.Scope, so an undefined $$name is a
//     parse error (17276), and bound at run time in each stage's
//     expr.Context.
//   - Collation: Options.Collation reaches every comparison of strings in
//     the pipeline — filters, sorts, group and partition keys,
//     accumulators, window functions, $lookup's and $graphLookup's
//     matches, sub-pipelines, and expressions through
//     expr.Context.SetCollator (collation.go lists them). The stages whose
//     work is done outside this package without it ($merge, $versions,
//     a time series unpack, $changeStream) are refused under a non-simple
//     collation (InvalidOptions), never run as if simple.
//   - A Pipeline is immutable after Parse and may Run many times,
//     concurrently: all per-run state lives in the Sources Run returns.
//   - Output order: streaming stages keep their input order; $group emits
//     its groups in the order their first documents arrived, or in key
//     order once it spilled (MongoDB promises no order, so tests compare
//     $group output as a multiset or sort it).
//
// # Deviations from MongoDB
//
//   - $densify does not spill: over its budget it fails with code 292
//     even with allowDiskUse. $bucketAuto and $setWindowFields spill their
//     sort (spill_sort.go), but $setWindowFields holds each partition in
//     memory, so one partition over the budget still fails with 292.
//   - $match's top-level $expr sees all pipeline variables ($$NOW, the
//     command's let, $lookup's let); a $expr nested inside $and/$or/$nor
//     is evaluated by package query, which sees $$NOW and the command's
//     let (query.Options) but not $lookup's let, bound per document.
//   - $graphLookup returns the documents it finds in breadth-first order
//     (MongoDB's order is unspecified); like $lookup it reads from once
//     per run when no index on connectToField serves it.
//   - $lookup without an index on foreignField (or without an
//     IndexCatalog) reads its foreign collection once per run through
//     Options.Catalog and holds it in memory, outside the memory budget.
//   - $out and $merge parse here into an Output (stage_out.go) that the
//     caller takes off the pipeline and carries out: writing belongs to the
//     execution layer (internal/exec). Run refuses a pipeline that still ends in one.
//   - $addToSet keeps first occurrences in input order (of strings equal
//     under the collation, the first spelling seen); $group emits groups
//     in first-arrival order; MongoDB specifies neither order.
//   - Stages not in the registry (StageNames) are refused with 40324.
//   - $setWindowFields holds its whole input and computes windows per
//     partition; an accumulator window without an unbounded lower bound
//     is refolded for each document (O(n·w)), where MongoDB removes
//     values from the window incrementally ($integral likewise refolds its
//     window). $expMovingAvg computes in a 200-bit float where MongoDB uses
//     decimal128, and returns a double even for decimal inputs (MongoDB
//     returns a decimal then).
//   - $bucketAuto's granularity rounds decimal128 values as doubles.
//   - $densify with "full" bounds and partitions interleaves the
//     partitions' documents by value (ties in partition order); MongoDB's
//     streaming generator interleaves them in an order of its own.
package agg
