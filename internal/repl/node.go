package repl

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairndb/cairn/internal/hoptrace"
)

var (
	// ErrNotLeader refuses a proposal or read made on a member that is not
	// the leader (the future NotWritablePrimary).
	ErrNotLeader = errors.New("repl: not the leader")
	// ErrLeadershipLost fails a proposal or read whose member lost
	// leadership before it completed. The outcome of a proposal failed so
	// is unknown: it may still commit under the next leader (the future
	// InterruptedDueToReplStateChange, which drivers retry).
	ErrLeadershipLost = errors.New("repl: leadership lost; outcome unknown")
	// ErrStopped fails what is pending when the node stops.
	ErrStopped = errors.New("repl: node stopped")
	// ErrChainBroken refuses a proposal that follows another (Start with
	// follows) when an earlier proposal of its chain was refused or
	// failed, or was made in another term ("Chained proposals"). The
	// refused payload is in no log; its predecessors' outcome may be
	// unknown.
	ErrChainBroken = errors.New("repl: an earlier proposal of the chain failed")
)

// StateMachine is what the committed log is applied to. Its methods are
// called on the node loop's goroutine only, in log order ("Apply in log
// order").
type StateMachine interface {
	// Apply applies the payload of the committed entry at index. Indexes
	// rise; entries that carry no payload (a new leader's empty entry,
	// configuration changes) are not passed on, so they may skip.
	Apply(index uint64, payload []byte) error
	// Snapshot returns the state as of the last applied entry.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a snapshot's, taken at index.
	// An empty snapshot (the bootstrap one) is the empty state.
	Restore(index uint64, data []byte) error
	// Applied is the index of the last entry whose effect survives a
	// restart (0 for a state machine kept in memory).
	Applied() uint64
}

// Role is a member's part in its group.
type Role = raft.StateType

// RoleChange tells that a member's role, term or known leader changed.
type RoleChange struct {
	ID, Term, Lead uint64
	Role           Role
	// Writable: the member is the leader and has applied every entry of
	// earlier terms (its term's first entry is applied), so state read
	// from its state machine is the whole committed state ("Drained
	// before writable"): a new primary takes writes only then, as
	// MongoDB's drain mode.
	Writable bool
}

// Config configures a Node.
type Config struct {
	ID uint64
	// Peers are the voters of a new group: an empty log is bootstrapped
	// with them; a log with state ignores them. None: an empty log stays
	// empty until a leader sends this member its snapshot (a member being
	// added to a group).
	Peers     []uint64
	Log       *LogStore
	Transport Transport
	Clock     Clock
	SM        StateMachine
	// TickInterval is the clock time of one Raft tick (default 10ms);
	// ElectionTicks (default 10) and HeartbeatTicks (default 1) count them.
	TickInterval                  time.Duration
	ElectionTicks, HeartbeatTicks int
	// OnRoleChange, if set, is called on the node loop at every change of
	// role, term, leader or writability. It must not block.
	OnRoleChange func(RoleChange)
	// OnConfChange, if set, is called on the node loop when a
	// configuration change is applied, with the member it adds, promotes
	// or removes, the address ProposeConfChange gave (empty for others'
	// changes made without one) and the configuration after it.
	OnConfChange func(id uint64, addr string, typ pb.ConfChangeType, cs *pb.ConfState)
	// Logger receives the Raft library's log; nil discards it.
	Logger raft.Logger
	// CompactEntries, if not 0, bounds the log: once this many entries
	// were applied since the last snapshot, or CompactBytes of payload
	// (if not 0), the node snapshots the state machine at the applied
	// index and truncates the log up to it ("Bounded log"). Members
	// further behind then catch up from the snapshot.
	CompactEntries uint64
	CompactBytes   uint64
	// CompactKeep is how many entries a compaction keeps behind its
	// snapshot, so a member a little behind catches up from the log
	// rather than from a snapshot.
	CompactKeep uint64

	// slowSync, if set and not returning 0, is slowSync's threshold
	// (tests only: a test of the loop's writes sets it past anything a
	// loaded machine can cause, so that no write slowed by load sends the
	// next ones through the appender under the test, and lowers it to
	// make the write it holds slow).
	slowSync func() time.Duration
}

// Node drives one member's raft.RawNode: one goroutine (the node loop)
// owns the RawNode, the log's writes and the state machine.
type Node struct {
	cfg         Config
	rn          *raft.RawNode
	incarnation uint64 // tags this life's proposals ("Own proposals only")

	propc chan *proposal
	readc chan *readReq
	fnc   chan func()
	stopc chan struct{}
	done  chan struct{}
	err   error // why the loop ended, read after done

	// loop-owned
	seq        uint64
	pending    map[uint64]*proposal
	readSeq    uint64
	reads      map[uint64]*readReq // asked, no read state yet
	readsReady []*readReq          // read index known, waiting for apply
	applied    uint64
	confState  *pb.ConfState
	soft       raft.SoftState
	leaderTerm uint64 // the term this member leads, while it leads
	// chainTerm and chainBroken follow the chain of proposals started
	// last ("Chained proposals"): the term it was accepted in, and whether
	// one of it was refused or failed since.
	chainTerm   uint64
	chainBroken bool
	drained     bool                 // leader whose term's first entry is applied
	told        RoleChange           // the last one reported to OnRoleChange
	confs       map[uint64]*proposal // pending configuration changes by seq
	sinceSnap   uint64               // payload bytes applied since the last snapshot
	// resnap: a member was added to a compacted log; the next loop
	// snapshots again ("Snapshots name their receivers").
	resnap bool
	// The appender ("Log written off the loop"): appendq carries the
	// MsgStorageAppends to it, appended what it finished back; appending
	// counts the appends handed to it and not yet finished.
	appendq     *queue[appendReq]
	appended    *queue[appendDone]
	appending   int
	appendStop  chan struct{}
	appenderEnd chan struct{}
	// gate tells whether the log has a write pending (LogBusy); taken
	// counts the proposals the loop took this turn (loop-owned).
	gate  logGate
	taken int
	// trApps is when the loop stepped each append, by its last index
	// (package hoptrace's trace only: nil otherwise).
	trApps map[uint64]int64
	// held is, by member, the commit notice (an append without entries)
	// the leader holds back; holdTimer sends them once noticeHold passed,
	// or later while a proposal is pending (holdLeft; "Commit notices
	// ride on appends"). Loop-owned.
	// slowUntil: until then a follower writes through its appender, a
	// write on its loop having been slow (slowSync). Loop-owned.
	slowUntil time.Time
	held      map[uint64]*pb.Message
	holdTimer *time.Timer
	holding   bool      // holdTimer is armed
	heldAt    time.Time // when it was armed

	mu          sync.Mutex
	status      Status
	frozenUntil time.Time
}

// Status is a member's view of its group.
type Status struct {
	ID, Term, Lead, Commit, Applied uint64
	Role                            Role
	Writable                        bool
	// Voters and Learners are the configuration as of the last applied
	// entry.
	Voters, Learners []uint64
	// Readies counts the Readies handled; AppliedEntries the committed
	// entries applied, AppliedDuringAppend those of them applied while
	// the appender was writing later entries ("Log written off the loop":
	// with the write on the loop they would have waited for it); Appends
	// the appender's synced writes and AppendMsgs the appends they
	// carried (more than one per write: appends that queued behind a sync
	// share the next); AppendsOnLoop those of the writes a follower's loop
	// made itself, the appender idle ("Follower's log written on its
	// loop"), and SlowLoopSyncs those that took longer than slowSync (the
	// writes after each went through the appender for slowSyncBackoff).
	Readies, AppliedEntries, AppliedDuringAppend, Appends, AppendMsgs, AppendsOnLoop, SlowLoopSyncs uint64
	// NoticesHeld counts the commit notices (appends without entries) a
	// leader held, NoticesMerged those of them a later append to the same
	// member replaced ("Commit notices ride on appends").
	NoticesHeld, NoticesMerged uint64
}

type proposal struct {
	data    []byte
	index   uint64
	done    chan error
	follows bool       // continues the chain (Start)
	owned   bool       // data[:headerLen] is the header's room (StartOwned)
	started bool       // handed over by Start (counted by the log's gate)
	tr      *propTrace // package hoptrace's timestamps (nil unless traced)
}

// Proposal is a payload handed to the node loop by Start, whose outcome
// Wait returns.
type Proposal struct {
	n   *Node
	p   *proposal
	err error // refused before reaching the loop
}

// Wait returns the proposal's log index once it is committed and applied
// on this member, or why it is not (Propose's errors, and ErrChainBroken).
func (p *Proposal) Wait() (uint64, error) {
	if p.err != nil {
		return 0, p.err
	}
	if err := p.n.await(p.p.done); err != nil {
		return 0, err
	}
	if hoptrace.Enabled && p.p.tr != nil {
		hoptrace.Since(hoptrace.GroupWake, p.p.tr.done)
	}
	return p.p.index, nil
}

// await returns the outcome the loop sends on done, or ErrStopped when
// the loop ended without taking the request from its queue (the loop
// answers everything it took before it ends).
func (n *Node) await(done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-n.done:
		select {
		case err := <-done:
			return err
		default:
			return n.stoppedErr()
		}
	}
}

type readReq struct {
	index uint64
	done  chan error
}

const headerLen = 16 // incarnation, sequence

// HeaderLen is the room StartOwned's payload leaves at its front for the
// node's proposal header.
const HeaderLen = headerLen

// NewNode starts a member. It bootstraps an empty log with cfg.Peers,
// restores the state machine from the log's snapshot when the state
// machine is older, and starts the node loop.
func NewNode(cfg Config) (*Node, error) {
	if cfg.ID == 0 || cfg.Log == nil || cfg.Transport == nil || cfg.Clock == nil || cfg.SM == nil {
		return nil, errors.New("repl: Config needs an ID, a Log, a Transport, a Clock and a StateMachine")
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = 10 * time.Millisecond
	}
	if cfg.ElectionTicks == 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks == 0 {
		cfg.HeartbeatTicks = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger{}
	}
	snap, _ := cfg.Log.Snapshot()
	si := snap.GetMetadata().GetIndex()
	applied := cfg.SM.Applied()
	if applied < si {
		if err := cfg.SM.Restore(si, snap.GetData()); err != nil {
			return nil, fmt.Errorf("repl: restore snapshot %d: %w", si, err)
		}
		applied = si
	}
	// "Commit covers applied": the state machine applies only committed
	// entries, but the log does not store a change of the commit index
	// alone ("Commit index not stored"), so the state machine (another
	// Pebble instance) may have applied past the commit index the log
	// kept. Those entries were committed: raise the log's commit index to
	// the applied one (Raft refuses to start with applied above commit,
	// or with a commit index below the log's first index less one; the
	// applied index is at or above the snapshot's).
	if hs, _, err := cfg.Log.InitialState(); err != nil {
		return nil, err
	} else if applied > hs.GetCommit() {
		if last, _ := cfg.Log.LastIndex(); applied > last {
			return nil, fmt.Errorf("repl: the state machine applied %d, past the log's last index %d", applied, last)
		}
		hs.Commit = proto.Uint64(applied)
		if err := cfg.Log.Save(hs, nil, nil, true); err != nil {
			return nil, err
		}
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   cfg.Log,
		Applied:                   applied,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		MaxUncommittedEntriesSize: 64 << 20,
		CheckQuorum:               true,
		PreVote:                   true,
		ReadOnlyOption:            raft.ReadOnlySafe,
		DisableProposalForwarding: true,
		AsyncStorageWrites:        true,
		Logger:                    cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	if len(cfg.Peers) > 0 && cfg.Log.empty() {
		// A new group starts from configuration entries at indexes
		// 1..n, committed, rather than from a snapshot: a member added
		// later (which starts with an empty log and no peers) is sent
		// these entries like any others, where a bootstrap snapshot
		// would not name it and Raft would refuse it.
		peers := make([]raft.Peer, len(cfg.Peers))
		for i, id := range cfg.Peers {
			peers[i] = raft.Peer{ID: id}
		}
		if err := rn.Bootstrap(peers); err != nil {
			return nil, err
		}
	}
	// The configuration Raft starts from: the last applied change's, or
	// the snapshot's ("Configuration survives restarts"); a bootstrap
	// adds its voters.
	_, initialConf, err := cfg.Log.InitialState()
	if err != nil {
		return nil, err
	}
	if len(cfg.Peers) > 0 && len(initialConf.GetVoters()) == 0 {
		initialConf = &pb.ConfState{Voters: append([]uint64(nil), cfg.Peers...)}
	}
	var inc [8]byte
	if _, err := rand.Read(inc[:]); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, rn: rn, incarnation: binary.BigEndian.Uint64(inc[:]),
		propc: make(chan *proposal, maxBatch), readc: make(chan *readReq), fnc: make(chan func()),
		stopc: make(chan struct{}), done: make(chan struct{}),
		pending: map[uint64]*proposal{}, reads: map[uint64]*readReq{}, confs: map[uint64]*proposal{},
		applied: applied, confState: initialConf,
		appendq: newQueue[appendReq](), appended: newQueue[appendDone](),
		appendStop: make(chan struct{}), appenderEnd: make(chan struct{}),
		held: map[uint64]*pb.Message{}, holdTimer: time.NewTimer(time.Hour),
	}
	n.holdTimer.Stop()
	n.status = Status{ID: cfg.ID, Applied: applied}
	if hoptrace.Enabled {
		n.trApps = map[uint64]int64{}
	}
	n.setConfLocked()
	if st, ok := cfg.SM.(SnapshotStreamer); ok {
		if tr, ok := cfg.Transport.(streaming); ok {
			tr.SetSnapshotStreamer(st)
		}
	}
	go n.appender()
	go n.loop()
	return n, nil
}

// Propose replicates payload and returns its log index once it is
// committed and applied on this member. It fails with ErrNotLeader on a
// member that is not the leader, with ErrLeadershipLost if leadership is
// lost first (outcome unknown), and with ctx's error if ctx ends first
// (outcome unknown too).
func (n *Node) Propose(ctx context.Context, payload []byte) (uint64, error) {
	p := &proposal{data: payload, done: make(chan error, 1)}
	if err := submit(ctx, n, n.propc, p, p.done); err != nil {
		return 0, err
	}
	return p.index, nil
}

// Start hands payload to the node loop and returns without waiting for
// its commit: a caller may start the next proposal while this one
// replicates, and Raft carries both in one append when they meet. Start
// returns once the loop has the proposal or its queue does; proposals are
// taken in the order they were started. A proposal that follows is part
// of its predecessor's chain (invariant "Chained proposals"): the loop
// refuses it with ErrChainBroken unless every proposal since the last one
// started without follows was accepted into the log in the current term
// and none failed since — a caller that built this payload on the
// effects of the earlier ones (a commit pipeline that applied the next
// group over the previous group's writes) never gets a later group into
// the log without the earlier.
func (n *Node) Start(payload []byte, follows bool) *Proposal {
	return n.start(&proposal{data: payload, done: make(chan error, 1), follows: follows, started: true})
}

// StartOwned is Start for a payload that begins with HeaderLen bytes of
// room: the node writes its proposal header there and proposes buf
// itself, without copying the payload ("Payloads proposed in place").
// The caller hands buf over: it must not touch it again.
func (n *Node) StartOwned(buf []byte, follows bool) *Proposal {
	if len(buf) < headerLen {
		return &Proposal{err: errors.New("repl: StartOwned's payload has no room for the header")}
	}
	return n.start(&proposal{data: buf, done: make(chan error, 1), follows: follows, started: true, owned: true})
}

func (n *Node) start(p *proposal) *Proposal {
	if hoptrace.Enabled {
		p.tr = &propTrace{start: hoptrace.Now()}
	}
	n.gate.add(1, 0) // the log is busy until the loop handed its append on
	select {
	case n.propc <- p:
		return &Proposal{n: n, p: p}
	case <-n.done:
		n.gate.add(-1, 0)
		return &Proposal{err: n.stoppedErr()}
	}
}

// LogBusy returns nil when this member's log has nothing left to write —
// no proposal started and not yet handed to the appender with its Ready,
// no append handed and not yet written (synced) — else a channel closed
// once it has none. The replica set's commit pipeline gathers the next
// group meanwhile (storage's "Groups gather while the log syncs"): a
// proposal started now would only queue behind the write in progress.
// A channel returned stays open while the node is stopped.
func (n *Node) LogBusy() <-chan struct{} { return n.gate.busy() }

// logGate counts what the log has to write ("Log written off the loop"):
// proposals Start handed to the loop and the loop has not yet passed to
// the appender (it does so in the turn that takes them), and appends
// handed to the appender and not yet written. idle is non-nil while any
// is, and closed when none is left.
type logGate struct {
	mu              sync.Mutex
	started, writes int
	idle            chan struct{}
}

func (g *logGate) add(started, writes int) {
	g.mu.Lock()
	g.started += started
	g.writes += writes
	if g.started > 0 || g.writes > 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
	} else if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

func (g *logGate) busy() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idle
}

// submit hands req to the node loop on ch and waits for the outcome the
// loop sends on done, or for ctx to end or the node to stop first.
func submit[R any](ctx context.Context, n *Node, ch chan<- R, req R, done <-chan error) error {
	select {
	case ch <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
	select {
	case err := <-done:
		return err
	case <-n.done:
		return n.await(done)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ProposeConfChange proposes a change of the group's configuration —
// adding member id as a learner, promoting it to voter, removing it — and
// returns once the change is applied on this member. addr travels with
// the change to every member's OnConfChange (where the member listens).
// Raft takes one change at a time: a second one proposed while the first
// is pending fails, its outcome unknown, as does one whose leader is lost.
func (n *Node) ProposeConfChange(ctx context.Context, typ pb.ConfChangeType, id uint64, addr string) (uint64, error) {
	p := &proposal{done: make(chan error, 1)}
	var errc = make(chan error, 1)
	select {
	case n.fnc <- func() { errc <- n.proposeConf(p, typ, id, addr) }:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, n.stoppedErr()
	}
	if err := <-errc; err != nil {
		return 0, err
	}
	select {
	case err := <-p.done:
		return p.index, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (n *Node) proposeConf(p *proposal, typ pb.ConfChangeType, id uint64, addr string) error {
	if n.soft.RaftState != raft.StateLeader {
		return ErrNotLeader
	}
	n.seq++
	cctx := make([]byte, headerLen+len(addr))
	binary.BigEndian.PutUint64(cctx, n.incarnation)
	binary.BigEndian.PutUint64(cctx[8:], n.seq)
	copy(cctx[headerLen:], addr)
	cc := &pb.ConfChange{Type: typ.Enum(), NodeId: proto.Uint64(id), Context: cctx}
	if err := n.rn.ProposeConfChange(cc); err != nil {
		return fmt.Errorf("repl: configuration change dropped: %w", err)
	}
	n.confs[n.seq] = p
	return nil
}

// Progress returns, on the leader, how far each member's log is known to
// match the leader's (raft's Progress.Match); nil elsewhere. Write
// concerns of w: N count members from it.
func (n *Node) Progress() map[uint64]Progress {
	var out map[uint64]Progress
	_ = n.do(func() error {
		st := n.rn.Status()
		if st.RaftState != raft.StateLeader {
			return nil
		}
		out = make(map[uint64]Progress, len(st.Progress))
		for id, pr := range st.Progress {
			out[id] = Progress{Match: pr.Match, RecentActive: pr.RecentActive || id == n.cfg.ID, Learner: pr.IsLearner}
		}
		return nil
	})
	return out
}

// Progress is the leader's view of one member.
type Progress struct {
	// Match is the highest index known to be in the member's log.
	Match uint64
	// RecentActive: the member was heard from within the last election
	// timeout (CheckQuorum's bookkeeping).
	RecentActive bool
	Learner      bool
}

// Freeze keeps this member from standing for election until the given
// time (MongoDB's replSetFreeze, and the wait after replSetStepDown): it
// sends no vote or pre-vote requests of its own meanwhile; it still
// votes for others. A zero time unfreezes.
func (n *Node) Freeze(until time.Time) {
	n.mu.Lock()
	n.frozenUntil = until
	n.mu.Unlock()
}

func (n *Node) frozen() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Now().Before(n.frozenUntil)
}

// TransferLeadership asks the leader to hand leadership to member to (a
// stepdown); it returns at once, the transfer happens or times out in Raft.
func (n *Node) TransferLeadership(to uint64) error {
	return n.do(func() error {
		if n.soft.RaftState != raft.StateLeader {
			return ErrNotLeader
		}
		n.rn.TransferLeader(to)
		return nil
	})
}

// ReadIndex returns once this member has applied every entry committed
// before the call, confirmed by a quorum (Raft's ReadIndex, so safe under
// clock skew): reading the state machine after it is linearizable. It
// returns the read index.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	r := &readReq{done: make(chan error, 1)}
	if err := submit(ctx, n, n.readc, r, r.done); err != nil {
		return 0, err
	}
	return r.index, nil
}

// Compact snapshots the state machine at the applied index and truncates
// the log up to it. Members further behind then catch up from the
// snapshot.
func (n *Node) Compact() error { return n.do(n.compact) }

func (n *Node) compact() error {
	data, err := n.cfg.SM.Snapshot()
	if err != nil {
		return err
	}
	if err := n.cfg.Log.Compact(n.applied, n.confState, data, n.cfg.CompactKeep); err != nil {
		return err
	}
	n.sinceSnap, n.resnap = 0, false
	return nil
}

// maybeCompact compacts once the log passed a bound of Config ("Bounded
// log").
func (n *Node) maybeCompact() error {
	c := n.cfg
	if !n.resnap && c.CompactEntries == 0 && c.CompactBytes == 0 {
		return nil
	}
	first, _ := c.Log.FirstIndex()
	if !n.resnap && (c.CompactEntries == 0 || n.applied < first+c.CompactEntries) && (c.CompactBytes == 0 || n.sinceSnap < c.CompactBytes) {
		return nil
	}
	if err := n.compact(); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
		return fmt.Errorf("repl: compact the log at %d: %w", n.applied, err)
	}
	return nil
}

// Campaign makes this member start an election now.
func (n *Node) Campaign() error { return n.do(func() error { return n.rn.Campaign() }) }

// do runs f on the node loop and returns its error.
func (n *Node) do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case n.fnc <- func() { errc <- f() }:
	case <-n.done:
		return n.stoppedErr()
	}
	return <-errc
}

// Status returns the member's view as of its last Ready.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status
}

// Stop ends the node loop, failing what is pending with ErrStopped, and
// closes the transport. It does not close the log. It returns the error
// that ended the loop, if the loop ended by itself.
func (n *Node) Stop() error {
	select {
	case <-n.stopc:
	default:
		close(n.stopc)
	}
	<-n.done
	n.cfg.Transport.Close()
	return n.err
}

func (n *Node) stoppedErr() error {
	if n.err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, n.err)
	}
	return ErrStopped
}

func (n *Node) loop() {
	defer close(n.done)
	ticker := n.cfg.Clock.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	defer n.holdTimer.Stop()
	recv := n.cfg.Transport.Recv()
	defer func() {
		// The appender finishes the write it is in (its responses are
		// delivered or dropped, as a crash would drop them) and ends.
		close(n.appendStop)
		<-n.appenderEnd
		err := ErrStopped
		if n.err != nil {
			err = fmt.Errorf("%w: %w", ErrStopped, n.err)
		}
		n.failAll(err)
	}()
	for {
		var turn int64
		select {
		case <-ticker.C():
			n.rn.Tick()
		case <-n.holdTimer.C:
			n.holding = false
			if rest := n.holdLeft(); rest > 0 {
				n.holdTimer.Reset(rest)
				n.holding = true
			} else {
				n.sendHeld()
			}
		case <-n.appended.signal:
			if err := n.appendsDone(); err != nil {
				n.err = err
				return
			}
		case m := <-recv:
			n.step(m)
		case p := <-n.propc:
			n.propose(p)
		case r := <-n.readc:
			n.read(r)
		case f := <-n.fnc:
			f()
		case <-n.stopc:
			return
		}
		if hoptrace.Enabled {
			turn = hoptrace.Now() // the event's own work is left out: it is small
		}
		n.drain(recv)
		for n.rn.HasReady() {
			if err := n.handleReady(); err != nil {
				n.err = err
				return
			}
		}
		if n.taken > 0 {
			// Their appends (if Raft took them) are with the appender now.
			n.gate.add(-n.taken, 0)
			n.taken = 0
		}
		if err := n.maybeCompact(); err != nil {
			n.err = err
			return
		}
		if hoptrace.Enabled {
			hoptrace.Since(hoptrace.LoopTurn, turn)
		}
	}
}

// step hands a peer's message to Raft. Proposals from peers are dropped:
// members never forward them (only the leader's own Propose adds to the
// log), so one would be a bug or a forgery, and its entry would lack the
// proposal header. Step's errors are messages for another member or of a
// kind a peer must not send; Raft recovers by retrying.
func (n *Node) step(m *pb.Message) {
	if m.GetType() == pb.MsgProp {
		return
	}
	_ = n.rn.Step(m)
	if hoptrace.Enabled {
		n.traceStepped(m)
	}
}

// maxBatch bounds how many queued messages and proposals one Ready takes.
const maxBatch = 256

// drain steps the messages and proposals already queued, so that one
// Ready (and one sync of the log) carries them all: under load, many
// proposals share a sync, as the commit pipeline's groups share one.
func (n *Node) drain(recv <-chan *pb.Message) {
	for range maxBatch {
		select {
		case m := <-recv:
			n.step(m)
		case p := <-n.propc:
			n.propose(p)
		default:
			return
		}
	}
}

func (n *Node) propose(p *proposal) {
	if p.started {
		n.taken++
	}
	if p.follows && (n.chainBroken || n.chainTerm != n.leaderTerm) {
		p.done <- ErrChainBroken
		return
	}
	// Refused or dropped below: the chain is broken until a proposal
	// starts a new one.
	n.chainBroken, n.chainTerm = true, n.leaderTerm
	if n.soft.RaftState != raft.StateLeader {
		p.done <- ErrNotLeader
		return
	}
	if hoptrace.Enabled && p.tr != nil {
		p.tr.taken = hoptrace.Since(hoptrace.EntryStart, p.tr.start)
	}
	n.seq++
	data := p.data
	if !p.owned {
		data = make([]byte, headerLen+len(p.data))
		copy(data[headerLen:], p.data)
	}
	binary.BigEndian.PutUint64(data, n.incarnation)
	binary.BigEndian.PutUint64(data[8:], n.seq)
	if err := n.rn.Propose(data); err != nil {
		p.done <- fmt.Errorf("repl: proposal dropped: %w", err)
		return
	}
	n.chainBroken = false
	n.pending[n.seq] = p
}

func (n *Node) read(r *readReq) {
	if n.soft.RaftState != raft.StateLeader {
		r.done <- ErrNotLeader
		return
	}
	n.readSeq++
	var ctx [8]byte
	binary.BigEndian.PutUint64(ctx[:], n.readSeq)
	n.reads[n.readSeq] = r
	n.rn.ReadIndex(ctx[:])
}

// handleReady handles one Ready of the asynchronous storage protocol
// (raft's AsyncStorageWrites): the messages for other members go out at
// once; the log's writes (MsgStorageAppend) go to the appender, which
// delivers their responses once they are durable ("Log written off the
// loop"); the committed entries (MsgStorageApply), which Raft hands out
// only once this member's log holds them durably, are applied here, in
// order, and their response stepped at once. There is no Advance.
func (n *Node) handleReady() error {
	rd := n.rn.Ready()
	if rd.SoftState != nil {
		n.roleChanged(*rd.SoftState)
	}
	var out, local, appends, applies []*pb.Message
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case raft.LocalAppendThread:
			appends = append(appends, m)
		case raft.LocalApplyThread:
			applies = append(applies, m)
		case n.cfg.ID:
			local = append(local, m)
		default:
			out = append(out, m)
		}
	}
	snapsTo := n.send(n.holdNotices(out))
	for _, m := range appends {
		if err := n.toAppender(m); err != nil {
			return err
		}
		if hoptrace.Enabled {
			n.traceHanded(m, hoptrace.Now())
		}
	}
	for _, rs := range rd.ReadStates {
		if len(rs.RequestCtx) != 8 {
			continue
		}
		id := binary.BigEndian.Uint64(rs.RequestCtx)
		if r, ok := n.reads[id]; ok {
			delete(n.reads, id)
			r.index = rs.Index
			n.readsReady = append(n.readsReady, r)
		}
	}
	var applied, during uint64
	for _, m := range applies {
		for _, e := range m.GetEntries() {
			if err := n.apply(e); err != nil {
				return err
			}
			applied++
			if n.appending > 0 {
				during++
			}
		}
		n.stepLocal(m.GetResponses())
	}
	n.stepLocal(local)
	kept := n.readsReady[:0]
	for _, r := range n.readsReady {
		if r.index <= n.applied {
			r.done <- nil
		} else {
			kept = append(kept, r)
		}
	}
	n.readsReady = kept
	// The transport does not confirm delivery: report every snapshot sent
	// as finished, so the leader probes the member again from the
	// snapshot's index; a member that did not get it rejects the probe and
	// is sent the snapshot again.
	for _, to := range snapsTo {
		n.rn.ReportSnapshot(to, raft.SnapshotFinish)
	}
	st := n.rn.BasicStatus()
	writable := st.RaftState == raft.StateLeader && n.drained
	rc := RoleChange{ID: n.cfg.ID, Term: st.GetTerm(), Lead: st.Lead, Role: st.RaftState, Writable: writable}
	if rc != n.told {
		n.told = rc
		if n.cfg.OnRoleChange != nil {
			n.cfg.OnRoleChange(rc)
		}
	}
	if n.soft.RaftState == raft.StateLeader && st.GetTerm() != n.leaderTerm {
		// Leadership lost and won back between two Readies: what was
		// pending belongs to the old term.
		n.failPending(ErrLeadershipLost)
		n.leaderTerm = st.GetTerm()
		n.drained = false
	}
	n.mu.Lock()
	n.status.Term, n.status.Lead, n.status.Commit, n.status.Applied = st.GetTerm(), st.Lead, st.GetCommit(), n.applied
	n.status.Role, n.status.Writable = st.RaftState, writable
	n.status.Readies++
	n.status.AppliedEntries += applied
	n.status.AppliedDuringAppend += during
	n.mu.Unlock()
	return nil
}

// noticeHold is how long a leader holds a commit notice back, and
// noticeHoldBusy how long at most while one of its proposals is still
// pending: the set is then busy, and the next group's append usually
// leaves within a few milliseconds and replaces the notice ("Commit
// notices ride on appends").
const (
	noticeHold     = time.Millisecond
	noticeHoldBusy = 5 * time.Millisecond
)

// holdLeft is how much longer the notices held may wait once noticeHold
// passed: while a proposal of this leader is pending (in its log, not yet
// applied), up to noticeHoldBusy from when they were first held; else 0.
func (n *Node) holdLeft() time.Duration {
	if len(n.held) == 0 || len(n.pending) == 0 {
		return 0
	}
	return noticeHoldBusy - time.Since(n.heldAt)
}

// holdNotices takes out of a Ready's messages for other members the
// commit notices — appends without entries, which Raft sends every
// follower as soon as the commit index moves — and holds them, at most
// one per member (a later one carries a commit index as high), for up
// to noticeHold (noticeHoldBusy while a proposal is pending, holdLeft);
// an append with entries to the same member, which
// carries the commit index of its moment too, replaces the one held
// ("Commit notices ride on appends"). Under a steady load the next
// group's append then tells the followers what committed, and each
// follower answers one append per group instead of two. Holding one
// back is what a slow transport may do (Raft asks no faster one); one
// that nothing replaces leaves when the timer fires, so an idle set's
// followers apply within noticeHold of the commit. Called on the loop
// only.
func (n *Node) holdNotices(out []*pb.Message) []*pb.Message {
	kept := out[:0]
	var held, merged uint64
	for _, m := range out {
		if m.GetType() == pb.MsgApp {
			to := m.GetTo()
			if _, ok := n.held[to]; ok {
				delete(n.held, to)
				merged++
			}
			if len(m.GetEntries()) == 0 {
				n.held[to] = m
				held++
				continue
			}
		}
		kept = append(kept, m)
	}
	if len(n.held) > 0 && !n.holding {
		n.holdTimer.Reset(noticeHold)
		n.holding, n.heldAt = true, time.Now()
	}
	if held > 0 || merged > 0 {
		n.mu.Lock()
		n.status.NoticesHeld += held
		n.status.NoticesMerged += merged
		n.mu.Unlock()
	}
	return kept
}

// sendHeld sends the commit notices held (holdNotices).
func (n *Node) sendHeld() {
	if len(n.held) == 0 {
		return
	}
	out := make([]*pb.Message, 0, len(n.held))
	for to, m := range n.held {
		out = append(out, m)
		delete(n.held, to)
	}
	n.send(out)
}

// toAppender hands a MsgStorageAppend to the appender, or handles it
// here when that is as good: one that writes nothing (a change of the
// commit index alone, "Commit index not stored") while the appender has
// nothing in flight has its responses delivered at once, as everything
// before it is durable; one that carries a snapshot waits for the
// appender's earlier writes, then is stored and restored here, on the
// loop that owns the state machine ("Snapshot held before stepped").
func (n *Node) toAppender(m *pb.Message) error {
	hs := appendHardState(m)
	if snap := m.GetSnapshot(); snap != nil && !raft.IsEmptySnap(snap) {
		if err := n.waitAppends(); err != nil {
			return err
		}
		if err := n.cfg.Log.Save(hs, m.GetEntries(), snap, true); err != nil {
			return err
		}
		md := snap.GetMetadata()
		if err := n.cfg.SM.Restore(md.GetIndex(), snap.GetData()); err != nil {
			return err
		}
		n.applied = md.GetIndex()
		n.confState = md.GetConfState()
		n.setConf()
		n.deliver(m.GetResponses())
		return nil
	}
	if n.appending == 0 && len(m.GetEntries()) == 0 && n.cfg.Log.keepsVote(hs) {
		if err := n.cfg.Log.Save(hs, nil, nil, true); err != nil { // memory only
			return err
		}
		n.deliver(m.GetResponses())
		return nil
	}
	r := appendReq{m: m}
	if hoptrace.Enabled {
		r.at, r.stepped = hoptrace.Now(), n.traceAppendStepped(m)
	}
	if n.appending == 0 && n.soft.RaftState != raft.StateLeader && !time.Now().Before(n.slowUntil) {
		// "Follower's log written on its loop": nothing is in flight, so
		// everything before this append is durable and its responses
		// stepped; writing it here, in order, spares the hand-off to the
		// appender and back (two goroutine wake-ups per append). A sync
		// slow enough to keep the loop from answering heartbeats for a
		// good part of an election timeout sends the next writes through
		// the appender for a while.
		began := time.Now()
		steps, err := n.saveAppends([]appendReq{r}, true)
		if err != nil {
			return err
		}
		if took := time.Since(began); took > n.slowSync() {
			n.slowUntil = time.Now().Add(slowSyncBackoff)
			n.mu.Lock()
			n.status.SlowLoopSyncs++
			n.mu.Unlock()
		}
		n.stepLocal(steps)
		return nil
	}
	n.appending++
	n.gate.add(0, 1)
	n.appendq.push(r)
	return nil
}

// slowSyncBackoff is how long a follower writes through its appender
// after a write on its loop took longer than slowSync ("Follower's log
// written on its loop").
var slowSyncBackoff = 10 * time.Second

// slowSync is the longest a write on a follower's loop may take before
// the next ones go through the appender: a tenth of the election timeout
// (100 ms with the defaults), during which the loop answers no heartbeat.
func (n *Node) slowSync() time.Duration {
	if f := n.cfg.slowSync; f != nil {
		if d := f(); d != 0 {
			return d
		}
	}
	return time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval / 10
}

// appendHardState returns the hard state a MsgStorageAppend carries, nil
// for none (Raft sets its term, vote and commit together or not at all).
func appendHardState(m *pb.Message) *pb.HardState {
	if m.Term == nil {
		return nil
	}
	return &pb.HardState{Term: proto.Uint64(m.GetTerm()), Vote: proto.Uint64(m.GetVote()), Commit: proto.Uint64(m.GetCommit())}
}

// deliver sends responses to other members and steps this member's own.
// Called on the loop only.
func (n *Node) deliver(msgs []*pb.Message) {
	msgs = dropStaleAcks(msgs, n.cfg.Log.term())
	if invariantsEnabled {
		n.checkAcked(msgs)
	}
	var out []*pb.Message
	for _, m := range msgs {
		if m.GetTo() == n.cfg.ID {
			_ = n.rn.Step(m)
		} else {
			out = append(out, m)
		}
	}
	n.send(out)
}

// dropStaleAcks leaves out of msgs the acknowledgements of appends made
// in a term older than the stored hard state's (term). Raft hands a
// member the response to an append together with a later append of a
// newer leader whose entries may replace the ones it acknowledges (both
// stepped before one Ready), so no write held them; such a response
// carries the old term, which only a leader still in it could count, and
// dropping it is what a lossy transport may do anyway ("Log durable
// before use"; TestDropStaleAcks; found by repl-faults, seeds 1811 and
// 1812, under the invariants tag). It returns msgs itself when nothing is
// dropped.
func dropStaleAcks(msgs []*pb.Message, term uint64) []*pb.Message {
	stale := func(m *pb.Message) bool {
		return m.GetType() == pb.MsgAppResp && m.GetTerm() != 0 && m.GetTerm() < term
	}
	if !slices.ContainsFunc(msgs, stale) {
		return msgs
	}
	kept := make([]*pb.Message, 0, len(msgs))
	for _, m := range msgs {
		if !stale(m) {
			kept = append(kept, m)
		}
	}
	return kept
}

// checkAcked checks "Log durable before use" for the responses of
// appends: an acknowledgement of an append (to the leader or to itself)
// covers only entries the log holds (its bounds move only after the
// synced write).
func (n *Node) checkAcked(msgs []*pb.Message) {
	last, _ := n.cfg.Log.LastIndex()
	for _, m := range msgs {
		t := m.GetType()
		if (t == pb.MsgAppResp && !m.GetReject() || t == pb.MsgStorageAppendResp) && m.GetIndex() > last {
			invariantFail("Log durable before use", "%v acknowledges index %d; the log holds up to %d", t, m.GetIndex(), last)
		}
	}
}

// stepLocal steps messages addressed to this member (local storage
// responses, its own acknowledgements). A refusal is an old term's: Raft
// drops it.
func (n *Node) stepLocal(msgs []*pb.Message) {
	for _, m := range msgs {
		_ = n.rn.Step(m)
		if hoptrace.Enabled {
			n.traceStepped(m)
		}
	}
}

// appendDone is what the appender finished: how many appends, the
// responses addressed to this member (those to others it sent), or the
// error that stopped it.
type appendDone struct {
	msgs  int
	steps []*pb.Message
	err   error
	at    int64 // when the write returned (package hoptrace)
}

// appendReq is a MsgStorageAppend on its way to the appender, with the
// times package hoptrace measures from: when it was handed over, and (on
// a follower) when the loop stepped the append it writes.
type appendReq struct {
	m           *pb.Message
	at, stepped int64
}

// appendsDone steps the responses of the appends the appender finished.
// Called on the loop only.
func (n *Node) appendsDone() error {
	for _, d := range n.appended.take() {
		n.appending -= d.msgs
		if d.err != nil {
			return d.err
		}
		n.stepLocal(d.steps)
		if hoptrace.Enabled {
			hoptrace.Since(hoptrace.AppendBack, d.at)
		}
	}
	return nil
}

// waitAppends returns once the appender finished every append handed to
// it, their responses stepped.
func (n *Node) waitAppends() error {
	for n.appending > 0 {
		select {
		case <-n.appended.signal:
		case <-n.appenderEnd:
			// It ended on an error, which it queued first.
		}
		if err := n.appendsDone(); err != nil {
			return err
		}
		if n.appending > 0 {
			select {
			case <-n.appenderEnd:
				return ErrStopped
			default:
			}
		}
	}
	return nil
}

// appender is the goroutine that writes the log ("Log written off the
// loop"): it takes every append queued, writes them in one synced Pebble
// batch (appends that queued behind a sync share the next one; one whose
// entries replace those of an earlier one starts the next batch,
// appendRun), then
// sends their responses for other members (a follower's acknowledgement
// leaves as soon as its entries are durable) and hands those for this
// member back to the loop. A write that fails ends it, and the loop.
func (n *Node) appender() {
	defer close(n.appenderEnd)
	for {
		select {
		case <-n.appendq.signal:
		case <-n.appendStop:
			return
		}
		reqs := n.appendq.take()
		for len(reqs) > 0 {
			k := appendRun(reqs)
			if err := n.writeAppends(reqs[:k]); err != nil {
				return
			}
			reqs = reqs[k:]
		}
	}
}

// appendRun is how many of the appends reqs begins with one write may
// carry: up to the first that overlaps the entries of those before it (a
// new leader's entries replacing a tail). The earlier appends' responses
// acknowledge the entries they replace, so they leave only after a write
// that held those entries ("Log durable before use"); the overlapping
// append is written next, on its own write. TestAppendRun; found by
// TestLinearizableKV (seed 1811) under the invariants tag.
func appendRun(reqs []appendReq) int {
	var last uint64 // the last index the run's entries reach (0: none yet)
	for i, r := range reqs {
		ents := r.m.GetEntries()
		if len(ents) == 0 {
			continue
		}
		if last != 0 && ents[0].GetIndex() <= last {
			return i
		}
		last = ents[len(ents)-1].GetIndex()
	}
	return len(reqs)
}

// writeAppends writes appends in one synced batch, sends their responses
// for other members and hands this member's own back to the loop. It
// returns the write's error, which ends the appender.
func (n *Node) writeAppends(reqs []appendReq) error {
	steps, err := n.saveAppends(reqs, false)
	d := appendDone{msgs: len(reqs), steps: steps, err: err}
	if hoptrace.Enabled {
		d.at = hoptrace.Now()
	}
	n.gate.add(0, -len(reqs))
	n.appended.push(d)
	return err
}

// saveAppends writes appends in one synced batch and, once it is
// durable, sends their responses for other members and returns this
// member's own. onLoop says the node loop writes them itself ("Follower's
// log written on its loop"), not the appender.
func (n *Node) saveAppends(reqs []appendReq, onLoop bool) ([]*pb.Message, error) {
	msgs := make([]*pb.Message, len(reqs))
	var hs *pb.HardState
	var ents []*pb.Entry
	var began int64
	if hoptrace.Enabled {
		began = hoptrace.Now()
		hoptrace.Count(hoptrace.AppendBatch, len(reqs))
	}
	for i, r := range reqs {
		m := r.m
		msgs[i] = m
		if hoptrace.Enabled {
			hoptrace.Since(hoptrace.AppendQueue, r.at)
		}
		if h := appendHardState(m); h != nil {
			hs = h
		}
		ents = joinEntries(ents, m.GetEntries())
	}
	if err := n.cfg.Log.Save(hs, ents, nil, true); err != nil {
		return nil, err
	}
	if hoptrace.Enabled {
		hoptrace.Since(hoptrace.AppendSync, began)
	}
	var out, steps []*pb.Message
	term := n.cfg.Log.term()
	for _, m := range msgs {
		for _, r := range dropStaleAcks(m.GetResponses(), term) {
			if r.GetTo() == n.cfg.ID {
				steps = append(steps, r)
			} else {
				out = append(out, r)
			}
		}
	}
	if invariantsEnabled {
		n.checkAcked(out)
		n.checkAcked(steps)
	}
	n.send(out)
	if hoptrace.Enabled && len(out) > 0 {
		for _, r := range reqs {
			hoptrace.Since(hoptrace.FollowerAck, r.stepped)
		}
	}
	n.mu.Lock()
	n.status.Appends++
	n.status.AppendMsgs += uint64(len(msgs))
	if onLoop {
		n.status.AppendsOnLoop++
	}
	n.mu.Unlock()
	return steps, nil
}

// joinEntries appends the entries of a later append to those of earlier
// ones, the later replacing any they overlap (a new leader's entries
// replace a tail), as writing them one after the other would. It never
// writes into the slices it is given (Raft's own).
func joinEntries(acc, next []*pb.Entry) []*pb.Entry {
	if len(acc) == 0 {
		return next
	}
	if len(next) == 0 {
		return acc
	}
	lo, base := next[0].GetIndex(), acc[0].GetIndex()
	if lo <= base {
		return next
	}
	k := min(lo-base, uint64(len(acc)))
	return append(acc[:k:k], next...)
}

// queue hands items from one goroutine to another without blocking the
// sender: push appends and signals, take empties it.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	signal chan struct{}
}

func newQueue[T any]() *queue[T] { return &queue[T]{signal: make(chan struct{}, 1)} }

func (q *queue[T]) push(x T) {
	q.mu.Lock()
	q.items = append(q.items, x)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *queue[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

func (n *Node) apply(e *pb.Entry) error {
	if invariantsEnabled && e.GetIndex() != n.applied+1 {
		invariantFail("Apply in log order", "entry %d applied after %d", e.GetIndex(), n.applied)
	}
	if invariantsEnabled {
		if last, _ := n.cfg.Log.LastIndex(); e.GetIndex() > last {
			invariantFail("Log durable before use", "entry %d applied; the log holds up to %d", e.GetIndex(), last)
		}
	}
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.GetData()) == 0 {
			// A new leader's empty entry: once the leader applied its
			// own, it applied every earlier entry ("Drained before
			// writable").
			if n.soft.RaftState == raft.StateLeader && e.GetTerm() == n.leaderTerm {
				n.drained = true
			}
			break
		}
		if len(e.GetData()) < headerLen {
			return fmt.Errorf("repl: entry %d has no proposal header", e.GetIndex())
		}
		var t0 int64
		if hoptrace.Enabled {
			t0 = hoptrace.Now()
		}
		if err := n.cfg.SM.Apply(e.GetIndex(), e.GetData()[headerLen:]); err != nil {
			return fmt.Errorf("repl: apply entry %d: %w", e.GetIndex(), err)
		}
		if hoptrace.Enabled {
			hoptrace.Since(hoptrace.LoopApply, t0)
		}
		n.sinceSnap += uint64(len(e.GetData()))
		if binary.BigEndian.Uint64(e.GetData()) == n.incarnation {
			seq := binary.BigEndian.Uint64(e.GetData()[8:])
			if p, ok := n.pending[seq]; ok {
				delete(n.pending, seq)
				p.index = e.GetIndex()
				if hoptrace.Enabled && p.tr != nil {
					p.tr.done = hoptrace.Since(hoptrace.EntryApply, p.tr.commit)
				}
				p.done <- nil
			}
		}
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return err
		}
		known := slices.Contains(n.confState.GetVoters(), cc.GetNodeId()) || slices.Contains(n.confState.GetLearners(), cc.GetNodeId())
		n.confState = n.rn.ApplyConfChange(&cc)
		n.setConf()
		if err := n.cfg.Log.SetConfState(e.GetIndex(), n.confState); err != nil {
			return err
		}
		if first, _ := n.cfg.Log.FirstIndex(); first > 1 && !known && cc.GetType() != pb.ConfChangeType_ConfChangeRemoveNode {
			// Raft refuses a snapshot whose configuration does not name
			// its receiver: a member added once the log was compacted
			// needs a snapshot taken after its addition.
			n.resnap = true
		}
		var addr string
		if c := cc.GetContext(); len(c) >= headerLen {
			addr = string(c[headerLen:])
			if binary.BigEndian.Uint64(c) == n.incarnation {
				seq := binary.BigEndian.Uint64(c[8:])
				if p, ok := n.confs[seq]; ok {
					delete(n.confs, seq)
					p.index = e.GetIndex()
					defer func() { p.done <- nil }()
				}
			}
		}
		if n.cfg.OnConfChange != nil {
			n.cfg.OnConfChange(cc.GetNodeId(), addr, cc.GetType(), n.confState)
		}
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return err
		}
		n.confState = n.rn.ApplyConfChange(&cc)
		n.setConf()
		if err := n.cfg.Log.SetConfState(e.GetIndex(), n.confState); err != nil {
			return err
		}
	}
	n.applied = e.GetIndex()
	return nil
}

// send hands a Ready's messages to the transport, without vote requests
// while frozen, and returns the members sent a snapshot.
func (n *Node) send(msgs []*pb.Message) []uint64 {
	if len(msgs) == 0 {
		return nil
	}
	var snapsTo []uint64
	out := msgs
	if n.frozen() {
		// A frozen member asks nobody for votes (Freeze): without
		// them its campaigns cannot win.
		out = make([]*pb.Message, 0, len(msgs))
		for _, m := range msgs {
			if t := m.GetType(); t != pb.MsgVote && t != pb.MsgPreVote {
				out = append(out, m)
			}
		}
	}
	n.cfg.Transport.Send(out)
	for _, m := range msgs {
		if m.GetType() == pb.MsgSnap {
			snapsTo = append(snapsTo, m.GetTo())
		}
	}
	return snapsTo
}

// roleChanged fails what leadership was needed for.
func (n *Node) roleChanged(s raft.SoftState) {
	prev := n.soft
	n.soft = s
	if prev.RaftState == raft.StateLeader && s.RaftState != raft.StateLeader {
		n.failPending(ErrLeadershipLost)
	}
	if s.RaftState == raft.StateLeader && prev.RaftState != raft.StateLeader {
		n.leaderTerm = n.rn.BasicStatus().GetTerm()
		n.drained = false
	}
}

// failPending fails the proposals and the reads that still need this
// member to be leader (reads with a read index only wait for apply).
func (n *Node) failPending(err error) {
	n.chainBroken = true
	for seq, p := range n.pending {
		p.done <- err
		delete(n.pending, seq)
	}
	for id, r := range n.reads {
		r.done <- err
		delete(n.reads, id)
	}
	for seq, p := range n.confs {
		p.done <- err
		delete(n.confs, seq)
	}
}

// setConf copies the configuration into the status.
func (n *Node) setConf() {
	n.mu.Lock()
	n.setConfLocked()
	n.mu.Unlock()
}

func (n *Node) setConfLocked() {
	n.status.Voters = append([]uint64(nil), n.confState.GetVoters()...)
	n.status.Learners = append([]uint64(nil), n.confState.GetLearners()...)
}

func (n *Node) failAll(err error) {
	n.failPending(err)
	for _, r := range n.readsReady {
		r.done <- err
	}
	n.readsReady = nil
}

// quietLogger drops the Raft library's log but keeps its panics.
type quietLogger struct{}

func (quietLogger) Debug(...any)              {}
func (quietLogger) Debugf(string, ...any)     {}
func (quietLogger) Info(...any)               {}
func (quietLogger) Infof(string, ...any)      {}
func (quietLogger) Warning(...any)            {}
func (quietLogger) Warningf(string, ...any)   {}
func (quietLogger) Error(...any)              {}
func (quietLogger) Errorf(string, ...any)     {}
func (quietLogger) Fatal(v ...any)            { panic(fmt.Sprint(v...)) }
func (quietLogger) Fatalf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
func (quietLogger) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (quietLogger) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
