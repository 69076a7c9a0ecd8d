// Package session owns logical sessions, retryable writes and the
// transactions of sessions: the session
// table (lsid → last use, the command using it, the newest transaction
// number), its persisted form config.system.sessions, and the records of
// executed retryable-write statements (config.transactions and the
// statement results in storage's retry keyspace).
//
// # Sessions
//
// A session is named by its lsid, {id: UUID, uid: SHA-256 of the user},
// as MongoDB names it ([ID]). Every command that carries an lsid checks
// the session out of the [Table] for its duration ([Table.Checkout]), so
// the commands of one session run one at a time, as in MongoDB, and
// killSessions can interrupt the one running. A session unused for the
// logical session timeout (30 minutes, hello's
// logicalSessionTimeoutMinutes) expires; [Table.Flush] writes the table to
// config.system.sessions ({_id: lsid, lastUse}), with MongoDB's TTL index
// lsidTTLIndex on lastUse, so the TTL monitor removes expired records.
//
// # Retryable writes
//
// A write command with lsid and txnNumber executes each of its statements
// (stmtId = position in the batch, as mongod numbers them; or the stmtIds
// a router gives, the statements' positions in the client's batch:
// [Retry.UseStmtIDs]) at most once per session and transaction number. Invariant "Record rides the write":
// the record that statement s of txnNumber n ran — the key
// r <session key> <n> <s> with the statement's result, and the session's
// config.transactions document {_id: lsid, txnNum, lastWriteOpTime,
// lastWriteDate} — is written by [Retry.Record] inside the commit-pipeline
// request of the statement's own write (exec.Rider, engine rider.go). So a
// crash leaves both or neither, and a retry after restart finds the
// record and answers from it without running the statement again
// (TestRetryAfterCrash). A statement that failed leaves no record and
// runs again when retried, as in MongoDB.
//
// Invariant "Newest transaction wins": a txnNumber below the session's
// newest is TransactionTooOld (225); starting a newer one deletes the
// older one's statement records in the request of its first record.
//
// Invariant "Stale keys from memory": a new number's stale keys, the
// older numbers' statement keys its first Record deletes, come from the
// session's entry, not from an iterator over the store (one per
// retryable write: ~12 % of the server's CPU under single inserts), while
// the entry's keys are trusted: they are then exactly the session's keys
// an iterator would read (from recordsFrom on). They become trusted at a
// number's first Record (the deletions and the new keys in one request)
// and grow with its later Records; they are not trusted after a restart
// or a session's expiry (a new entry), a new primary's Forget or
// RestorePrepared (records written through another member: the table's
// gen), a migration's InstallRetryHistories, an undone Record (OnUndo), a
// failed commit group anywhere (storage's FailedGroups moved: "Failures
// counted before acknowledged"), or past maxKeptKeys keys; then the
// iterator reads them, and the next first Record makes them trusted
// again. recordsFrom itself rises to a number only once its first
// Record's group is known committed (settleClear), so keys a failed
// deletion left are read and deleted by the next number. Builds with the
// invariants tag compare the entry's keys with the iterator's at every
// use; TestStaleKeysFromMemory walks the cases.
//
// findAndModify's result is its images: MongoDB keeps a retried
// findAndModify's pre or post image in config.image_collection; Cairn
// keeps the images in the statement's record (its value in the retry
// keyspace), written in the same request, which needs no second
// collection and no oplog lookup.
//
// A session's newest retryable-write record moves with a migrated chunk
// (migrate.go: RetryHistories on the donor, InstallRetryHistories on the
// recipient, which keeps a newer number of its own), so that a retry
// reaching the chunk's new shard is answered from it.
//
// # Deviation from MongoDB
//
// A standalone mongod refuses every txnNumber (IllegalOperation, "Transaction
// numbers are only allowed on a replica set member or mongos"); Cairn's
// standalone accepts retryable writes (issue #18 asks standalone servers to
// support them: a deliberate superset). Multi-document transactions
// (autocommit: false) are refused there, as mongod refuses them.
//
// # Transactions
//
// txn.go: a session's multi-document transaction (replica-set members):
// its number and state (invariant "One transaction per number"), its
// engine.Txn, the commit's config.transactions record (invariant "Commit
// record rides the commit", which makes commitTransaction retryable across
// a failover), and transactionLifetimeLimitSeconds (AbortExpired). A
// session's next transaction reuses its last one's engine.Txn once that
// ended and nothing reads it (engine.BeginReusing: the command layer
// closes the session's transaction cursors first), so a read-only
// transaction allocates nothing of its own (BENCHMARKS.md, issue 19).
package session
