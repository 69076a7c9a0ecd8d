package hoptrace

import "sync/atomic"

// Hop names one step of the write path whose latency is traced (or, for
// the hops that count, one quantity per group).
type Hop int

// The hops, in the order a write meets them. Names say where the two
// timestamps are taken; "group" hops are per commit group, "entry" hops
// per Raft proposal (one group is one proposal), "msg" hops per message.
const (
	// The connection (internal/server): the command read → its reply
	// written, for updates and finds.
	OpUpdate Hop = iota
	OpFind
	// The commit pipeline (internal/storage), per request.
	ReqQueue // submitted → its function runs on the pipeline goroutine
	ReqTotal // submitted → acknowledged, as the submitter sees it
	ReqWake  // acknowledged by the pipeline → the submitter runs again
	// The commit pipeline, per group.
	GroupSize     // requests per group (a count)
	GroupInFlight // groups in flight when a group is proposed (a count)
	GroupApply    // first request taken → proposed / committed to Pebble (apply and gather)
	GroupSync     // a standalone group handed to the completer → its WAL synced
	GroupRepl     // a member's group proposed → its wait returned (committed and applied)
	GroupWake     // the node loop signalled the group applied → its waiter runs
	GroupAck      // the wait returned → the group's requests acknowledged
	// The node loop (internal/repl), per proposal on the leader.
	EntryStart  // Start → the loop took the proposal
	EntryHand   // the loop took it → its Ready sent the appends and handed the log write
	EntryAck1   // handed → the first follower's acknowledgement stepped
	EntryAck2   // handed → the second follower's acknowledgement stepped
	EntryOwn    // handed → the leader's own log sync stepped
	EntryCommit // handed → the commit index covers it
	EntryApply  // committed → applied on the loop and its waiter signalled
	// The log's appender (every member), per MsgStorageAppend.
	AppendQueue // handed → the appender began the write that carries it
	AppendSync  // the write and its sync (LogStore.Save), per write
	AppendBatch // appends per write (a count)
	AppendBack  // synced → this member's own responses stepped on the loop
	// The node loop, per turn.
	LoopTurn  // a turn's work: the event, the drain and every Ready
	LoopApply // the state machine's Apply of one entry
	// The transport, per frame.
	NetSend // queued → written and flushed by the peer's sender
	// FollowerAck is a follower's: its loop stepped a MsgApp → the
	// acknowledgement for it sent (the appender's sync included).
	FollowerAck
	// A standalone's commit group between its apply and its
	// acknowledgement (internal/storage), and the log's writes and syncs
	// under it (the log file's wrapper, logahead.go), in the order a
	// group meets them.
	GroupNext   // the previous group acknowledged (the pipeline told) → this group's commit began
	GroupCommit // the group's batch committed to Pebble (ApplyNoSyncWait, the cache refreshed)
	LogWake     // a group's commit returned → Pebble's flush loop began writing the log
	LogWrite    // one write(2) of the log
	LogSync     // one sync of the log (fdatasync)
	LogBytes    // bytes a sync of the log covered (a count)
	LogIdle     // a sync of the log returned → the next write of the log began
	SyncWake    // a sync of the log returned → the completer's SyncWait returned
	// The durable floor (internal/bench), per sync of its log.
	FloorSync  // the leader's write and fdatasync
	FloorBatch // records a sync covered (a count)
	FloorIdle  // a sync returned → the next sync began
	FloorWake  // the sync covering a write returned → its writer runs again
	numHops
)

var hopNames = [numHops]string{
	"op.update", "op.find",
	"req.queue", "req.total", "req.wake",
	"group.size", "group.inflight", "group.apply", "group.sync", "group.repl", "group.wake", "group.ack",
	"entry.start", "entry.hand", "entry.ack1", "entry.ack2", "entry.own", "entry.commit", "entry.apply",
	"append.queue", "append.sync", "append.batch", "append.back",
	"loop.turn", "loop.apply",
	"net.send",
	"follower.ack",
	"group.next", "group.commit", "log.wake", "log.write", "log.sync", "log.bytes", "log.idle", "sync.wake",
	"floor.sync", "floor.batch", "floor.idle", "floor.wake",
}

// counts are the hops whose samples are counts, not nanoseconds.
func (h Hop) count() bool {
	return h == GroupSize || h == GroupInFlight || h == AppendBatch || h == LogBytes || h == FloorBatch
}

func (h Hop) String() string { return hopNames[h] }

// A Mark is one timestamp that one goroutine takes and another reads (the
// log's last sync returned, read by the completer that it woke). Without
// the cairntrace tag Set stores nothing and Get is 0.
type Mark struct{ t atomic.Int64 }

// Set stores t (a Now).
func (m *Mark) Set(t int64) {
	if Enabled {
		m.t.Store(t)
	}
}

// Get is the last t Set stored, 0 if none.
func (m *Mark) Get() int64 {
	if Enabled {
		return m.t.Load()
	}
	return 0
}
