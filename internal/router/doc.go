// Package router is a mongos: `cairn router --configdb <set>/<hosts>`
// accepts MongoDB clients, reads the cluster's metadata from the config
// servers (a replica set holding the config database in MongoDB 7.0's
// shape: config.shards, databases, collections, chunks, tags, version,
// settings), caches the routing table, and routes each command to the
// shards that own its documents, merging their answers. It keeps no
// durable state: any number of routers may serve one cluster.
//
// # Routing
//
// A collection's routing is its config.collections entry and chunks,
// rebuilt into a shard.Map (route.go, catalog.go); an unsharded collection
// lives on its database's primary shard. Every command sent to a shard
// carries shardVersion (MongoDB 7.0's {e, t, v}, shard.ShardVersion) and,
// for an unsharded collection, databaseVersion; a shard answering
// StaleConfig (13388) or StaleDbVersion (249) makes the router drop its
// cached entry and run the whole operation again (Router.retry, at most
// five times) — except a batched write, which sends again only the
// statements not answered yet (a shard's StaleConfig for the command, or
// per statement as a write error at its index): a statement runs once on
// each shard that answered it (writeResult.done). Every shard takes
// versions: addShard refuses a server not started with --shardsvr (it
// refuses the shard identity).
//
// Reads: find, count, distinct and aggregate go to the shards their filter
// (aggregate: its leading $match) targets by the shard key (shard.Map.
// Target: equality, $in and ranges; hashed keys by equality), everything
// else scatters. A command runs under its own collation or, without one,
// the sharded collection's default (config.collections'
// defaultCollation, which shardCollection records; it needs collation:
// {locale: "simple"} for such a collection, BadValue otherwise, as
// mongos): chunks are ranges of the simple order, so under a collation
// that is not simple a filter with a string in it goes to every shard
// (reads, and the statements of updates, deletes and findAndModify),
// sorted streams merge in the collation's order, and distinct counts
// values equal under it once. Several shards' cursors
// are merged by the sort key (agg.MergeSorted) or concatenated; skip and limit are pushed down as
// limit = skip+limit and applied again at the router. Aggregation splits
// with agg.Split: the shards run the streaming prefix and a $sort (with
// its following $limit) or a $group emitting partial states (needsMerge),
// the router the rest (the $group merging them, $doingMerge). A pipeline
// reaching one shard runs there whole, unless it reads other collections
// ($lookup, $unionWith, $graphLookup: the router's half reads them from
// their owners) or writes one from a sharded collection. getMore and killCursors act
// on the router's cursors, which hold the shards' cursors. $collStats
// runs on every shard owning a chunk (an unsharded collection: its
// primary), each document naming its shard (ns, shard, host, localTime,
// then the statistics asked for, as the shard answers them: mongos's
// shape, which getShardDistribution reads), the rest of the pipeline at
// the router over them. Collectionless aggregation, {aggregate: 1}
// (cmd_collectionless.go): $currentOp on admin merges every shard's
// operations, each with its shard and its opid as "<shard>:<opid>";
// $listLocalSessions lists the router's own session table ({},
// {allUsers: true}, {users}; under access control another user's
// sessions need listSessions on the cluster); $documents runs at the
// router, its $lookup and $unionWith reading their collections from their
// owners. A stage that needs a collection is refused with InvalidNamespace
// (73), as mongos; the rest of the pipeline runs at the router
// (TestRouterSurface in the root package, TestListLocalSessionsAccess;
// test/smoke's TestClientsSharded walks every mongosh sh.* helper). explain answers
// in mongos's shape: queryPlanner.winningPlan.stage SINGLE_SHARD,
// SHARD_MERGE or SHARD_MERGE_SORT, with each shard's plan under shards.
//
// Writes: inserts go by each document's shard key. When the shard key
// reads _id, the router gives a document without one an ObjectId first
// (so its shard key and a retry see the same id); otherwise the shard
// makes it by the collection's idGenerator, and the reply's generatedIds
// are passed on in the client's numbering. Sequential ids stay unique in
// the cluster: addShard gives every shard its own documentIdUniquePrefix
// (kept when no other shard holds it, recorded in config.shards), and
// shardCollection creates the collection with the primary's options
// (idGenerator, validator, collation) on every shard given chunks. An
// ordered insert is sent as runs of consecutive
// documents for one shard, an unordered one as one batch per shard at
// once. update and delete follow MongoDB 7.0's targeting rules: a multi
// statement goes to every targeted shard; a single one needs one target by
// the shard key or an equality on _id, or is refused (update:
// InvalidOptions 72; delete: ShardKeyNotFound 61; findAndModify:
// ShardKeyNotFound 61), the message naming the 7.0 feature left out (its
// write without shard key for any other filter). A single update, delete
// or findAndModify by _id without the shard key runs in two phases, as
// 7.0's: a find of the document on the targeted shards, each with its
// version (orphans left out), then the write on its owner alone with the
// same version (ownerOf) — so a migration's copy is never changed too, and
// a chunk that moves in between makes both phases run again. No document:
// n = 0 (findAndModify: the first shard answers). Upserts and replacements
// by _id alone still need the shard key.
//
// # What a targeted command costs
//
// A command that reaches one shard is one round trip on the client's
// connection and one on a pooled shard connection; the router's own work
// between them is kept to what routing needs: the command's session,
// targeting and paging fields are read in one pass over its body
// (request.arg's index, TestRequestArgMatchesLookup), the session's lsid
// for the shards is made once per session (routerSession.lsid), the
// command for the shard is the client's elements copied once with the
// router's appended, in a reused buffer (toShardSeq), a single-shard find
// whose cursor is exhausted passes the shard's reply on as it came, and a
// single batch of writes is sent without a goroutine. What is left is
// mostly the system calls and wake-ups of the second hop, which no
// separate process avoids: BENCHMARKS.md's "Router overhead against the
// proxy floor" measures a process that only forwards messages by their
// headers (`cairn bench --floor proxy`) against the router.
//
// # Sessions, retryable writes and transactions
//
// hello advertises logicalSessionTimeoutMinutes, so drivers send an lsid
// with every command and a txnNumber with retryable writes. The router
// keeps a table of sessions (sessions.go: startSession, refreshSessions,
// endSessions, killSessions; unused ones are forgotten after 30 minutes)
// and passes a data command's session on to every shard it reaches (the
// command's opSession travels in its context to toShardSeq and to its
// cursors' getMore and killCursors). A retryable write's statements go to
// their shards with the client's txnNumber and stmtIds, their positions
// in the client's batch, under which each shard's session table records
// them: a retry — the driver's after a router or shard failure, or the
// router's own after StaleConfig or a lost primary, with the same
// txnNumber — answers the statements that ran from their records.
// Transactions (transactions.go) start on each participant shard with its
// first statement (startTransaction, the transaction's readConcern); a
// failed statement aborts them on every participant; commitTransaction
// commits the single participant, or the read-only participants and then
// the one that wrote; every statement's reply carries a recoveryToken, by
// which a commit reaching another router (or this one restarted) still
// commits where the transaction wrote.
//
// Read timestamps (snapshot.go): readConcern snapshot reads every shard
// at one atClusterTime — a snapshot transaction's, chosen at its first
// statement (the client's, else the newest cluster time a shard answered
// the router) and sent with startTransaction to each participant; and
// find, aggregate and distinct's outside a transaction, answered as
// atClusterTime, their getMores continuing on the shards' cursors at it
// (invariant "One read time per snapshot").
//
// # Metadata commands
//
// addShard (which sends the shard MongoDB's _addShard with its
// shardIdentity {shardName, clusterId, configsvrConnectionString}),
// listShards, removeShard (draining state and progress), enableSharding,
// shardCollection (ranged, compound, hashed with presplit: two chunks per
// shard for an empty collection), refineCollectionShardKey (both hold a
// critical section on the collection's shards, _shardsvrParticipantBlock,
// from before their config write until they sent
// _flushRoutingTableCacheUpdates to those shards, which cache routing
// tables: package shardsvr, so that another router's write from before the
// change waits and is then refused), split
// (middle; find and bounds at the chunk's median, read from its shard),
// mergeChunks, addShardToZone, removeShardFromZone,
// updateZoneKeyRange, balancerStart/Stop/Status (config.settings),
// balancerCollectionStatus (cmd_sh.go), setAllowMigrations
// (config.collections' permitMigrations: false stops moveChunk, the
// balancer and the config servers' commit of a migration) and
// flushRouterConfig run on the router itself, writing the config database
// with majority write concern. moveChunk and moveRange are checked here
// and handed to the donor shard's _shardsvrMoveRange.
//
// # Access control
//
// With a keyFile (Options.Key, `cairn router --keyFile`) the router, as
// mongos, reaches every member as __system (package memberclient: SCRAM-
// SHA-256 with the key as the password) and requires its own clients to
// authenticate: SCRAM (saslStart/saslContinue, hello's
// speculativeAuthenticate and saslSupportedMechs) against the cluster's
// users, which live on the config servers (their admin.system.users and
// admin.system.roles) and which user and role commands through the router
// change there (auth.go). Every command is checked before it runs with the
// servers' own rules (commands.Authorize over privileges.go; the router's
// own commands have theirs in routerRules), the localhost exception
// included; a cursor continues only for the user who opened it. Users
// changed elsewhere (another router, the config servers directly) are read
// again at each authentication and every 30 s, as mongos's user cache.
// Shard-local users (made on a shard directly) stay the shard's.
//
// With TLS (Options.Listener, `cairn router --tlsMode`), clients connect as
// to mongod (package tlsconn); under preferTLS and requireTLS every
// connection to a member is TLS too (Options.TLS), presenting the router's
// certificate. With an audit log (Options.Audit, `cairn router
// --auditDestination`), the router audits its clients as a server does
// (audit.go). Not yet: x.509 member authentication
// (clusterAuthMode x509; the keyFile is the one member identity), and the
// role-to-role commands (grantRolesToRole, revokeRolesFromRole,
// dropAllRolesFromDatabase), which the servers do not have either.
//
// # Invariants
//
// "Routing comes from the config servers": the router's cache holds only
// copies of config documents; every metadata command writes the config
// servers first and then drops the cached entry.
//
// "A chunk change never routes by a broken map": chunk documents change
// one write at a time, so a reader may see an overlap or a gap in between;
// shard.MapFromConfig refuses such a map (invariant "Chunks tile the key
// space") and the cache reads again until the change is complete.
//
// "One read time per snapshot": every shard a snapshot transaction or a
// snapshot read reaches reads at the same atClusterTime (snapshot.go);
// each shard reads exactly at it (engine's "A held view is exact from its
// time" and "A read at T sees a prepared commit iff its commitTimestamp ≤
// T"), or refuses. TestRouterSnapshotBank.
//
// # Deviations from MongoDB and not yet
//
//   - The metadata commands run on the router against the config
//     servers, not as _configsvr* commands on the config primary. Routers
//     serialize them per collection with a lock document in config.locks
//     (ddllock.go; LockBusy 46 after 30 s; taken over after 2 minutes, so
//     a moveChunk running longer than that no longer holds it), and a
//     chunk change is several config writes rather than one config
//     transaction.
//   - A transaction that wrote on two or more shards commits by two-phase
//     commit (coordinateCommitTransaction to the first shard that wrote;
//     package shardsvr's coordinator.go), but the read-only participants
//     are not part of it: the router commits them after the decision
//     (their outcome changes nothing). A snapshot read the router chose
//     the time of and a shard cannot serve (SnapshotUnavailable: a
//     prepared commit applied there after its commitTimestamp; engine's
//     snapshot_prepared.go) is read again at a later time outside a
//     transaction; in one, mongos retries the first statement itself, the
//     router leaves it to the driver (TransientTransactionError). A StaleConfig in a
//     transaction aborts it with TransientTransactionError even on its
//     first statement (mongos retries that one itself). The
//     recoveryToken names the first shard that wrote (the coordinator)
//     and the shards that wrote: a router that did not run the
//     transaction commits it on its one writer, or asks the coordinator
//     for the outcome of one that wrote on several.
//   - A sorted find over several shards with a projection has the shards
//     send whole documents and projects at the router (MongoDB has the
//     shards add $sortKey instead); with a positional, $elemMatch or $meta
//     projection, which need the shard's match, the projection stays on
//     the shards and a sort field it drops is merged as missing.
//   - split by find or bounds reads every shard key of the chunk's shard
//     (of its first field's range) to find the median, where MongoDB's
//     shard answers splitVector.
//   - A single update, delete or findAndModify whose filter has neither
//     the shard key nor an equality on _id (7.0's write without shard key
//     for any filter), and an upsert by _id alone, are refused (Writes,
//     above); by _id alone they run in two phases.
//   - Collectionless aggregation: $currentOp with localOps (the router's
//     own operations: it keeps no list of them), $changeStream over a
//     database or the cluster, $listCatalog and the other collectionless
//     stages, explain of a collectionless pipeline, and let in one are
//     refused (InvalidOptions 72); $out or $merge after a collectionless
//     or $collStats stage likewise. $listLocalSessions' records carry no
//     user field (the table keeps the uid only).
//   - balancerCollectionStatus answers by the balancer's own plan
//     (shard.Plan over the shards' chunk sizes): "draining" or
//     "chunksImbalance", never "zoneViolation" (the balancer's plan has no
//     zones) or "defragmentingChunks".
//   - setAllowMigrations waits for a moveChunk through a router (both hold
//     the collection's DDL lock) but not for a balancer migration: one
//     that began before fails at its commit instead.
//   - The auto-merger is not there: its settings (config.settings
//     {_id: "automerge"}, config.collections' enableAutoMerge) are refused
//     as writes through the router (InvalidOptions 72); addShard records
//     {_id: "automerge", enabled: false} in config.settings, so that
//     sh.isAutoMergerEnabled() and sh.status() say so.
//   - Refused by name (CommandNotSupported 115, cmd_sh.go), not as unknown
//     commands: movePrimary, reshardCollection and its commit and abort,
//     configureCollectionBalancing (per-collection chunk size, the
//     auto-merger, defragmentation) and checkMetadataConsistency.
//     MongoDB 8.0's moveCollection and unshardCollection are
//     CommandNotFound, as on a 7.0 mongos.
//
// # movePrimary: the design not built yet
//
// movePrimary {movePrimary: db, to: shard} moves a database's unsharded
// collections to another shard and makes it the primary. It needs, on the
// shard side, what Cairn has only per collection: (1) a database critical
// section on the old primary — a _shardsvrParticipantBlock for a
// database: writes and DDL carrying the database's databaseVersion wait
// (the migration gate's rule: writes in flight and open transactions
// finish first, bounded by migrationLockAcquisitionMaxWaitMS); (2) a
// cloner, _shardsvrMovePrimary on the old primary driving the new one:
// for each unsharded collection (listCollections on the old primary,
// views and time series buckets included) create it with its options and
// indexes, copy its documents, and, since writes are blocked, no
// catch-up is needed — it is copied once, inside the critical section
// (MongoDB 7.0 does the same: movePrimary blocks writes for the whole
// copy); (3) the commit: the router (holding the DDL lock of the database,
// which shardCollection, drop and create through the router would then
// take too) writes config.databases {primary: to, version: lastMod+1}
// with majority write concern; (4) the old primary refreshes its database
// version (dbversion.go reads config.databases) before it ends the
// critical section, so the waiting writes answer StaleDbVersion and their
// routers send them to the new primary; (5) the old primary drops its
// copies, after the commit only, as the donor's range deletion. A failure
// before (3) aborts: the new primary drops what it cloned, the block
// ends, nothing changed. Sharded collections stay where their chunks are.
// Tests would be: a movePrimary under a concurrent insert load through
// two routers (every acknowledged document found once, on the new
// primary), and a kill -9 of the old primary, of the new one and of the
// router at each step (the database readable and writable afterwards,
// on one primary). Until then movePrimary is refused and removeShard of a
// database's primary says so.
package router
