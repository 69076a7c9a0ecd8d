// Package exec runs reads and writes: it takes the typed requests package
// commands parses (a Selection for find, count and distinct, Delete,
// Update, findAndModify's Selection or Update, Aggregate, an insert's
// documents) and executes them over the engine. It opens the snapshot and
// the plan (through the planner), owns the plan cache (a field of Env, one
// per engine), runs updates, upserts and deletes through the engine's
// commit pipeline, pushes the leading stages of a pipeline into the
// collection read, and writes $out and $merge. It knows nothing of
// requests, replies, cursors with ids or batches (package commands owns
// those), nor of how a plan is chosen (package planner).
//
// # Pieces
//
//   - env.go: Env, the engine and the plan cache; Insert; Within, the Env
//     narrowed to a command's Scope: its reads and writes inside a
//     transaction (engine.Txn), its reads of one collection keeping only a
//     shard's own documents (SHARDING_FILTER, planner.Query.Owned) and its
//     updates and deletes of it changing only those, its reads waiting on
//     prepare conflicts.
//   - selection.go: Selection, a parsed read, and how it becomes a
//     planner.Query.
//   - read.go: Open, the one entry point of every read, for running and for
//     explain (Mode); Count and Distinct over it.
//   - write.go: Delete, Update, FindAndUpdate, FindAndRemove, and the
//     Rider a statement's write carries (a retryable write's record, which
//     commits in the write's own request or, for a statement that writes
//     nothing, in a request of its own).
//   - aggregate.go: Aggregate, PushDown, and the catalog through which
//     $lookup and $unionWith read other collections. An aggregation over a
//     view runs over its source collection with the view's pipeline first
//     (resolveView); $lookup and $unionWith read a view the same way.
//     PushDown coalesces leading $match stages (a view's and the query's)
//     into one filter, as MongoDB does.
//   - output.go: $out and $merge.
//   - explain.go: explain of count, delete and update, which count what
//     they would do.
//   - tail.go: Tail, the read of a tailable cursor over a capped
//     collection.
//   - changestream.go: ChangeStream, a $changeStream aggregate: the
//     stream over the oplog (package changestream) with its later stages;
//     ExplainChangeStream, the same run to the log's end for explain.
//   - versions.go: the input of a pipeline that starts with $versions, a
//     versioned collection's history, with a following $match on _id and
//     the version narrowing the scan (the $match still runs), and its
//     explain (VERSIONS_SCAN). Reads as of a cluster time
//     (Selection.AsOf, Aggregate.AsOf) go through Open like any other.
//
// # Invariants
//
// "One entry point": every read of a collection, whether a find, the
// selection of a write, a pipeline's input, a $lookup's foreign read or an
// explain, is planned by Open; explain differs only in Mode (it plans
// afresh, keeps timings and trial statistics, and counts no index access)
// and renders the same plan tree that runs. A find of one _id is the
// planner's IDHACK plan, which reads without a snapshot when it runs
// (planner.Open); there is no other point-read path. The one exception is
// Tail: a tailable cursor is always a forward scan of a capped collection
// in insertion order (MongoDB plans nothing else for one) that resumes
// from an insertion position, which no plan keeps.
//
// "Writes recheck": a delete or update chooses its documents from a
// snapshot, then changes each through engine.Modify, which re-reads it
// inside the commit pipeline; the filter is matched again there, so a
// document changed or removed in between is neither wrongly changed nor
// counted. An upsert inserts only when nothing matched.
//
// "One read per point write": a delete or update whose selection is one
// _id (the IDHACK plan's query) reads its document once, inside the commit
// pipeline (engine.Modify), and matches it there; the choosing read would
// find the same document or none, so it is skipped. Its _id index access
// is counted all the same. An upsert of one _id that finds nothing inserts
// in the same pipeline request (engine.Action.Insert), so concurrent
// upserts of one _id serialize there: the first inserts, the others match
// it.
//
// "Push-down keeps results": PushDown moves into the collection read only
// what the read does with the same result: a leading $match without
// variables, a plain $sort after it, a positive $limit after that, and the
// distinct path (Selection.Distinct) that lets the planner read one document per
// value for a following $group of $first accumulators, which still runs.
// Aggregate and explain share PushDown, so explain shows what runs.
//
// "Runs under the operation": every entry point takes the operation's
// context and hands it to the plan (planner.Open), the pipeline
// (agg.Pipeline.Run: every stage's input, $lookup's and $unionWith's reads,
// the expression loops) and the write loop (each document's change in
// Modify), so maxTimeMS, killOp and a client gone end them with the
// context's cause (package opctx). A read whose plan a cursor keeps is given
// a context that outlives its request (opctx.Bound, attached by each
// request that pulls it); exec itself keeps no context.
//
// "Owned documents": a Selection or Aggregate holds copies, never the
// request's buffer, which the connection reuses for the next message while
// a cursor may still run the plan.
//
// "New documents in a reused buffer": an update (not findAndModify, whose
// reply keeps its document) writes each new document into one buffer taken
// from a pool for the request (update.ApplyTo, the buffer of write.go's
// updateRun): the engine's Modify copies what it keeps of a Replace before
// it reads the next document, and nothing refers to the buffer once Modify
// returns (TestNewDocumentsInAReusedBuffer).
//
// "An update's state from a pool": runUpdate takes what its statement
// needs — the spec, the counts, the point _id's one-element list, the
// callback engine.ModifyWith runs on each document (a method value bound
// once per pooled updateRun) and the new-document buffer — from a pool,
// and returns it zeroed but for the callback and the buffer once
// ModifyWith and the upsert are done; nothing else refers to it then (the
// pipeline runs a request's callback only until ModifyWith returns). No
// statement's result carries the previous one's (TestUpdateStateFromPool,
// which fails with the zeroing dropped); TestPointUpdateAllocs bounds a
// point update at 3 allocations (8 before).
//
// # Where a router will split a plan
//
// A sharded cluster (DESIGN.md §7) will run each read as a shard part on
// every shard that owns a chunk of the collection and a merge part on the
// router. The boundary is the Selection and the pipeline PushDown leaves:
//
//   - Shard part: Open of the Selection (filter, sort, skip+limit as a
//     limit, projection), then, for a pipeline, the stages that run per
//     document ($match, $project, $unwind, …) and the partial form of a
//     $group (accumulators that merge: $sum, $min, $max, $first with the
//     sort, $push, $addToSet; $avg as sum and count).
//   - Merge part: a sort-merge of the shards' streams on the Selection's
//     sort (or any order without one), the skip and limit, the final
//     $group that merges the partial ones, and every stage after the first
//     one that needs all documents ($sort without an index order, $group,
//     $facet, $out, $merge).
//
// The split belongs in one place: a function beside PushDown that, given
// the Selection and the remaining stages, returns the shard Selection and
// stages and the merge stages. Aggregate and Open will then run the shard
// part locally and the merge part over the shards' cursors; count,
// distinct and findAndModify follow as the same split of their Selection
// (a sum of counts; a merged distinct; findAndModify targets one shard by
// its shard key or runs as a read then a targeted write).
package exec
