// Package failpoint owns Cairn's named fail points: places in the server
// where a test makes an operation fail, pause or misbehave on demand, as
// MongoDB's configureFailPoint does. A [Registry] holds the points of one
// server (an engine and the commands over it); each [Point] has a mode
// (off, alwaysOn, times n, skip n, activation probability p) and an opaque
// data document (BSON) that the code at the point interprets.
//
// Points defined today:
//   - "failCommand" (package commands): MongoDB's command fail point.
//   - "createBackupPauseAfterFiles" (package commands): createBackup holds
//     after its files are written, before it replies.
//   - "failGetMoreAfterCursorCheckout" (package commands): a getMore fails
//     after checking its cursor out, and the cursor is deleted.
//   - "onPrimaryTransactionalWrite" (package commands): in the commit of a
//     retryable-write statement, closes the connection and/or fails the
//     statement before it commits.
//   - "configsvrCommitChunkMigrationPartial" (package shardsvr, on a
//     config server): a migration's commit stops after the donor's
//     version bump, before the moved chunk's write.
//   - "hangBeforeEnteringCriticalSection" and
//     "hangBeforeLeavingCriticalSection" (package shardsvr, on a donor): a
//     migration holds once its recipient is steady, before its critical
//     section asks to begin; and inside it, after the commit and the
//     refresh, before the writes it held go on.
//   - "moveChunkHangAtStep1" … "moveChunkHangAtStep6" (package shardsvr,
//     on a donor): a migration holds at one of its six steps as MongoDB
//     numbers them (shardsvr.MoveChunkHangAtStepFailPoints).
//   - "hangInCommitChunkMigration" (package shardsvr, on a config
//     server): _configsvrCommitChunkMigration holds before its first write.
//   - "hangBeforeFlushRoutingTable" (package shardsvr): a shard's
//     _flushRoutingTableCacheUpdates holds before it reloads the table.
//   - [StorageFailBeforeCommit] (package storage): a commit group fails
//     before its batch is committed and synced, as a failed WAL sync would.
//   - [StorageFailAfterCommit] (package storage): a commit group commits
//     and syncs, then every request in it is answered with an error.
//
// Invariant "Off is one load": checking a point that is off (or nil) costs
// one atomic load and takes no lock, so points may sit on hot paths such as
// the commit pipeline.
//
// Invariant "Match before count": a point's optional filter runs before the
// mode counts an evaluation, so {times: n} fires on n matching evaluations,
// as MongoDB's FailPoint::shouldFail with a predicate does.
package failpoint
