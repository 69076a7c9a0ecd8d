// Package changestream owns MongoDB's change streams over Cairn's oplog:
// the $changeStream stage's options (Spec), resume tokens (Token), the
// events an oplog entry shows to a stream of a collection, a database or
// the whole deployment (event.go), and the Stream that reads them
// (stream.go), through the node's Feed (feed.go), and how explain shows a
// stream (explain.go: MongoDB 7.0's unfolded stages). The command layer
// (commands/changestream.go) opens a Stream for an aggregate whose first
// stage is $changeStream, runs the later stages over it and keeps it as
// an awaitData cursor, whose getMores it paces.
//
// # Invariants
//
// "Reads the log, never buffers it": a Stream keeps a position in the
// oplog and, per read, opens an iterator from there and closes it; it
// holds at most readEvents events (or readBytes of them; or one entry's,
// an applyOps's operations) read ahead and not yet returned. A slow
// consumer therefore costs the server no memory; if the oplog is trimmed
// past its position the next read fails with ChangeStreamHistoryLost
// (286), as does a start point older than the oldest entry kept. The one
// exception is bounded and shared: a node's Feed (feed.go) keeps a window
// of the newest entries (feedEntries, feedBytes; on a replica set member
// handed over as each group is applied, at most tapBytes waiting) and the
// events built from them, which the streams at the log's end read instead
// of each opening an iterator and building the same events; a stream
// behind the window reads the log itself. Through the Feed or not, a stream returns the same
// events and resume tokens (TestFeedSameAsLog).
//
// "Tokens order as events": an event's position is (the entry's ts, the
// operation's index in its applyOps, whether it is an invalidate), and its
// token's _data encodes clusterTime, version, tokenType, txnOpIndex and
// fromInvalidate first, each with package keystring, so tokens compare
// bytewise in stream order (a high water mark for ts T sorts before every
// event at T). Resuming after a token drops every event at or before its
// position: no event is seen twice, none after it is skipped
// (TestResumeFromEveryToken).
//
// "Only committed events": the stream reads the oplog keyspace, whose
// entries commit with their changes (engine "Change and entry commit
// together"); on a replica set member a group is applied only once Raft
// committed it, so every event returned is majority-committed and
// survives a failover.
//
// "Prefiltered as matched": a stream whose first later stage is a $match
// is told, by Stream.Prefilter (exec leaves it off under a collation),
// what of it can be decided before an event is built: the CRUD types a
// top-level operationType keeps (MatchOpTypes reads only "<type>", $eq or
// $in of strings; KeepOnly), and the top-level clauses that read only an
// event's head — its operationType, ns and documentKey, known from the
// entry (MatchHead; $and/$or/$nor of such clauses too, never $expr,
// $jsonSchema, $where or $text). It does not build the insert, update,
// replace or delete events of other types or whose head fails those
// clauses: it queues their position and token only, and Next passes them
// as the $match would have dropped them, so the events returned and every
// resume token are those of building then matching
// (TestPrefilterSameEvents, read alone and through the Feed, checks too
// that the whole $match, package query, drops every event prefiltered;
// TestMatchOpTypes that no event the $match keeps is of a type left out).
// The head is a document of the event's own bytes for those fields, so a
// clause reading nothing else answers on it as on the event. The $match
// still runs on what is built. One difference from building everything,
// MongoDB's too (7.0 rewrites a $match on these fields into its oplog
// scan, before internalAddPostImage): an event the $match drops is not
// built, so fullDocument or fullDocumentBeforeChange "required" no longer
// fails the stream for an image that event lacks.
//
// Transactions: an entry {op: "c", ns: "admin.$cmd", o: {applyOps:
// [...]}, lsid, txnNumber} (MongoDB's shape) gives one event per inner
// operation, in order, each with txnOpIndex in its token and the
// transaction's lsid and txnNumber on the event (TestApplyOpsUnwound).
//
// # Equal to MongoDB, and not
//
// Events have MongoDB 7.0's shape and fields for insert, update (with
// updateDescription's updatedFields, removedFields, truncatedArrays and,
// with showExpandedEvents, disambiguatedPaths from package docdiff),
// replace, delete, drop, rename, dropDatabase and invalidate, and with
// showExpandedEvents create, createIndexes, dropIndexes and modify (and
// collectionUUID). Tokens are {_data: <upper-case hex>} with MongoDB's
// fields in MongoDB's order, but each encoded by Cairn's keystring (not
// MongoDB's KeyString bytes), without _typeBits: a Cairn token is not a
// MongoDB token, and MongoDB's cannot be resumed here (InvalidResumeToken).
// Deviations:
//   - Pre-images are kept, as MongoDB keeps them, in
//     config.system.preimages for collections with
//     changeStreamPreAndPostImages: {enabled: true} (engine/preimages.go),
//     in the write's commit group; fullDocument whenAvailable/required
//     applies the update's diff to the pre-image (MongoDB computes its
//     post-images the same way). Without one, whenAvailable shows null and
//     required fails with NoMatchingDocument (47). Pre-images go, as in
//     MongoDB, once their change is older than the oldest oplog entry or
//     older than changeStreamOptions.preAndPostImages.expireAfterSeconds
//     (setClusterParameter; engine.RemoveExpiredPreImages).
//   - A database stream sees dropDatabase without a drop event per
//     collection first (the oplog logs one dropDatabase entry); a
//     collection stream sees its drop and invalidate.
//   - dropIndexes' operationDescription names the index only; modify has
//     no stateBeforeChange; create's operationDescription is the logged
//     options (no idIndex).
//   - $changeStreamSplitLargeEvent (split.go) splits as MongoDB does (the
//     fields smallest first, each fragment at most MaxEventSize less the
//     token's size), so fragments hold the same fields; their sizes may
//     differ from MongoDB's by the bytes of Cairn's shorter tokens. A
//     fragment's token is its event's with the fragment's index appended
//     (sorting after the event's and before the next event's); a stream
//     resumed from it reads the event again and drops the fragments up to
//     it (TestSplitLargeEvent).
//   - explain (explain.go) shows MongoDB 7.0's unfolded stages, but the
//     $cursor's COLLSCAN filter is the range Cairn reads ({ts: {$gte}}),
//     not MongoDB's rewrite of the namespace and operation filters; at
//     executionStats the stream runs to the log's end and each stage's
//     nReturned is what Cairn's fused steps counted.
//   - showMigrationEvents, showSystemEvents, allowToRunOnConfigDB and
//     allowToRunOnSystemNS are refused.
//   - Streams need a replica set member, as MongoDB's do (40573 on a
//     standalone).
package changestream
