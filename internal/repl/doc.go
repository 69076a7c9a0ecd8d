// Package repl owns replication's foundation: a member of a Raft group
// (the node loop driving go.etcd.io/raft/v3's RawNode), the Raft log
// (segment files of entries, and a small Pebble instance for the rest),
// the transport between members and the clock a member takes.
// Package replset wires it into the server (commit groups as entries, the
// replica set commands); this package knows nothing of MongoDB. It writes
// no consensus of its own: elections, log matching, commitment,
// configuration changes and ReadIndex are the raft library's.
//
// # The node loop
//
// One goroutine per member ([Node]) owns the RawNode (PreVote and
// CheckQuorum on, ReadOnlySafe, proposals not forwarded: only the leader,
// the future primary, accepts writes, and asynchronous storage writes). It
// ticks from its [Clock], steps messages from its [Transport], sends each
// Ready's messages, applies its committed entries and hands its log
// writes to the node's appender goroutine ("Log written off the loop";
// a follower's, when the appender is idle, it writes itself: "Follower's
// log written on its loop"). [Node.Propose]
// returns once the payload is committed and applied on this member;
// [Node.ReadIndex] returns once this member has applied everything a
// quorum confirmed committed before the call; [Config.OnRoleChange]
// reports every change of role, term or leader (the future hello and
// topologyVersion).
//
// # The Raft log
//
// [LogStore] keeps the log in a directory of its own under the data
// directory, rather than in a keyspace of the data store: the entries in
// segment files of its own ("Entries in segments"), the rarely written
// state in a small Pebble instance. Why: the log's write pattern (append, sync, truncate the prefix
// in ranges) and its durability need (a sync per Ready, before messages
// go out) differ from the data's; with the state machine able to recover
// from the log, the data store can later apply with no sync of its own,
// and the log's WAL does not queue behind data compactions. The cost is
// that the applied index and the data are not in one batch: the state
// machine records its applied index in its own commits ([StateMachine]'s
// Applied), and the node replays the log from there.
//
// Pebble's keys: "h" the HardState, "s" the newest snapshot (its
// metadata, the configuration, and its data: the state itself for a small
// state machine, a descriptor for a [SnapshotStreamer]), "c" the
// configuration of the last applied configuration change, "t" where the
// log was truncated when Compact kept a tail of entries behind its
// snapshot (the index and term of the last deleted entry), "g" the
// sequence number of the first segment that belongs to the log (set with
// a snapshot that replaces the log). The entries are records in the
// segment files of entries/ (seglog.go: a length, a CRC-32C, the index
// and term, the marshalled entry).
//
// "Entries in segments": the entries are appended to a segment file and
// fdatasynced by the goroutine that saves them (the node's appender),
// with no hand-off to another goroutine: a Pebble batch commit with sync
// handed each append to Pebble's WAL writer goroutine and waited on its
// sync queue (two thread wake-ups per append on every member), then
// inserted every entry into a memtable and flushed it to tables later.
// A segment is read at open up to its first record that is zero (the
// zeros written ahead of the writer on a disk's file, so that a small
// append's fdatasync writes no new file size), runs past the file's end
// or fails its checksum: a torn tail, bytes written but not synced; every
// open appends to a new segment, so no record is ever written after a
// torn one, and a record that reads back was written whole. A new
// leader's entries that replace a conflicting tail are appended, never
// written over the old records: read in segment order, a record at or
// below the last index read replaces the entries from its index on. A
// Save writes its snapshot and its hard state (a new term or vote) to
// Pebble, synced, before its entries, so a crash between the two leaves
// a valid Raft state: the new term or vote with the log as it was (the
// append had not happened), never entries of a term the member's stored
// term is below. The hard state written so carries a commit index no
// higher than the last index durable before the Save's entries (the
// commit index of the moment may count them; Raft refuses to start with
// a commit index past the log's end, and the commit index is volatile
// anyway, "Commit index not stored"). A snapshot that replaces the log
// stores "g", the next segment's sequence number, in the same batch, and
// the segments below it are removed then (or at the next open, if the
// member stopped first): none of their entries can come back. Compact
// stores the snapshot and the truncation first, then removes the
// segments that hold only entries below the new first index (entries go
// to segments in index order, so they are the oldest ones). Upgrade: a
// log written by the versions that kept entries in Pebble ("e"+index) is
// migrated at open — its entries from the first index on are written to
// a segment and synced, then deleted from Pebble, synced; a member
// stopped between the two migrates again, from Pebble, over emptied
// segments. TestSegmentLog (appends rolling segments, a replaced tail
// across segments, compaction removing whole segments and only those, a
// snapshot replacing the log; each step checked after a reopen and after
// a crash keeping no unsynced byte), TestSegmentLogTornTail (seeded:
// an unsynced save after a crash keeping a random part of its bytes, then
// appends, then another crash), TestLogStoreMigratesPebbleEntries.
//
// # Invariants
//
// "Log durable before use": the entries, hard state and snapshot Raft
// asks a member to store (its MsgStorageAppends) are written (the hard
// state and snapshot in one Pebble batch, then the entries to their
// segment, "Entries in segments") and synced whenever anything is written
// (new entries, term or vote; a snapshot always), before any response that depends on them is
// delivered (an acknowledgement of an append, a vote, the member's own
// MsgStorageAppendResp) and before any of those entries is applied or a
// proposal acknowledged: Raft hands a member committed entries to apply
// only once its own log holds them durably. Raft may hand a member the
// acknowledgement of an append together with a newer leader's append that
// replaces the entries it acknowledges (both stepped before one Ready):
// acknowledgements of a term older than the stored hard state's are
// dropped, never delivered (TestDropStaleAcks; found by repl-faults, seeds
// 1811 and 1812, which failed on main 48e5018 too). LogStore's in-memory bounds
// change only after that write. Tested by TestLogStoreAppend-
// ReplaceReopen, TestLogWrittenOffLoop and by
// TestFaultScheduleKeepsAcknowledged, whose kills keep only a random part
// of every unsynced byte (Pebble's crashable in-memory file system).
//
// "Commit index not stored": the hard state is written only when its term
// or vote changes, or with a snapshot; a change of the commit index alone
// stays in memory (the commit index is volatile state in Raft: a
// restarted member learns it again from the leader, or from "Commit
// covers applied"). So an append that only commits writes nothing to the
// log, and the Pebble instance is written only on a term, vote,
// snapshot, configuration or truncation change.
// TestLogStoreCommitNotStored, and every restart test; checked after every
// save that writes under the invariants tag (the stored hard state has the
// term and vote of memory, and a commit index not above it).
//
// "Log written off the loop": the node runs Raft with AsyncStorageWrites.
// The node loop never waits for the log's sync: it sends a Ready's
// messages for other members at once (a leader's appends go out before
// its own write, raft thesis §10.2.1, so the followers' syncs overlap
// its own), hands the log's writes, in order, to one goroutine of the
// node's own (the appender; a follower with nothing in flight writes on
// its loop instead, "Follower's log written on its loop"), applies the committed entries Raft hands it,
// and meanwhile goes on stepping messages: a follower's acknowledgement
// of group k is stepped while the leader syncs group k+1, and with two
// followers' acknowledgements an entry commits before the leader's own
// sync returns (its apply still waits for that sync, "Log durable before
// use"). The appender writes every append queued behind its last sync in
// one batch and one sync — up to one that replaces entries of an earlier
// append (a new leader's), which is written by the next sync
// (TestAppendRun) — sends the responses for other members itself (a
// follower's acknowledgement leaves as soon as its entries are durable)
// and hands this member's own back to the loop. An append that writes
// nothing (a commit index alone) while the appender is idle is answered
// on the loop; a snapshot waits for the appender's earlier writes and is
// stored and restored on the loop ("Snapshot held before stepped").
// [Node.LogBusy] tells whether the log has something left to write
// (proposals started and not yet handed to the appender, appends not yet
// written): the replica set's commit pipeline gathers its next group
// while it has (storage's "Groups gather while the log syncs").
// TestLogWrittenOffLoop (the leader's log held from syncing: the entry
// commits, is not applied, and is acknowledged once the sync returns;
// LogBusy is busy from Start until that sync returned),
// TestJoinEntries, TestFaultScheduleKeepsAcknowledged and
// TestLinearizableKV.
//
// "Follower's log written on its loop": a member that does not lead
// writes and syncs an append on its node loop itself when its appender
// has nothing in flight (everything before it is then durable and its
// responses stepped), sends the acknowledgement once the sync returned and
// steps its own response at once: each append of a follower costs no
// hand-off to the appender and back (two goroutine wake-ups, which on a
// machine shared by three members were thread wake-ups). A follower's
// loop has little else to do meanwhile: the leader's next append waits in
// the transport's queue and is written with whatever else arrived, by the
// next sync, as the appender would have batched it; a committed entry
// is applied after the sync instead of during it. A leader always writes
// through its appender ("Log written off the loop": it steps its
// followers' acknowledgements and its next proposals while it syncs),
// and so does a member whose appender is still writing what it was
// handed as leader. While the loop syncs it answers no heartbeat: a
// write on the loop that took longer than a tenth of the election
// timeout (slowSync, 100 ms with the defaults) sends the follower's
// writes through its appender for the next ten seconds
// (slowSyncBackoff), so a stalled disk costs at most one such wait per
// backoff, not one per append (under load 21–23 on the shared machine a
// bench's primary lost leadership once with the loop writing every
// append, BENCHMARKS.md, "Replica sets, session 16"). "Log durable before use" is unchanged: the
// responses leave after the synced write, on the same code path as the
// appender's. TestFollowerLogWrittenOnLoop (with both followers' syncs
// held the entry does not commit; released, it commits, the followers'
// writes counted on their loops, the leader's on its appender),
// TestSlowLoopSyncBacksOff (after a sync held past slowSync the next
// appends go through the appender; both tests set the threshold through
// Config's unexported slowSync, so that a write slowed by a loaded machine
// does not start the backoff under them), and every cluster, fault and
// linearizability test.
//
// "Commit covers applied": a restarted member whose state machine applied
// past the commit index its log kept (the commit index is not stored on
// its own, and the state machine's own unsynced writes may reach the disk
// before the log's) raises the log's commit index to the applied one
// before Raft starts: only committed entries are applied. As the applied
// index is at or above the log's snapshot, so is the raised commit index,
// which Raft requires of a restart. TestRestartAppliedPast-
// Commit; found by the replica set's kill -9 soak.
//
// "Recent entries in memory": LogStore keeps the newest entries it wrote
// (up to a thousand, contiguous, ending at the last index) and answers
// Entries and Term from them when it can; they are the same entries the
// store holds, replaced as a new leader's entries replace the tail and
// dropped with a snapshot. A committed entry is applied, and a leader's
// append sent, without reading its segment; older entries are read from
// their segment (every entry's file and offset are kept in memory).
// Checked with "Contiguous log" under the invariants tag.
//
// "Entries encoded once into the batch": Save encodes each entry
// straight into the segment's write buffer after its record's header
// (sized by proto.Size; the buffer is kept from save to save), with no
// buffer of its own and no copy, keeps the sizes for the tail, and copies the hard state (which
// nearly every Ready carries, its commit index moved) field by field in
// one allocation rather than by proto.Clone's reflection. A member saves
// every group it replicates so: three entries cost Save 1 to 3
// allocations instead of 7 to 9 (BENCHMARKS.md, "Replica sets, session
// 14"). TestSaveEncodesInPlace (what is stored reads back, the tail's
// sizes, the allocations), TestCloneHardState; builds with the invariants
// tag decode every entry from its record's bytes and compare.
//
// "Chained proposals": [Node.Start] hands a proposal to the loop without
// waiting, so a caller proposes the next payload while the last one
// replicates. One started with follows continues the chain of the
// proposals before it, back to the last one started without: the loop
// refuses it (ErrChainBroken) unless every proposal of the chain was
// accepted into the log in the term it leads now and none failed since
// (refused, dropped, or lost with leadership). A caller that built a
// payload on the effects of the earlier ones (the replica set's commit
// pipeline) so never has a later payload in the log without every earlier
// one: within a term a leader's log is appended in order, and a term
// change breaks the chain. TestChainedProposals.
//
// "Payloads proposed in place": [Node.StartOwned] takes a payload that
// begins with [HeaderLen] bytes of room and writes the proposal header
// there, so the replica set's commit pipeline, which builds each group
// with room for this header and its own (storage's Hooks.ProposeRoom),
// proposes the group's bytes without copying them twice more (about
// 37 MB in 20 s on a busy primary, BENCHMARKS.md, "Replica sets, session
// 14"). TestChainedProposals (a payload proposed in place applies as
// itself; one with no room is refused).
//
// "Commit notices ride on appends": when the commit index moves, Raft
// sends every follower an append without entries that only tells it the
// new commit index; with pipelined groups this was half of a leader's
// frames, and each follower answered it. The leader holds such a notice
// (at most one per member, the newest) for up to a millisecond
// (noticeHold), or up to five while one of its proposals is pending
// (noticeHoldBusy: a busy set's next group usually leaves within that,
// where the millisecond let a third of the notices go out on their own
// under YCSB-A), and drops it when an append with entries leaves for that
// member first — that append carries the commit index of its moment, as
// high. Holding a message back is what a slow transport may do: no
// safety property depends on when a follower learns the commit index,
// and a held notice that nothing replaces leaves when its timer fires, so
// an idle set's followers apply within the millisecond (a busy one's
// within five), clocks or no clocks. Status counts the notices held and
// replaced. TestCommitNoticesRideOnAppends, TestNoticeHoldWhileBusy.
//
// "Contiguous log": the stored entries are exactly the indexes
// [first, last], no gap, nothing outside. Appends that would leave a gap
// are refused; a new leader's entries replace the conflicting tail.
// Checked in full at every open (every entry read back from its segment
// with its index, none left in Pebble) and at its bounds (the segments
// hold exactly [first, last], the first and last read back) after every
// save under the invariants tag, and in full by TestLogStore* and
// TestSegment*.
//
// "Truncate only below a snapshot": entries are deleted only up to the
// index of a stored snapshot that covers them. TestRestartCatchesUp
// (compact=true), TestLogStoreCompact and TestLogStoreCompactKeepsTail.
// The transport does not confirm delivery, so every snapshot sent is
// reported finished: the leader then probes, and a member that lost it is
// sent it again.
//
// "Bounded log": with Config.CompactEntries or CompactBytes set, the node
// snapshots its state machine at the applied index and truncates its log
// once that many entries or payload bytes were applied since the last
// snapshot, keeping CompactKeep entries behind the snapshot so that a
// member a little behind catches up from the log rather than from a
// snapshot. TestStreamedSnapshotCatchUp.
//
// "Snapshots name their receivers": Raft ignores a snapshot whose
// configuration does not hold its receiver, so when a member new to the
// configuration is added to a log that was compacted, the node snapshots
// again at once (the next snapshot sent names the new member). The
// replica set's TestReplicaSetSnapshotCatchUp (package cairn).
//
// "Snapshot held before stepped": a streamed snapshot (SnapshotStreamer)
// reaches Raft only once ReadSnapshot stored it durably; Raft then
// persists the snapshot's metadata in the log before the state machine's
// Restore, so a member killed during Restore finds the snapshot in its log
// and the data in its own store, and restores again at start.
// TestStreamedSnapshotCatchUp (restart after install) and the replica
// set's kill during install.
//
// "Apply in log order": committed entries reach the state machine once,
// in index order, on the node loop. Checked at run time under the
// invariants tag and by every cluster test (memSM refuses a falling
// index).
//
// "Own proposals only": a proposal is acknowledged only by the entry it
// made. Each payload carries this node's life (a random incarnation) and
// a sequence number, so an entry of an earlier life of the same member,
// or of another leader, never completes a waiting proposal. A proposal
// still waiting when its member loses leadership fails with
// ErrLeadershipLost: its outcome is unknown (TestLeadershipLostFailsPending).
//
// "Same log everywhere": once healed, every member has applied the same
// payloads at the same indexes, and every acknowledged proposal among
// them once ("Each proposal once"). TestProposalsCommitInOneOrder and
// TestFaultScheduleKeepsAcknowledged.
//
// "Configuration survives restarts": every applied configuration change
// stores the resulting configuration with its index (LogStore.
// SetConfState, synced); a restarted member's Raft starts from it when it
// is newer than the snapshot's. A group bootstrapped from configuration
// entries has no snapshot naming its members, and Raft applies again only
// the entries above the applied index the state machine reports, so
// without it a member restarted past those entries would know no voters
// and never stand for election. TestLogStoreConfStateSurvivesReopen, and
// the replica set's kill -9 test (package cairn, many rounds).
//
// "One leader per term": no two members are leader in one term, checked
// from the role notifications in every cluster test.
//
// "Linearizable register": writes as proposals and reads after ReadIndex
// form a linearizable history (porcupine), TestLinearizableKV.
//
// # Transport and clock
//
// [Transport] is best effort ("Transport may lose": Raft retransmits).
// [Network] is the in-process one for tests: seeded drops, delays (so
// reordering), duplicates and partitions, each message marshalled as on a
// wire. [TCPTransport] opens one connection per peer it sends to; a
// connection starts with a preamble ("CRft", version 2, the sender's and
// the receiver's ids, the sender's address) and carries frames of a 4-byte big-endian length and one marshalled
// raftpb.Message (at most 256 MiB); a sender redials with a growing pause
// after any error and drops what it cannot send. "Frames written by the
// sending goroutine": a frame of at most 64 KiB that finds nothing queued
// for its peer and the peer's sender goroutine idle is written by Send's
// caller itself (the node loop's appends, the appender's
// acknowledgements), without waking the sender; a write that does not
// start within 20 ms falls back to the queue, and one that stops part way
// ends the connection (the stream would be misread). Frames leave in the
// order they were sent: Send writes one only when every frame queued
// before it is written or dropped. TestTCPFramesInOrder. "Frame buffers
// reused after their write": a frame Send may write itself is encoded
// into one buffer the transport keeps (under its lock), kept again once
// the write returned (the kernel has the bytes); a frame that queues
// instead takes the buffer with it, and the next is encoded into a new
// one, so a queued frame's bytes are never overwritten. The leader's
// appends and every acknowledgement then allocate no frame.
// TestTCPFrameBuffersReused (every frame arrives with its own bytes
// across reuse, queueing and large frames; two direct writes share the
// buffer). When the state machine
// is a [SnapshotStreamer], a MsgSnap frame is followed by the snapshot's
// stream as chunks (a 4-byte length and at most 1 MiB each, ended by an
// empty chunk), and the receiver stores the stream before it delivers
// the message; the in-process Network carries the stream beside the
// message, with the message's faults. Whether members use the
// client port with a distinct first message or a port of their own is
// decided by package replset: the client port (the server hands
// connections that begin with [MemberStreamMagic] to
// [TCPTransport.ServeConn]).
// [Clock] drives ticks; [ManualClock] lets tests run time fast, pause a
// member or skew it.
//
// # How the commit pipeline feeds it (package replset)
//
// Each commit group of internal/storage's pipeline becomes one payload,
// so group commit batches replication too: on the primary the pipeline
// goroutine runs the group's request functions into an indexed batch as
// today, then, instead of committing it, proposes the batch's Repr (the
// group's writes, plus its oplog entries, session records and id
// generator state, which DESIGN.md §8 puts in the same group). The apply
// side, on every member, commits that batch to the data store together
// with the entry's index (the Applied the node replays from) — the same
// code on primary and secondaries, so their data cannot diverge. As
// built, the pipeline proposes one group at a time and applies the next
// group's functions only after the previous one is applied (storage's
// "Replicated in order"); pipelining groups (the next group reading the
// store plus its pending predecessors) is a later speed-up.
//
// Write concern: every group is acknowledged once committed (Propose
// returning), which satisfies w:1 and w:"majority" alike; w:1 could be
// acknowledged earlier, once the entry is durable in the primary's own
// log, at the price of rollback on failover (not done); w:N waits for N
// members' Match (Node.Progress); j is implied by Save's sync. Reads:
// every applied entry is committed, so readConcern "majority" is any
// read; "linearizable" is ReadIndex (not wired yet).
//
// Snapshots: Node.Compact (and the bounds of "Bounded log") stores the
// state machine's Snapshot bytes with the log. For the data store they
// are a Pebble checkpoint at the applied index: Snapshot returns its
// name, the transport streams the checkpoint's files to the member Raft
// sends MsgSnap to (SnapshotStreamer), and Restore replaces the store's
// contents with the received checkpoint's (package replset). Members
// added later join as learners, catch up from such a snapshot and the
// log, then become voters.
//
// # Not yet
//
// Members authenticate each other with the keyFile (memberauth.go: an
// HMAC challenge-response on each connection, when a key is set). The
// transport does not call ReportUnreachable, and reports a streamed
// snapshot finished when it is queued, not when it arrived (a long stream
// holds back the connection's other messages meanwhile). Package replset
// maps these errors to MongoDB's codes.
package repl
