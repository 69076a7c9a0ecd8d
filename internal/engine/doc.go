// Package engine is a node's database engine: it turns document operations
// (insert, get, scan, replace, delete, read-modify-write) and catalog
// operations (create, drop, rename, indexes) into commit-pipeline requests
// over the storage keyspaces, keeping documents, indexes and catalog records
// consistent in one atomic commit.
//
// The command layer (wire protocol) and the embedded Go API both call it;
// query, update and planner packages build on its document access.
//
// Where things live:
//   - write.go, modify.go: inserts, and Modify, the one read-modify-write
//     path of updates, replaces and deletes (TTL passes use it too);
//     docvalidation.go: document validation inside both (package validation).
//   - output.go: the writes of $out (a temporary collection renamed over
//     the target) and $merge.
//   - indexes.go: index maintenance inside every write; ddl_index.go and
//     indexbuild.go: createIndexes and the background build over existing
//     documents; collmod.go: index changes (hidden, expireAfterSeconds, prepareUnique,
//     conversion to unique) and
//     the validation options; validate.go: the validate command's check of
//     documents against their indexes.
//   - read.go: point reads by _id; reader.go: a [Reader] gives a query plan
//     one snapshot and the catalog that matches it, and its [Cursor]s walk
//     documents in _id order or index entries.
//   - ttl.go: finding expired documents (package ttl decides when).
//   - versioning.go: versioned collections' options and the version field;
//     history.go: the versions every write of a versioned document records
//     (keyspaces h and v); history_read.go: the $versions scan and
//     CheckHistory; history_asof.go: reads as of a cluster time;
//     history_iters.go: the open iterators as-of point reads reuse;
//     history_prune.go: retention (package history decides when);
//     history_revert.go: revertDocument.
//   - capped.go, capped_ddl.go: capped collections' insertion order and
//     limits, the awaitData wakeup, convertToCapped and
//     cloneCollectionAsCapped.
//   - oplog.go: the change log local.oplog.rs, one entry per change in the
//     change's own request (invariant "Change and entry commit together"),
//     its size cap and the ts seek; rider.go: riders, writes that commit in
//     the request of the write they describe (a retryable write's record).
//   - txn.go: multi-document transactions over storage.Transaction
//     (invariants "Statements on the pipeline" and "Catalog as of the
//     snapshot"): statements, the one applyOps entry and the versions'
//     times at commit; txn_ddl.go: create and createIndexes in a
//     transaction ("Creation commits with the transaction"); txn_prepare.go:
//     prepared transactions (two-phase commit's participant; invariant
//     "Prepared survives": a durable record, restored after a restart, ended
//     only by its commit or abort).
//   - snapshot_history.go: held storage snapshots for reads of plain
//     collections at a cluster time (invariant "A held view is exact from
//     its time"); snapshot_prepared.go: reads and transactions at a
//     cluster time (BeginAt) against prepared transactions (invariant "A
//     read at T sees a prepared commit iff its commitTimestamp ≤ T").
//   - stats.go, indexusage.go, ops.go: collStats figures, $indexStats
//     counters and the currentOp registry, all in memory.
//   - check.go, invariants.go: CheckIndexes, and the runtime checks that
//     builds with the invariants tag run after every commit group
//     ("Indexes follow documents" and "Tail bound" over the keys the group
//     touched; see verifyGroup).
//
// Invariant "Clustered by _id": a document lives at DocKey(collID,
// keystring(_id)), so _id uniqueness is one point read inside the pipeline
// and a scan in key order is a scan in _id order.
//
// Invariant "_id first": stored documents begin with their _id field, as
// MongoDB stores them; a missing _id is generated (an ObjectId) on insert.
//
// Invariant "Top-level scan agrees" (document.go, scanTop): an inserted
// document and an update's new one are checked for storage in one walk of
// their top-level elements (well formed, _id once, first; for an insert,
// the depth of each container too), which accepts a document only
// when bsoncore's Validate would and counts what countKey, LookupErr and
// idIsFirst count; a document it refuses takes bsoncore's walks, so the
// replies are bsoncore's (TestScanTopAgrees, TestScanTopCases).
//
// Invariant "Indexes follow documents" (indexes.go): a write changes a
// document and all its index entries in one request, so every index holds
// exactly the entries its documents produce (CheckIndexes verifies it).
//
// Invariant "Tail bound" (write.go): an insert above its collection's
// greatest document key skips the uniqueness read; every path that makes
// document keys goes through insertOne or putPlain, which keep the bound.
// The reads a batch insert does need are made first, in one ascending pass
// over its keys (prefetchIDs, storage's "Prefetched answers hold for the
// request"), and each document's check then answers from them after the
// request's own writes (a duplicate _id within the batch is still refused).
//
// Invariant "Plain puts need no read" (rider.go): PutInTxn into a
// server-owned collection with no options, no index but _id's and no oplog
// entries (config.transactions: a retryable write's record) sets the
// document's key without reading it first, since inserting and replacing
// there store the same bytes and nothing else; it keeps the tail bound as
// insertOne does. Builds with the invariants tag check that such a
// collection is neither capped, versioned nor keeping pre-images;
// TestPutPlain checks a put against what the read-first path stores.
//
// Invariant "Valid on commit" (docvalidation.go): every document a write stores
// — inserts, upserts, updates and replacements, findAndModify, $out's
// temporary collection and $merge — is checked against its collection's
// validator as the working catalog holds it when the request applies, by
// insertOne and applyAction, the only two places a document is stored. A
// concurrent collMod is therefore ordered with the writes: a write applied
// after it (in the same group or a later one) obeys the new rules.
// Validation is skipped only when the write asks for it
// (bypassDocumentValidation), by validationLevel "off", and, under
// "moderate", for an update of a document that already fails.
// TestValidOnCommit (a validator set earlier in the same request) and
// TestValidOnCommitRace (writers racing the collMod) check it.
//
// Invariant "Capped within limits" (capped.go): a capped collection's
// meta record says exactly how many documents it holds and their total
// BSON size, every document has one forward order record (by insertion
// sequence, with the document's size) and one reverse record naming each
// other, and after every request count ≤ max and size ≤ the size cap plus
// what updates grew its documents by since the last insert (MongoDB 7.0
// lets an update grow a capped document and trims at the next insert);
// one document always stays (a document larger than the cap is refused
// at insert, but collMod may lower the cap below the newest one).
// insertOne enforces it in the request that inserts, the only path that
// creates documents: the document is stored, then the oldest documents
// are removed with their index entries and order records, under one
// savepoint, so the insert and its evictions commit together or not at
// all; Modify's deletes and replacements keep the counts; collMod's
// cappedSize and cappedMax trim in their own request (MongoDB waits for
// the next insert). verifyCapped checks it under the invariants tag;
// TestCappedLimits (against a model, with deletes and growing updates)
// and TestCappedRace (writers racing) test it.
//
// Invariant "History follows documents" (history.go): every write of a
// document of a versioned collection — insertOne and applyAction, the only
// two places a document is stored or removed, and the collMod that turns
// versioning on — records the version it makes (a tombstone for a delete)
// with its version key in the same request, so the history holds each
// document's versions contiguously, the newest one being the document
// itself. Indexes index only the documents. CheckHistory verifies it (and
// the validate command with it);
// TestHistoryCrashKeepsVersions checks it after power cuts.
//
// Invariant "Pooled views are short-lived" (history_iters.go): an iterator
// kept for as-of point reads serves only times it saw committed, lives at
// most asOfIterAge, and is closed before the engine closes or its store is
// restored. TestAsOfItersPool checks it.
//
// Invariant "A reused Op is a new operation" (ops.go): a connection begins
// each command in one Op of its own (Ops.BeginIn); killOp, a session's
// Interrupt and currentOp, which may still hold it from an ended command,
// act on and list an operation only while it has the id they found, so a
// kill never reaches the next command and currentOp never lists an ended
// one. TestReusedOpIsNew checks it, the interleaving held in place and at
// random under -race.
//
// Invariant "A Modify's request from a pool" (modify.go): ModifyWith's
// state and the function its pipeline request runs (a method value bound
// once per pooled modifyRun) are reused from one call to the next; the
// request begins by zeroing the result, and ModifyWith zeroes the rest
// before returning it to the pool, once the pipeline is done with it
// (storage's submit waits for the request). TestModifyRequestsFromPool
// checks under -race that no result carries anything of an earlier one
// (it fails with the result's zeroing dropped).
//
// Invariant "Builds see current documents" (indexbuild.go): an index build
// reads each batch inside its pipeline request, so concurrent writes need no
// side table.
//
// # On a pipelined replica set member (the audit)
//
// A member's pipeline proposes group k+1 while group k replicates
// (storage's "Pipelined groups"): a request may run before the groups
// ahead of it are applied to Pebble, or even committed, and they may still
// fail. What the engine reads while it writes, and why each is right then:
//
// Invariant "Writes read the request's view": every read a write's
// decision rests on goes through its storage.Txn — the _id and unique
// index checks (write.go, indexes.go), Modify's read of the current
// document, the capped meta and order records, the versions a versioned
// write replaces (history.go), an index build's batch (indexbuild.go),
// the oplog trim's scan, and a transaction's commit-time comparison of
// every written key (storage's "First writer wins", which reads nothing
// only when the request is the first of an empty batch and nothing
// became visible since the snapshot: its view is then the snapshot) — so
// it sees every group ahead, applied or not. storage's "Reads through the request"
// panics, in builds with the invariants tag, on a direct store read from
// a running request; the engine's tests and the commands' invariants
// tests run with none.
//
// Invariant "Published state waits": what a group publishes at Committed
// — the catalog, multikey flags included (an index's first array value
// changes the working catalog) — is never ahead of or behind the groups
// around it: a group that changes the catalog (catalog.Changing, storage's
// Hooks.Publishes) is proposed only once every group in flight completed,
// and the next group applies only once it completed; the other groups'
// Committing and Committed leave the published catalog as it is.
//
// Invariant "Memory ahead of the log is only conservative": state the
// pipeline goroutine keeps across requests runs ahead of what the set
// committed and survives a failed chain only where that errs safe — a
// tail bound raised by an insert that then failed only costs a later
// insert its uniqueness read ("Tail bound"; Promote forgets the bounds
// when another primary wrote); sequential ids and cluster times a failed
// group took are skipped, never reissued (idgen, storage's Tick); the
// oplog's running size counts a failed group's entries until the next
// open (a trim may come early); the history horizon cache is raised
// before its prune commits (a read refuses early). Everything else is
// reset by storage's Hooks.Failed after a chain failed.
//
// Invariant "Times rise in log order": cluster times are taken on the
// pipeline goroutine in the order groups apply, which is their log
// order, each group's highest is in its own records (storage's "Cluster
// time survives restart"), and a member raises LastCommitted to a group's
// time once the group is applied, never lowering it: so the oplog's keys
// are in commit order and every entry at or below LastCommitted is
// visible (ReadOplog's horizon), on the primary as on a secondary.
//
// Invariant "Wakeups per group": each group's awaitData marks are sealed
// at its Committing into a queue and fired at its own Committed (wakeup),
// so a tailable cursor is never woken for a group still in flight and
// then left asleep when that group lands.
//
// Reads that serve clients (Reader, Get, ReadOplog, validate, TTL's scan,
// a session's records at checkout, the sequential id start timestamp
// read at Promote) read the applied state directly: on a member it holds
// only committed groups, and a write is acknowledged only once applied.
//
// State kept by the engine across requests (tail bounds, parsed specs,
// access counters) is keyed by collection or index id; ids are never reused
// ("Ids are never reused", package catalog), and the entries of dropped ids
// are forgotten when the catalog change commits.
package engine
