// Package shardsvr is a server's part in a sharded cluster on the shard
// side: the shard identity (_addShard), the filtering metadata and the
// shard version checks of every command (commands.Sharding.Admit), chunk
// migrations as donor and recipient, the range deleter and the recovery
// of interrupted migrations; and, on the config servers, the commit of a
// migration (_configsvrCommitChunkMigration) and the balancer loop. The
// routing rules themselves (maps, versions, targeting, the balancer's
// plan) are package shard's; the router and the config server's metadata
// commands are not here.
//
// A Node reaches its own server through Options.Local (the same command
// path as a client's: writes replicate and are logged) and other members
// through package memberclient (server packages do not import the
// driver). With a keyFile (Options.Key) every connection to another member
// authenticates as __system, and the server's Local runs as __system too
// (commands.InternalSession), so access control lets a migration, a
// refresh or a commit do what it must, as MongoDB's internal client.
//
// # Shard versions
//
// A command carrying shardVersion ({e, t, v}, shard.ShardVersion) runs only
// when it names this shard's version of the collection: the same epoch
// and timestamp and the same major version of the greatest chunk this
// shard owns (zero when it owns none; {0, 0, 0} for a collection the
// config servers do not list), as MongoDB's isWriteCompatibleWith. On a
// mismatch the shard refreshes its map from the config servers once
// (config.collections and config.chunks, through a primary of
// configsvrConnectionString) and judges again; still different, it answers
// StaleConfig (13388) with ns, vReceived, vWanted and shardId, at the
// reply's top level as mongod does and in errInfo. databaseVersion is
// compared with the database's version as config.databases last gave it
// (StaleDbVersion, 249; dbversion.go, MongoDB's DatabaseShardingState):
// cached per database, read again when a command carries another one (a
// router that knows a newer version makes the shard catch up; an older one
// is refused). A batched
// write (insert, update, delete) answers either as mongod does: ok: 1,
// n: 0, and the error as the write error of its first statement (ordered)
// or of every statement (unordered), errInfo included, since the version
// is checked before any statement runs (commands.staleWriteReply).
//
// Invariant "Database versions are the config servers'": a command is
// admitted by a cached database version only while config.databases holds
// that version, unless this shard has begun dropping the database since.
// The operations that change config.databases' entry of an existing
// database are the router's dropDatabase, which drops on the shards before
// it removes the entry, and (not yet in Cairn) movePrimary. A drop on the
// shard (Node.Dropped, called by the drop and dropDatabase commands before
// they run) forgets the cached version and marks the dropped incarnation
// (its uuid; dropMark): until the config servers list another incarnation
// or none, a command is judged by reading them, never by the cache, so a
// router that missed the drop is refused once the entry is gone. The same
// mark keeps a dropped sharded collection's routing table from admitting
// the old shardVersion (collMeta). A collection's routing table is cached
// likewise (collMeta): read again when a command's shardVersion differs,
// after a migration's commit (the donor), and on
// _flushRoutingTableCacheUpdates, which a router sends to the collection's
// shards after shardCollection and refineCollectionShardKey, so that a
// shard that cached it unsharded (or by its old epoch) refuses another
// router's version from before. Built with -tags invariants, every
// admission by a cached database version reads config.databases and
// panics (invariants.Violation) when they differ; make invariants runs
// TestDatabaseVersionCache and the stale-router wire test so built.
//
// # Orphans
//
// A read that carries a shardVersion of a sharded collection (find and its
// getMores, count, distinct, aggregate, explain of them) returns only the
// documents of chunks this shard owns: Admit hands the command layer the
// ownership test of the same routing table it judged the version by, and
// the plan applies it as MongoDB's SHARDING_FILTER stage (explain shows it
// with chunkSkips). Orphans — a received copy before its commit, a
// donated range before its deletion, a document written to the shard
// directly — are never seen through a router. A read without a
// shardVersion (a client talking to the shard) sees them, as on mongod.
// Updates, deletes and findAndModify that carry a shardVersion leave
// orphans alone by the same test.
//
// # Migrations
//
// The donor (_shardsvrMoveRange, one at a time per shard) records a
// coordinator document, notes its newest oplog ts, and starts the
// recipient (_recvChunkStart), which clears leftovers of the range,
// records a pending range deletion, creates the collection with the
// donor's options (default collation, validator, idGenerator) if it has
// none here, copies the donor's indexes and then
// pulls: _migrateClone batches (the range's documents, read through the
// shard key's index between the range's bounds, scan.go) and _transferMods
// batches (the _ids the donor's oplog shows
// changed in the collection since that ts, sent as the documents are now,
// or as deleted). The recipient applies both idempotently — a document
// replaces its copy, a deleted _id removes the copy in the range — so a
// clone that saw some later writes is harmless. When a _transferMods
// batch comes back empty the recipient is steady; the donor then enters
// the critical section — or earlier, while the recipient still catches
// up, once the changes not yet sent are estimated under
// maxCatchUpPercentageBeforeBlockingWrites (10 %, MongoDB's default) of
// the chunk size, so that writers faster than the recipient's apply
// cannot keep a move from ending (the critical section drains the rest;
// TestMigrationCatchUpUnderWrites). The critical section: later writes wait from the moment it asks, and it
// begins once the collection's gate has no holders — the writes in flight
// (which finish, with their oplog entries) and the open transactions that
// wrote the collection here, prepared or not, which commit or abort first.
// It waits at most migrationLockAcquisitionMaxWaitMS (500 ms by default, a
// server parameter as mongod's); past it the migration fails with
// LockTimeout, the chunk stays, and the waiting writes go on.
// _recvChunkCommit makes the recipient drain once more after the request
// (nothing can change any more), begin its own critical section (its
// writes to the collection wait) and answer done; the donor commits on the
// config servers (_configsvrCommitChunkMigration, majority writes),
// refreshes its map, and ends the critical section: the waiting writes
// see the new version and answer StaleConfig, so the router sends them to
// the recipient. The donor then records its range for deletion and tells
// the recipient the range is its own (_recvChunkReleaseCritSec), which
// reloads its map and ends its critical section; an abort ends it too,
// and so does a minute without word from the donor.
//
// The donor records each migration's end in config.changelog ("moveChunk.from",
// note "success" or "aborted" with its errmsg; donor.go's logMigration),
// which sh.status() reads as its migration results.
//
// Each _transferMods batch also carries the retryable-write records of
// the sessions whose writes it shows (sessions.go), which the recipient
// installs, so that a retry reaching it after the move is answered from
// the record rather than run again.
//
// Invariant "Writes hold the gate": a write to a collection holds the
// collection's migration gate on this shard (collMeta) from its admission
// to its end, and a transaction's write holds it until the transaction
// commits or aborts (engine.Txn.Hold, taken by the command layer, as
// mongod's transactions keep their collection locks); a critical section
// begins only with no holders. So a transaction that wrote into a
// migrating chunk either commits before the critical section begins (its
// commit's oplog entry before the final drain) or the migration gives up;
// it can never commit on the donor after the recipient's last drain, to
// be deleted with the donor's range. TestCriticalSectionGate,
// TestCriticalSectionLockTimeout, TestMigrationCriticalSection.
//
// Invariant "Nothing lost, nothing twice": every write to the collection
// either finished before the critical section began — its oplog entry is
// then before the final drain, which sends the document's final state —
// or runs after it, on the owner the config servers name. Applying is
// idempotent (current documents, not operations), so a change seen by
// both the clone and a _transferMods batch counts once. A write that
// carries a shardVersion changes only documents of chunks the shard owns
// by the map its version was judged by (the SHARDING_FILTER of its
// reads, exec.Env.Owning), so a write sent to several shards (multi, or
// the router's write by _id alone, which finds the owner first) changes
// the owners' documents and not a migration's copies as well; and no shard
// judges a write by a map older than the commit once the commit is made
// (both critical sections end after a refresh).
//
// Invariant "One owner": config.chunks alone says who owns a range; its
// migrated chunk document is written in one write (the donor's version
// bump after it), so a range has one owner whatever dies when. A shard
// deletes documents only of a range it does not own there (deleteTaskRange
// checks), and only once the migration that could give it that range is
// decided: the donor's range after the commit is known; the recipient's
// copy when the donor aborts, or — if the recipient missed the word —
// once the donor has forgotten the migration's coordinator.
//
// A duplicate _id (or unique key) that the clone or the catch-up finds on
// the recipient outside the range fails the migration with
// MigrationConflict (272) naming the key: two shards hold one _id, which a
// migration must not silently drop or overwrite.
//
// A versioned collection's chunk moves with its documents' histories
// (versioned.go): the clone and the catch-up send each document's versions
// verbatim (numbers, validFrom, ops; the version field continues on the
// recipient), a deleted document's history goes with the range of its
// last live version's shard key, and every range deletion purges
// histories whole (no tombstones), so an aborted migration leaves no
// history on the recipient and a committed one none on the donor.
//
// Recovery: after a restart the donor resolves each coordinator document
// by the config servers' map — committed: record the range deletion and
// release the recipient; not: abort the recipient. A commit whose reply
// was lost is decided the same way; while the outcome is unknown the
// critical section stays (writes wait rather than land on a shard that may
// no longer own their range).
//
// # Two-phase commit
//
// A transaction that wrote on several shards commits through its first
// writer, which coordinates (coordinator.go, coordinateCommitTransaction):
// it records the participants in config.transaction_coordinators,
// prepares every participant (prepareTransaction; package session and
// engine hold the prepared transaction durably), writes its decision
// there (invariant "Decision before delivery"), delivers it until every
// participant acknowledged, and deletes the record. Recovery resumes
// recorded coordinations on a primary. A coordinateCommitTransaction for
// a transaction no longer recorded answers from this shard's own
// participant (its config.transactions record).
//
// # Reading a range
//
// A migration's clone, the range deleter and the balancer's chunk sizes
// read a range through the shard key's index (find with hint, min and max:
// the shard key's bounds extended by MinKey over the index's further
// fields), so they cost the range, not the collection. The index is one
// whose key pattern starts with the shard key (the _id index for {_id:
// 1}), neither sparse, partial, hidden nor collated, as shardCollection
// creates it. A donor without one refuses to move a chunk (IndexNotFound,
// as mongod); the range deleter and the chunk sizes fall back to a
// collection scan, so that orphans still go.
//
// # Deviations from MongoDB and not yet
//
//   - count without a query filters orphans too (mongod's count of a
//     whole collection reads its record count, orphans included).
//   - _shardsvrMoveRange moves whole chunks: both min and max are needed;
//     a range given by min alone is not split by size yet.
//   - The config server part runs on every replica set member (the router's
//     --configsvr should gate it); the balancer runs on a primary that is
//     not a shard and holds at least two config.shards entries.
//   - A pending recipient range whose donor is unreachable stays (as
//     orphans) until the donor answers again.
//   - Retryable writes' history moves with a chunk only for the sessions
//     that wrote the collection during the migration or in the minute
//     before it (sessions.go); mongod moves every session's.
//   - A prepared transaction rebuilt after a restart (RestorePrepared)
//     does not hold its collections' gates: a migration's critical
//     section does not wait for it.
//   - shardCollection and refineCollectionShardKey are the router's, not a
//     coordinator's on the primary shard: the router holds the shards'
//     critical section itself (_shardsvrParticipantBlock, ddlblock.go)
//     from before its config write until they reloaded, and a block whose
//     router died ends after 30 s on its own (mongod's is recorded and
//     resumed by the coordinator). movePrimary does not exist yet; it must drop the database's cached
//     version on the old primary (Node.Dropped's mark) before it changes
//     config.databases.
//   - A drop run on a shard directly (not through a router) of a
//     database the config servers still list leaves its mark: the shard
//     reads config.databases for that database on every command until
//     the config servers list another incarnation or none.
package shardsvr
