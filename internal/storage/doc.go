// Package storage owns Cairn's use of Pebble: the keyspaces every key lives
// in, the commit pipeline every write goes through, and snapshot reads.
//
// It knows nothing of BSON, collections or indexes; callers hand it byte keys
// built with the keyspace helpers in keys.go.
//
// # Keyspaces
//
// Every key starts with one byte naming its keyspace, then uvarint ids:
//
//	d <collID> <keystring(_id)>            → document BSON
//	i <indexID> <keys…> [<keystring(_id)>] → empty, or _id for a unique index
//	n <collID> <kind> <…>                  → a capped collection's insertion order
//	h <collID> <keystring(_id)> <^validFrom> <^version> → a versioned document's version
//	v <collID> <keystring(_id)> <^version> → that version's validFrom
//	m <…>                                  → catalog records
//	s <…>                                  → sequences, server parameters, format marker
//	r <session> <txnNumber> <stmtId>       → a retryable write's statement result (package session)
//	o <ts>                                 → an oplog entry (package engine, oplog.go)
//
// Invariant "Prefix-free ids": a uvarint never is a prefix of another uvarint,
// so [Prefix(space, id), PrefixEnd(Prefix(space, id))) holds exactly the keys
// of one collection or index, and dropping it is one range deletion.
//
// Invariant "One object per table": no Pebble table holds keys of two
// keyspace objects (two collections, a collection and an index, documents
// and the catalog); flushes and compactions cut their output at object ends
// (pebbleOptions). So rising keys appended to one collection never land
// inside an older table's range, and the LSM moves their tables down
// without rewriting them.
//
// Invariant "Oplog values written once": the oplog keyspace's values of
// 256 bytes or more go, at the flush that first writes them, into blob
// files that compactions do not rewrite (they carry the references
// forward); the oplog's tables hold keys and references only. Every other
// keyspace keeps its values in its tables, so a document read never takes
// a second read (oplogValueSeparation). TestOplogValuesWrittenOnce.
//
// Invariant "The floor's Pebble is the store's": OpenPebble (the bench's
// Pebble floor) opens Pebble with exactly the options, cache size and log
// filesystem Open gives a store's Pebble, from the same defaults; both go
// through pebbleOptions and pebbleFS. TestOpenPebbleOptionsAreTheStores.
//
// # Commit pipeline
//
// Writes are functions submitted to [DB.Write]. One goroutine applies them in
// submission order into a Pebble indexed batch, then commits the group with a
// single sync and only then acknowledges every request in it.
//
// Invariant "Serial apply": request functions run one at a time, in order, on
// the pipeline goroutine; a request reads every earlier group's writes plus
// every earlier request of its group, so read-check-write (unique keys)
// needs no locks.
//
// Invariant "Overlapped sync": while a completer goroutine waits for group
// k's log sync, the pipeline goroutine applies group k+1's requests into its
// batch (they read group k's writes, visible though not yet synced); it
// commits group k+1's batch only after group k is synced, published
// (Hooks.Committed) and acknowledged. So groups are acknowledged in order,
// each only after its own sync, and if group k's sync fails, group k+1 never
// reaches Pebble (its requests get the StoppedError and Hooks.Failed resets
// what they advanced). A group whose Committing hook reports published state
// (a catalog change) is completed before the next group is applied at all,
// and so is every group in builds with the invariants tag that verify
// (Hooks.Verify reads what the next group's requests would change).
//
// Invariant "Bounded group": a group gathers waiting requests only until
// its batch holds maxGroupBytes (a quarter of a memtable, groupBytes), so
// a group's batch is at most that plus its last request's writes: bulk
// inserts from many clients commit in several groups instead of one batch
// that Pebble would turn into a memtable of its own, and the heap holds
// at most two such batches (the one syncing, the one applying), which
// keeps the process within the cache plus HeapLimit's Go memory limit
// during a batched load. TestGroupBytesBound; the root package's
// TestServeMemoryBound checks the process's peak RSS under such a load.
//
// Invariant "Group buffers reused" (spare.go): a standalone store's group
// whose batch buffer is larger than Pebble's batch pool keeps (1 MiB:
// a load's groups, each of up to maxGroupBytes) gives it, once its batch
// is synced and closed, to the next group expected as large, which
// starts its batch on it instead of allocating its own. A buffer is given
// only when nothing else can read it: never one Pebble took (a batch of
// half a memtable or more becomes a flushable batch that reads its
// buffer until it is flushed, and leaves the batch without one), one of
// 1 MiB or less (Pebble's pool keeps those for its next batch), one
// handed to Hooks.Replicate or Propose, or one the log writer may still
// read (only a failover WAL keeps a reference past the commit; the store
// configures none). Bounded: at most one buffer waits between groups
// (the spare), of at most a memtable's size (64 MiB at most), and none
// once a group expected under 1 MiB came (a store left idle right after
// a load keeps its spare until its next writes).
// TestGroupBufferReused (a buffer goes round, none is kept past a small
// group), TestSpareBounded, TestGroupBufferOwnership (a flushable batch's
// records read through an iterator after the next large groups, and the
// store's Pebble options have no failover WAL).
//
// Invariant "All or nothing per request": a request's writes join the group
// only if its function returns nil; [Txn.Savepoint] and [Txn.RollbackTo] give
// the same guarantee to parts of a request (one document of a batch insert).
//
// Invariant "Durable acknowledgement": with the default SyncAlways, Write
// returns nil only after the group's WAL record is synced.
//
// Invariant "Tables written in large writes" (tablewrite.go): a table
// file's writes, and a blob file's (the oplog's separated values), which
// Pebble's flushes and compactions make a block (~4 KiB) per call through
// a 4 KiB bufio.Writer, reach the file gathered into writes of up to
// 256 KiB; every call that must find the bytes in
// the file (Sync, SyncData, SyncTo, Close, Stat, Read, ReadAt, WriteAt)
// writes what is gathered first, so a table is whole once Pebble syncs
// it, before it enters the LSM. Other files (the log, the manifest) pass
// through. TestTableWritesGathered (writes that reach the file after
// each call, and the bytes the file holds). A closed file's 256 KiB
// buffer serves the next table's; a store keeps at most four
// (TestTableBuffersReused).
//
// Invariant "Log syncs overwrite" (logahead.go): while the log's syncs
// are small (a moving average under 64 KiB each: single updates, not a
// bulk load), the log file (an operating system's; in-memory filesystems
// are left alone) holds written blocks ahead of its writer
// (zeros, written 1 MiB at a time before the writer reaches them, never
// below its offset), so an fdatasync writes the records alone instead of
// also the file's new size and extents (one metadata write per MiB of log
// instead of one per sync; Pebble appends to new logs, and to recycled
// ones past their old size, which its first small memtables keep small).
// A log ending in zeros recovers as a preallocated one: Pebble stops at
// the first zeroed chunk. TestLogSyncsOverwrite (file sizes, and a power
// cut keeping any part of the unsynced bytes loses no acknowledged write).
// A replica set member's Raft log, its own Pebble instance synced once per
// append, writes its log so too (LogAheadFS, package replset).
//
// Invariant "Written before acknowledged": in the interval mode
// (Options.SyncInterval), Write returns nil only after the group's WAL
// record is written to the operating system, so a process crash (kill -9)
// loses no acknowledged write; the log is synced every interval, so a power
// cut loses at most the writes acknowledged since the last completed sync
// ([DB.SyncedBefore]). The commit still asks Pebble for a sync; walFS makes
// the log file's sync return at once and DB.syncLoop does the real one.
//
// Invariant "Unsynced log is one block": in the interval mode, the log is
// synced before Pebble's writer starts a new 32 KiB block of it, so only
// the last block can hold unsynced bytes. Pebble stamps log chunks with the
// offset it believes synced, which walFS makes run ahead of the disk; with
// unsynced bytes in two blocks, a power cut that kept the later block and
// lost part of the earlier one would read as corruption and the store
// would not open (walFile.Write).
//
// Invariant "Stop on a failed log": once the disk fails a write or a sync of
// the WAL, no later write is accepted: each gets a [StoppedError] (MongoDB
// code ManualInterventionRequired, or OutOfDiskSpace when the disk was full)
// until the process restarts and recovers from what the disk holds. A failed
// fsync may have dropped the pages it could not write, so the log can no
// longer be trusted with acknowledgements (MongoDB ends the process there;
// Cairn keeps serving reads and says why writes fail). The failed group's
// requests are not acknowledged, though Pebble already made them visible
// and they may survive. Before that, a disk short of space refuses writes
// with ErrDiskFull (OutOfDiskSpace) while its free space is below
// Options.MinFreeBytes, and accepts them again once space is freed.
//
// Invariant "Closed once": every [Iter] and [Snapshot] is closed exactly
// once (a second Close would hand Pebble's pooled iterator back twice).
// Builds with the invariants tag (package invariants) panic on a second
// Close and log where each reader left open at [DB.Close] was opened; they
// also tell [Txn.OnPipeline] truthfully and pass each group's touched keys
// to [Hooks.Verify].
//
// Invariant "Cluster time survives restart": a request takes cluster times
// for its changes with [Txn.Tick] (package hlc: strictly rising); a group
// that took any writes the highest of them under s/clusterTime in its own
// batch, so it is durable exactly when the changes stamped with it are, and
// [Open] raises the clock to it: no time used by a durable change is issued
// again, whatever the wall clock did meanwhile. [DB.LastCommitted] is the
// highest time of an acknowledged group. TestClusterTimeSurvivesRestart
// (clean close and power cut); builds with the invariants tag also check
// that each group's time rises above the last committed one.
//
// # Transactions
//
// [DB.Begin] opens a multi-statement [Transaction]: a Pebble snapshot plus
// the transaction's own writes, kept in memory (an indexed batch that only
// orders them, and a map of each key's latest write). Statements run with
// [Transaction.Run] against the same [Txn] API as pipeline requests; Commit
// replays the write set in one pipeline request.
//
// Invariant "Snapshot isolation": a transaction reads the store as of
// Begin plus its own writes, never a change committed since; an iterator
// shows its own writes made before it opened (mergeIter: the two inputs
// never share a key). Reads are not validated at commit, so write skew is
// possible, as under MongoDB's snapshot isolation. TestTransaction-
// MergedViewModel (random writes and walks against a model).
//
// Invariant "First writer wins": a statement's write to a key that another
// open transaction wrote, or whose committed value differs from the
// snapshot's, fails with ErrWriteConflict at once; at commit every written
// key is compared with the snapshot again inside the pipeline request
// (requests run one at a time), so a commit never overwrites a change made
// after its snapshot. Values are compared, so a key changed and changed
// back to the same bytes does not conflict: the transaction's write is
// then as if it had begun after that change. Unlike MongoDB, a write
// outside any transaction does not wait for a transaction holding the key:
// it goes first and the transaction fails at commit. While nothing became
// visible in the store since the snapshot ("Shared view current"'s
// seqlock has not moved), the committed values are the snapshot's, so a
// statement claims its keys without reading them, and a commit whose
// request is the first of its group (nothing else in its batch, no group
// in flight on it) compares nothing; the snapshot values a later check
// needs are read then. Builds with the invariants tag do the skipped
// reads and fail the invariant if they differ.
// TestTransactionConflicts, TestFirstWriterWinsUnchanged,
// TestFirstWriterWinsChecked (invariants).
//
// Invariant "Prepared holds its keys" (prepare.go): a prepared transaction
// (two-phase commit's participant) refuses every other write of its keys
// with ErrWriteConflict — plain requests and range deletions included —
// until it commits or aborts, so its commit cannot fail; the refusal
// ([PrepareConflictError]) names the key, and [DB.PreparedIn] tells readers which
// keys of a range are held, so that both wait for exactly those keys
// (package engine's prepare conflicts per document).
// TestPreparedHoldsKeys, TestPreparedIn.
//
// Invariant "Readers outlive the end": an iterator opened on a
// transaction's view stays readable after the transaction commits or
// aborts; its snapshot and write batch are released when the transaction
// has ended and its last iterator closed (a cursor may be closed after
// its session's transaction was aborted elsewhere). Transaction.Released
// reports that they were: only then may the Transaction's memory serve
// another (engine.BeginReusing, a session's next transaction), with the
// buffers its statements grew (Scratch: their Txn, the own-writes map and
// entries; TestScratchReuse); a point read (Get) of an ended transaction
// fails with ErrTransactionDone.
//
// Invariant "Cheap view": a transaction's view is a pebble.Snapshot shared
// with every transaction that began while no change became visible
// (invariant "Shared view current", shared_view.go: a seqlock every write
// path goes through, checked against Pebble's sequence numbers in builds
// with the invariants tag), so a read-only transaction of one point read
// pays one snapshot Get and two atomic adds, and the Snapshot.Close
// (Pebble reschedules compactions there) only when a newer snapshot
// replaced it and its last transaction ended. Every point read is a
// snapshot Get, which stops at the newest memtable or level holding the
// key: an iterator positioned for each read (sessions 8–10) was cheaper on
// a store of one memtable but seeks every memtable and level, and cost
// 2.4 times as many instructions as Gets once documents had versions in
// several memtables. Its iterators are the snapshot's.
// BENCHMARKS.md, "Read-only transactions on a shared snapshot" and
// "Transactions of two updates, session 11".
//
// Invariant "All or nothing per transaction": the whole write set, and
// what the caller adds in the same request (Commit's also: the session
// record, the change log entry), is one request of one group: durable and
// visible together or not at all. TestTransactionCommitDurable,
// TestTransactionStatementAtomic.
// Invariant "Replicated in order" (a replica set member, Hooks.Replicate
// or Hooks.Propose): a group is applied to Pebble only after the replica
// set committed it, by [DB.ApplyReplicated] in log order together with
// its log index. A group the set fails is not applied by the pipeline (it
// may still be applied later from the log, as a group of another primary
// would be). With Hooks.Replicate the pipeline hands one group at a time
// and applies the next group's requests only after the previous one is
// applied.
//
// Invariant "Replicated groups copied once": ApplyReplicated's batch is
// the group's records copied once into a buffer with the room Pebble
// reserves for the applied index's record (1 + 2×MaxVarintLen32 + key +
// value), so that Set never copies the batch into one twice its size —
// which it did for every group on every member while the room fell three
// bytes short (BENCHMARKS.md, "Replica sets, session 14").
// TestApplyReplicatedCopiesOnce (the batch keeps the copy's capacity).
//
// Invariant "Pipelined groups" (Hooks.Propose, replicate.go): the
// pipeline proposes group k+1 while group k replicates, up to maxInFlight
// groups. The groups of a chain share one indexed batch, each group's
// records appended to it in order, and each proposes only its own records
// (the batch's suffix since it began, under a header counting them); so a
// request reads, through its Txn, every earlier group's writes whether or
// not the member has applied them yet — exactly what the log holds before
// it, in log order. A chain starts on a fresh batch whenever no group is
// in flight (it may then read groups another primary made), and when its
// batch passes maxChainBatch; its batch starts with room for the last
// chain's bytes, so it does not grow by doubling to 8 MiB every time
// (TestChainBatchStartsWithRoom). A group's records are copied once, into
// a buffer with Hooks.ProposeRoom bytes of room before them for the
// set's headers, which the set proposes as it is (repl's "Payloads
// proposed in place"). A group proposed while its batch holds
// earlier groups says it follows them, and the set refuses it unless they
// all reached its log in this term (package repl's "Chained proposals").
// Groups complete, publish (Committed) and are acknowledged in order, on
// the completer goroutine. A group that changes what Committed publishes
// (Hooks.Publishes: the catalog) is proposed only once every group in
// flight completed, and the next group applies only once it completed.
// LastCommitted is raised, never lowered, by each applied group's time.
// TestPipelinedAppendsUnderFaults (package rstest) fails if a group reads
// a stale view.
//
// Invariant "Groups gather while the log syncs" (Hooks.LogBusy, a
// pipelined member): with a group in flight, the next group is not
// proposed while the set's log (the primary's own Raft log) still has
// something to write; the requests that arrive meanwhile join it, as a
// standalone's requests join the group behind the WAL sync in progress.
// A group proposed then would only queue behind that sync, and one entry
// costs each member one append, one acknowledgement and one apply where
// several would cost as many. With nothing in flight a group is proposed
// at once, so the wait ends: it waits only for groups that complete.
// TestGroupsGatherWhileLogBusy; repl's TestLogWrittenOffLoop checks
// LogBusy.
//
// Invariant "Chained groups fail together": once a group of a chain fails,
// every later group of the chain fails too (the set refuses what follows
// a failed proposal), the groups applied over it are refused without
// being proposed, and the pipeline waits for every group in flight, runs
// Hooks.Failed and starts a new chain before it applies another request;
// requests not yet applied then run afresh. Builds with the invariants tag
// panic if a group that follows a failed one is committed.
//
// Invariant "Failures counted before acknowledged": a group whose
// requests' writes were applied and are then answered with an error (its
// commit, replication or sync failed, or the fail points fired) raises
// DB.FailedGroups before any of its requests is woken; a request whose own
// function failed (its writes undone) does not. So whoever kept in-memory
// state that a request's writes advanced learns, by the time the request
// returns, that it may not trust it (package session's statement keys).
// TestFailedGroupsCounted.
//
// Invariant "Reads through the request": a request function reads the
// store only through its Txn, never with DB.Get, NewIter or NewSnapshot,
// which miss the earlier requests of its group and a pipelined member's
// groups in flight. Builds with the invariants tag panic on such a call
// from a running request (TestReadsThroughTheRequest). Reads outside
// requests (queries, a session's records at checkout) see the applied
// state, which on a member holds only committed groups.
//
// Invariant "Absent keys stop at the filters": Txn.Has (an insert's
// uniqueness check, whose key is usually absent) reads the store by a
// prefix seek that consults the bloom filters of every level, the bottom
// one's included, which Pebble's Get skips (it reads a data block of the
// bottom level's table for each absent key); it answers exactly what Get
// would. Builds with the invariants tag compare each answer with Get's
// and panic on a difference (TestHasMatchesGet).
//
// Invariant "Prefetched answers hold for the request": Txn.PrefetchHas
// reads whether each of a batch's keys is stored, in ascending order
// through one iterator (Pebble keeps each level's table open and moves
// forward from the previous key), and Has answers from that after the
// request's own writes. Neither the group's batch nor the store changes
// while a request runs (its writes join the batch when it returns;
// "Serial apply"), so the answer is the one a later seek would give; the
// answers are dropped when the request ends. Invariants builds compare
// every Has with Get as above. TestHasMatchesGet (each stanza prefetched
// too), TestPrefetchHasMatchesGet (randomized, seed printed).
//
// Invariant "Unflushed documents known" (unflushed.go): on a standalone
// store, every document key the group's batch or a memtable may hold is
// named by the unflushed set (a count per key hash, in a chunk per group,
// added before the request's writes join the batch; a chunk leaves once
// a flush that wrote its batch's first sequence number has ended). Has and
// PrefetchHas read a document key the set does not name from the tables
// alone (OnlyReadGuaranteedDurable), skipping the batch's and the
// memtables' skiplist seeks. The set answers "may hold" for a key an
// unflushed range deletion covers (a drop), for every key after a restart
// until what Pebble replayed is flushed, and for good once anything but
// the pipeline wrote to Pebble (a replica set member). Invariants builds
// compare each tables-only answer with the batch's and memtables'.
// TestUnflushedChunks, TestUnflushedKnown (randomized, seed printed).
// Invariant "Unflushed set bounded": the set names at most 2^18 keys (its
// Go memory under unflushedMaxBytes, 24 MiB; ~12 MiB measured); a group
// past that is marked, and the set answers "may hold" for every key until
// a flush writes the marked groups to tables. TestUnflushedBounded.
//
// Invariant "Restore is redone until whole" (a member installing a replica
// set snapshot, [DB.RestoreCheckpoint]): the store's contents are replaced
// by a checkpoint's in batches, the first (synced) deleting every key but
// the format marker, the applied index with it, the last (synced) writing
// the snapshot's index; a store that dies between them reopens with
// applied index 0, below its log's snapshot, and is restored again.
// TestRestoreCheckpoint.
//
// # Document cache
//
// [DB.Get] of a document's key (SpaceDocument) — a point read of the
// latest committed state, engine.Get's — goes through a cache of whole
// documents in front of Pebble's Get (doccache.go): a hit copies the
// stored bytes from one shard's entry instead of searching Pebble's
// memtables, table indexes and bloom filters (BENCHMARKS.md, "A document
// cache in front of Pebble's Get"). Snapshots, transactions, as-of and
// cluster-time reads and iterators read Pebble and never fill it; DB.Get's
// misses fill it, and a standalone store's group commit refreshes the
// entries of the documents it sets (changeRefreshing: after its batch is
// applied, with install's check, each with its last record's value), so
// a document read and then updated stays cached. A replica set member's
// apply ([DB.ApplyReplicated]) refreshes the documents it sets whose
// entries were fresh when it began ("keep cached what was cached"; it
// caches no document that was not): a primary's or secondary's document
// read, then updated, is read from the cache again
// (TestDocumentCacheInvalidation's replicated stanzas,
// TestApplyRefreshesWhatWasCached, TestDocumentCacheNeverStale's
// "replicated"). A standalone store's pipeline requests read documents
// their group has not written through it (invariant "Group reads through the cache", doccache.go;
// TestGroupReadsThroughCache): an update's read of its document.
//
// Invariant "Document cache exact": a hit returns the value Pebble holds
// for the key, so a reader never gets a version older than one any
// reader could already have seen, nor older than a write acknowledged
// before its read began. The protocol rides on "Shared view current"'s
// seqlock (shared_view.go), which every write path that makes changes
// visible in Pebble goes through (the pipeline's group commit and
// ApplyReplicated through visibility.changeRefreshing with the batch's
// records, a checkpoint restore through changeAll; there is no other:
// Cairn uses no ingestion, excise or compaction filter, and a member never rolls back
// what Raft committed). Writer: make gen odd; drop (mark stale: no read
// serves it), each under its shard's lock, the entry of every document
// key the batch sets, deletes or merges (every entry, for a range deletion reaching into the
// documents, a record of another kind, or a restore); apply the batch;
// make gen even. Reader: on a miss, read gen, then Pebble; install only
// if gen is still that even value, checked under the shard's lock in the
// same critical section as the insert. So: (1) an entry installed holds
// the value at gen g (the Pebble read began after every change up to g
// was applied, and no change began before the install, else gen moved);
// (2) a change begun after the install drops the entry under the same
// lock before its batch is visible, and one begun before it (gen moved
// since g was read) makes the install refuse — the classic race (miss,
// Pebble read of the old value, a writer commits and invalidates, the
// reader installs the old value) is the latter; (3) a hit that comes
// before a change's drop returns the value before the change, which is
// not visible yet (the apply follows the drop): no reader can have seen
// the newer one, and the change is not acknowledged (that follows its
// apply). A refresh (changeRefreshing, after the apply) is an install at
// the gen the change ended with of the value a noted key's last record in
// the batch sets (none when it deletes the key), the value the store
// holds at that gen: (1) again. Never an earlier record's: between two
// installs of one key a reader could hit the earlier version after
// reading the later one from Pebble.
// A gen that moved during a read costs only that read's install
// (serverStatus's "reads not cached for a concurrent write"). Builds with
// the invariants tag compare every hit with Pebble's own Get when gen did
// not move across the two and panic with the key on a difference.
// TestDocumentCacheInvalidation (one stanza per write kind),
// TestDocumentCacheInstallRace (the classic race, forced),
// TestDocumentCacheNeverStale (randomized writers and readers, seed
// printed), TestDocumentCacheExactChecked (invariants).
//
// Invariant "Document cache bounded": the cache holds at most
// Options.DocumentCacheSize bytes, split evenly over 64 shards, each
// charged the segments it has allocated (its entries' slabs: up to 64
// byte slices, together at most seven eighths of its share, allocated as
// the shard fills) plus a fixed overhead an entry for its index slot. An
// install that would pass the share, or that does not fit in the head
// segment's room, first reclaims the oldest segment (CLOCK's second
// chance: the entries hit since its last reclaim are slid to its front
// with their bit cleared, the others forgotten; it becomes the head);
// within two turns of the ring every entry is forgotten, so an install
// never loops. A document over a quarter of a shard's share (at most 64
// KiB), or an entry larger than a segment, is not cached. The size is
// taken out of the configured cache (Options.CacheSize: Pebble's block
// cache gets the rest; default an eighth, at most 1 GiB) and HeapLimit
// adds it to the Go memory limit, since the segments are Go memory: the
// process stays within the cache plus the same bounded overhead as
// before. The segments and the index hold no pointers, so the collector
// neither scans nor marks entries. A hit allocates nothing: it appends to
// the caller's dst as Pebble's Get did; an install allocates only a new
// segment. Builds with the invariants tag check the charge against the
// share after every change. TestDocumentCacheBounded,
// TestDocumentCacheUnit, TestDocumentCacheNoPointers.
//
// Invariant "Refresh in place": an install of a key whose entry is in the
// index — fresh, or stale (a write's drop keeps the slot in the index,
// marked, until its segment is reclaimed) — writes the new value into the
// entry's slot when it fits (an entry's span: its header, key, value and
// any room), so a document updated over and over, refreshed by each
// group's commit (changeRefreshing), appends nothing to the ring: the
// segments a shard allocates follow the documents it holds, not the
// updates it has seen (session 14's upd16 appended each refresh, and the
// ring grew to its budget, a gigabyte here: BENCHMARKS.md "Reverted at
// session 14's end"). A key cached for the first time appends; one grown
// past its slot moves once, with an eighth more room. The stale mark is
// checked by every read under the shard's lock, so "Document cache exact"
// holds as with a forgotten entry. TestDocumentCacheUnit (stanzas "a
// refresh that fits is written in place", "a grown document moves once"),
// TestDocumentCacheModel (refreshes in place, randomized against a map,
// seed printed), TestGroupRefreshInPlace (the pipeline's updates: the
// segments' bytes stay flat after the first round).
//
// Committed groups are the seam for later features: replication, change
// streams and version history observe them through [Hooks]. A group's
// writes become visible to readers inside its batch commit, before
// Committed runs; Committing runs just before that commit, so state
// published at Committed (the catalog) can tell readers a change is in
// flight.
package storage
