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
// compared with config.databases' version (StaleDbVersion, 249). A batched
// write (insert, update, delete) answers either as mongod does: ok: 1,
// n: 0, and the error as the write error of its first statement (ordered)
// or of every statement (unordered), errInfo included, since the version
// is checked before any statement runs (commands.staleWriteReply).
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
//
// # Migrations
//
// The donor (_shardsvrMoveRange, one at a time per shard) records a
// coordinator document, notes its newest oplog ts, and starts the
// recipient (_recvChunkStart), which clears leftovers of the range,
// records a pending range deletion, copies the donor's indexes and then
// pulls: _migrateClone batches (the range's documents, read through the
// shard key's index between the range's bounds, scan.go) and _transferMods
// batches (the _ids the donor's oplog shows
// changed in the collection since that ts, sent as the documents are now,
// or as deleted). The recipient applies both idempotently — a document
// replaces its copy, a deleted _id removes the copy in the range — so a
// clone that saw some later writes is harmless. When a _transferMods
// batch comes back empty the recipient is steady; the donor then enters
// the critical section: it takes the collection's gate exclusively (the
// writes in flight finish, with their oplog entries) and later writes
// wait. _recvChunkCommit makes the recipient drain once more after the
// request (nothing can change any more) and answer done; the donor commits
// on the config servers (_configsvrCommitChunkMigration, majority
// writes), refreshes its map, and ends the critical section: the waiting
// writes see the new version and answer StaleConfig, so the router sends
// them to the recipient. The donor then records its range for deletion
// and tells the recipient the range is its own.
//
// Invariant "Nothing lost, nothing twice": every write to the collection
// either finished before the critical section began — its oplog entry is
// then before the final drain, which sends the document's final state —
// or runs after it, on the owner the config servers name. Applying is
// idempotent (current documents, not operations), so a change seen by
// both the clone and a _transferMods batch counts once.
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
//   - Writes with a shardVersion (multi-document updates and deletes) do
//     not filter orphans yet: they may change a copy the range deleter
//     removes later.
//   - _shardsvrMoveRange moves whole chunks: both min and max are needed;
//     a range given by min alone is not split by size yet.
//   - The config server part runs on every replica set member (the router's
//     --configsvr should gate it); the balancer runs on a primary that is
//     not a shard and holds at least two config.shards entries.
//   - A pending recipient range whose donor is unreachable stays (as
//     orphans) until the donor answers again.
//   - A chunk of a versioned collection (issue #23) does not move
//     (IllegalOperation, versioned.go): migrations copy documents, not
//     their history, and would restart each history at version 1.
package shardsvr
