// Package replset makes a Cairn server a replica set member: it wires the
// commit pipeline to the Raft node of package repl (which stays the
// consensus seam and knows nothing of MongoDB), keeps the replica set
// configuration, and answers the replica set's commands and hello fields
// for package commands (through commands.ReplicaSet). A standalone server
// has no Member, and its write path is untouched.
//
// # Commit groups as log entries
//
// Every commit group of internal/storage's pipeline is one Raft entry.
// On a member, storage's Hooks.Propose (installed by New through a request
// on the pipeline goroutine) receives each group's own records as a
// Pebble batch representation instead of the pipeline committing them.
// propose starts the entry on the primary (repl's Node.Start) and returns
// what waits until Raft committed it and this member applied it; on a
// member that is not the writable primary the group fails with
// NotWritablePrimary. The pipeline proposes the next groups meanwhile, on
// top of this one's writes (storage's "Pipelined groups"), each as a
// follower of the chain, which the node refuses once an earlier one failed
// or the term changed (repl's "Chained proposals"): no group reaches the
// log without every group whose writes it read. While the primary's own
// log is still writing (repl's Node.LogBusy, installed as storage's
// Hooks.LogBusy), the pipeline gathers the next group instead of
// proposing at once (storage's "Groups gather while the log syncs"), so
// a group carries every writer that arrived during the sync, as a
// standalone's does. An entry's payload is a
// flags byte (the group changed the catalog), the proposing pipeline's
// nonce, the primary's wall clock (unix ms) and the representation. Every
// member — the primary for its own groups too — applies committed entries
// the same way, on the node loop, in log order: storage's ApplyReplicated
// writes the batch and the entry's index in one Pebble batch (no sync:
// the Raft log is synced, and a restarted member replays it from the
// stored index). So the members' data cannot diverge, and a write is
// visible on the primary only once it is committed.
//
// Invariant "Own groups": the primary's pipeline waits for its groups
// while they are applied on the node loop; the apply tells its own groups
// by the nonce (rising by one per group from a random value per run; the
// groups in flight are the range [ownLo, ownHi]) and leaves the catalog
// to the pipeline's Committed hook, while a group of another primary (or
// its own group that outlived its proposal, after a lost leadership)
// publishes the catalog the store then holds (catalog.Reload). Failed
// proposals fail the group's requests: NotWritablePrimary when nothing
// was proposed, InterruptedDueToReplStateChange with the
// RetryableWriteError label when leadership was lost with the outcome
// unknown, or when the group followed one that failed (it is in no log,
// but the one before it may be).
//
// Invariant "Drained before writable": a new leader takes writes only
// once it applied its term's first entry (repl's RoleChange.Writable, so
// every earlier entry is in its store) and engine.Promote reset what the
// pipeline caches from the store (tail bounds) and restarted the
// sequential id generator above the persisted start timestamp; hello's
// isWritablePrimary turns true only then.
//
// Write concern: a group is acknowledged only once committed, that is on
// a majority of the voters' synced logs; so w: 1, w: "majority" and j are
// all satisfied on return (w: 1 is therefore as slow as majority: see
// "Not yet"), and a failover never undoes an acknowledged write (no
// rollback). w: N above the majority waits for N members' logs
// (repl.Node.Progress) up to wtimeout (writeConcernError
// WriteConcernFailed, errInfo.wtimeout); w above the number of members is
// UnsatisfiableWriteConcern and a tag mode UnknownReplWriteConcern,
// before the write runs. Read concerns local, available and majority read
// the applied state, which holds only committed groups, so majority reads
// never see what a failover could undo; linearizable (primary only) first
// waits for Raft's ReadIndex — a quorum confirms the read index, so no
// leader lease and no trust in clocks.
//
// # Members and their port
//
// Members talk on the same port as clients. A member's connection begins
// with repl's preamble ("CRft", version, sender, receiver, the sender's
// host:port), which no MongoDB message can begin with (its first four
// bytes are its little-endian length, and "CRft" would be over 1.9 GB);
// the server's accept loop peeks at four bytes and hands such connections
// to ServeMember. One port per member, as in MongoDB: the config's hosts
// are all a member needs to reach the others. Raft ids are member _id + 1.
//
// Joining: replSetInitiate on one member checks the configuration and
// that every other host accepts a TCP connection, bootstraps a Raft group
// of that member alone (configuration entries at index 1, see repl),
// campaigns until Raft takes the campaign (it refuses one while the
// bootstrap's entries are unapplied) and it leads — no election timeout
// passes (TestInitiateNeedsNoElectionTimeout) — and stores the configuration document through the
// log (key s/replset/config). The primary's reconcile loop then adds each
// other member as a Raft learner, promotes it to voter once its log is
// within a few entries of the commit index ("Learners first"), and
// removes members a reconfig dropped — one change at a time. A member
// that holds no state learns its id from the first connection the
// primary opens to it (the preamble's receiver), persists it
// (replset/member-id) and starts with an empty log, which the leader
// fills from index 1. A restarted member reads its id, its log and the
// stored configuration (for its peers' addresses) and resumes.
//
// Invariant "Configuration durable once applied": groups are applied to
// the store without a sync (the Raft log is their durable copy), but a
// group that changed the configuration is synced in the store before the
// member reads it (storage's SyncApplied, TestSyncAppliedSurvivesPowerCut),
// so a power cut of every member cannot take every member's knowledge of
// its peers' addresses, without which none could reach another to replay
// its log. rstest's TestPowerCutKeepsConfiguration cuts every member's
// power right after replSetInitiate and after a reconfig, restarts them
// unable to reach each other, and finds each holding its configuration
// (it fails with SyncApplied a no-op).
//
// Invariant "Member files durable before use": a member's files are on
// its engine's filesystem (engine.Options.FS; files.go lists them), and a
// directory it creates (replset/, replset/snapshots/) is synced into its
// parent before anything in it is relied on, as the id file's rename and
// a received checkpoint's are: the checkpoint the log's snapshot names
// survives a power cut (TestPowerCutThenSnapshotCatchUp fails when the
// snapshots directory is created without the sync: the new primary cannot
// send the snapshot a member needs; TestPowerCutDuringSnapshotInstall
// when a received checkpoint's is: a member cut mid-install cannot
// restart).
//
// # Snapshots
//
// The Raft log is bounded (repl's "Bounded log"): every member checkpoints
// its store (storage.Checkpoint, hard links) and truncates its log after
// Options.CompactEntries entries (default 20,000, a quarter kept behind
// the snapshot) or CompactBytes of groups (256 MiB). A member behind the
// leader's truncation point, or a new one, is sent the newest snapshot:
// its data is the checkpoint's name, and the checkpoint's files follow
// the MsgSnap on the member connection (repl.SnapshotStreamer). The
// receiver stores them under Dir/replset/snapshots/<name> (a temporary
// directory, every file synced, renamed when whole), Raft persists the
// snapshot in the log, and Restore replaces the store's contents with the
// checkpoint's (storage.RestoreCheckpoint, whose first synced batch
// deletes everything, the applied index with it, and whose last writes
// the snapshot's index): a member killed during the install restarts with
// its log's snapshot above its store's applied index and installs again
// (storage's invariant "Restore is redone until whole";
// TestReplicaSetSnapshotCatchUp kills one so). The two newest checkpoints
// stay on each member; the log's snapshot names one of them, which the
// member sends if it leads later and restores from if it died before its
// applied groups reached disk.
//
// A member catching up — a voter that is still a Raft learner, or one
// installing a snapshot — is in STARTUP2, as a member in MongoDB's initial
// sync: replSetGetStatus shows it so, its hello says neither primary nor
// secondary, and it refuses reads (NotPrimaryOrSecondary), so nobody reads
// its partial store.
//
// replSetInitiate on a member holding data is allowed, as in MongoDB: its
// data becomes the set's. The data is in no log entry, so Initiate
// snapshots it before it stores the configuration, and every member added
// later starts from a snapshot holding it (a member's own data, as in
// MongoDB's initial sync, is replaced).
//
// # In one process
//
// Options.Transport, Clock, JoinAs and Dial replace the TCP transport, the
// real clock, the id a joining member learns from its first connection
// and the reachability checks: package rstest starts whole members (an
// engine each) in one test process over repl's faulty Network with manual
// clocks, with the helpers WaitForPrimary, Partition, Heal, Kill, Restart,
// Pause, Resume and SkewClock, and compares the members' stores
// (TestFaultsKeepAcknowledgedWrites). With each member's engine on a
// crashable in-memory filesystem, rstest's PowerCut keeps only what a
// member synced (TestPowerCut*: acknowledged writes, the configuration
// and the snapshots survive power cuts of one member or all at once).
//
// # Configuration
//
// MongoDB's document, with what Cairn cannot honour refused
// (InvalidReplicaSetConfig 93) rather than ignored: members have votes 1
// and priority 1, or votes 0 and priority 0 (a Raft learner; hidden
// allowed); no arbiters, delays, tags or buildIndexes: false;
// settings.electionTimeoutMillis and heartbeatIntervalMillis are Raft's
// election timeout and heartbeat, 1000 and 100 ms (MongoDB's default
// election timeout is 10000): other values are refused for now, since a
// joining member starts its node before it holds the configuration;
// chainingAllowed is accepted (the leader replicates to all); other
// settings are refused. configsvr: true marks a sharded cluster's config
// servers: it must match the members' --configsvr (Options.ConfigSvr), and
// their hello says configsvr: 2. replSetGetConfig shows only fields that
// replSetReconfig accepts back, so rs.add() and rs.remove() work.
// Reconfig: on the primary, a higher version, the same name, this member
// in it, the _id of a host unchanged, and at most one voter added or
// removed (NewReplicaSetConfigurationIncompatible 103), and a majority of
// the new configuration's voters answering (MongoDB's quorum check:
// members of the Raft group heard from within the election timeout, new
// ones accepting a connection; else NodeNotFound 74 and nothing changes);
// force is refused.
//
// replSetStepDown freezes the primary for its seconds (repl.Node.Freeze:
// it sends no vote requests) and transfers leadership to the most
// caught-up recently active voter (Raft's leadership transfer), waiting up
// to secondaryCatchUpPeriodSecs; replSetFreeze freezes a secondary.
//
// # Not yet
//
//   - w: 1 acknowledged before majority commit (it waits for commit, a
//     stronger guarantee at majority's latency).
//   - Read concerns snapshot and afterClusterTime (refused);
//     maxStalenessSeconds is the drivers' (they read lastWrite).
//   - opTimes in hello and replSetGetStatus are a stand-in: {ts:
//     (primary's wall second, low 32 bits of the Raft index), t: term};
//     they should be the applied group's cluster time (storage's
//     LastCommitted), which the oplog's ts already is. Sessions and
//     retryable writes work (their records replicate in the write's
//     group); only the primary flushes the session table.
//   - Member health seen from secondaries (replSetGetStatus on a
//     secondary shows the others UNKNOWN), priorities, and an index
//     build resumed by a new primary (one started at open on a secondary
//     would write locally).
//   - A member's writes made before New installs the hook (engine.Open's
//     start-timestamp record, --document-id-unique-prefix) are local to
//     it; they touch only the s/ keyspace.
package replset
