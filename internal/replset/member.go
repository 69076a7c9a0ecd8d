package replset

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/storage"
)

// configKey holds the replica set configuration in the data store: it is
// written by a replicated commit group like any write, so every member
// learns a new configuration when it applies that group.
var configKey = storage.SystemKey("replset/config")

// Options configure a Member.
type Options struct {
	// SetName is --replSet.
	SetName string
	// ConfigSvr is --configsvr: the member is one of a sharded cluster's
	// config servers (its configuration must say configsvr: true, and
	// hello says configsvr: 2).
	ConfigSvr bool
	// Dir is the data directory; the member keeps its Raft log and its
	// id under Dir/replset.
	Dir string
	// Port and BindIP are the server's, to recognise this member's host
	// in a configuration.
	Port   int
	BindIP string
	Engine *engine.Engine
	Logger *slog.Logger
	// TickInterval is one Raft tick (default 10ms): the election timeout
	// and heartbeat interval of the configuration are counted in them.
	TickInterval time.Duration
	// CompactEntries and CompactBytes bound the Raft log (repl.Config's):
	// past either, a member checkpoints its store and truncates its log.
	// 0 takes the defaults (defaultCompactEntries, defaultCompactBytes);
	// the environment variable CAIRN_RAFT_COMPACT_ENTRIES overrides the
	// entry bound (tests make members compact after a few writes). A
	// compaction keeps a quarter of the entry bound behind its snapshot.
	CompactEntries, CompactBytes uint64
	// Transport, Clock, JoinAs and Dial run a member without the network:
	// package rstest starts several in one process over repl's faulty
	// Network with manual clocks. Transport returns member id's transport
	// (default: TCP on the server's port, peers from the configuration);
	// Clock drives the Raft ticks (default the real clock); JoinAs, if
	// not 0, is the Raft id a member without state starts its node with
	// at once (over TCP it learns its id from the primary's first
	// connection); Dial checks that a host answers (replSetInitiate's and
	// replSetReconfig's checks; default a TCP connection).
	Transport func(id uint64) repl.Transport
	Clock     repl.Clock
	JoinAs    uint64
	Dial      func(host string) error
	// OnRestoreProgress, if set, is called on the node loop after each
	// batch of a snapshot's install, with the bytes copied so far (0 after
	// the batch that deleted the store's contents): rstest cuts a member's
	// power in the middle of an install there.
	OnRestoreProgress func(copied int64)
	// OnPromote runs when this member becomes primary, after it applied
	// every earlier term's groups and before clients may write: the
	// session table forgets what it cached, so each session re-reads its
	// newest txnNumber from the replicated config.transactions.
	OnPromote func()
	// OnStepDown runs (on its own goroutine) when this member stops being
	// a writable primary: the session table aborts the open transactions,
	// as a stepping-down mongod does.
	OnStepDown func()
	// Key is the key file's key (--keyFile): with it, members prove to
	// each other that they hold it before any Raft message passes
	// (repl.MemberKey); nil lets any member in.
	Key []byte
	// TLS, when set, is the client configuration this member dials the
	// others with (tlsconn.Member; under preferTLS and requireTLS); the
	// connections they open arrive through the server's own TLS.
	TLS *tls.Config
}

// Member is this server's part in a replica set.
type Member struct {
	opts    Options
	eng     *engine.Engine
	fs      vfs.FS // the engine's: every file of the member (files.go)
	log     *slog.Logger
	started time.Time

	mu     sync.Mutex // guards node start and the fields below
	node   *repl.Node
	logs   *repl.LogStore
	tr     peerBook
	tcp    *repl.TCPTransport // nil when Options.Transport gave another
	id     uint64
	cfg    *Config
	cfgRaw []byte

	// raftWritable mirrors the node's Writable (a drained leader): the
	// pipeline may propose. primary is set once Promote ran for the term:
	// clients may write (hello's isWritablePrimary).
	raftWritable atomic.Bool
	primary      atomic.Bool
	role         atomic.Pointer[repl.RoleChange]

	// [ownLo, ownHi] are the nonces of the groups this member's pipeline
	// proposed and waits for (empty: none); nonces rise by one per group
	// from a random value per run, so another member's never match ("Own
	// groups").
	ownLo, ownHi atomic.Uint64
	nonce        uint64 // pipeline goroutine only

	installing  atomic.Bool // a snapshot's install is under way (STARTUP2)
	lastApplied atomic.Uint64
	lastWall    atomic.Int64 // unix ms of the primary's clock at the last applied group
	applyMu     sync.Mutex   // serialises applies (node loop) with Restore

	topo      topology
	memberKey *repl.MemberKey // nil: members do not authenticate
	stopc     chan struct{}
	wg        sync.WaitGroup
	loaders   sync.WaitGroup // Restore's loads of the configuration; Close waits once the node stopped
	frozenTil atomic.Int64
}

// peerBook is where a transport learns where members listen
// (repl.TCPTransport); transports of tests ignore it.
type peerBook interface {
	AddPeer(id uint64, addr string)
	SetAddr(addr string)
}

type noPeerBook struct{}

func (noPeerBook) AddPeer(uint64, string) {}
func (noPeerBook) SetAddr(string)         {}

// dial checks that host answers (Options.Dial).
func (m *Member) dial(host string) error {
	if m.opts.Dial != nil {
		return m.opts.Dial(host)
	}
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// New prepares a member over eng. It installs the replication hook on
// the engine's store, so from now on no write reaches the store except
// through the replicated log; a member that joined a set before resumes
// its node.
func New(opts Options) (*Member, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TickInterval == 0 {
		opts.TickInterval = 10 * time.Millisecond
	}
	if opts.CompactEntries == 0 {
		opts.CompactEntries = defaultCompactEntries
		if v, err := strconv.ParseUint(os.Getenv("CAIRN_RAFT_COMPACT_ENTRIES"), 10, 64); err == nil && v > 0 {
			opts.CompactEntries = v
		}
	}
	if opts.CompactBytes == 0 {
		opts.CompactBytes = defaultCompactBytes
	}
	m := &Member{opts: opts, eng: opts.Engine, fs: opts.Engine.Storage().FS(), log: opts.Logger.With("component", "replset"), started: time.Now(), stopc: make(chan struct{})}
	m.nonce = rand.Uint64() >> 1
	m.ownLo.Store(m.nonce + 1)
	m.ownHi.Store(m.nonce)
	if opts.Key != nil {
		k, err := repl.NewMemberKey(opts.Key)
		if err != nil {
			return nil, err
		}
		m.memberKey = k
	}
	m.topo.init()
	if err := m.loadConfig(); err != nil {
		return nil, err
	}
	if err := m.eng.Storage().Write(func(*storage.Txn) error {
		// On the pipeline goroutine, the only reader of the hook.
		m.eng.Storage().SetPropose(m.propose, repl.HeaderLen+payloadHeader)
		m.eng.Storage().SetLogBusy(m.logBusy)
		return nil
	}); err != nil {
		return nil, err
	}
	if id, ok, err := m.readID(); err != nil {
		return nil, err
	} else if ok {
		if err := m.startNode(id, nil); err != nil {
			return nil, err
		}
	} else if opts.JoinAs != 0 {
		if err := m.startNode(opts.JoinAs, nil); err != nil {
			return nil, err
		}
	}
	m.wg.Add(1)
	go m.reconcileLoop()
	return m, nil
}

func (m *Member) dir() string    { return filepath.Join(m.opts.Dir, "replset") }
func (m *Member) idFile() string { return filepath.Join(m.dir(), "member-id") }

// readID reads the member's persisted Raft id (it joined a set before).
func (m *Member) readID() (uint64, bool, error) {
	b, err := readFile(m.fs, m.idFile())
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	id, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || id == 0 {
		return 0, false, fmt.Errorf("replset: %s is damaged", m.idFile())
	}
	return id, true, nil
}

func (m *Member) writeID(id uint64) error {
	if err := mkdirSynced(m.fs, m.dir()); err != nil {
		return err
	}
	return writeFileSynced(m.fs, m.idFile(), fmt.Appendf(nil, "%d\n", id))
}

// startNode starts the Raft node of member id: with peers a new group is
// bootstrapped (replSetInitiate); without, the log holds the state (a
// restart) or is empty and the node waits for its leader (a member being
// added). Callers hold no lock.
func (m *Member) startNode(id uint64, peers []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.node != nil {
		return nil
	}
	if err := m.writeID(id); err != nil {
		return err
	}
	m.removeReceptions()
	// The log syncs once per append, a few KB each: its log file is
	// written ahead so that a sync writes the records alone (storage's
	// "Log syncs overwrite").
	logs, err := repl.OpenLogStore(filepath.Join(m.dir(), "raft"), storage.LogAheadFS(m.fs))
	if err != nil {
		return err
	}
	applied, err := m.eng.Storage().AppliedIndex()
	if err != nil {
		logs.Close()
		return err
	}
	m.lastApplied.Store(applied)
	me := ""
	if m.cfg != nil {
		if mc, ok := m.cfg.member(id); ok {
			me = mc.Host
		}
	}
	var tr peerBook = noPeerBook{}
	var transport repl.Transport
	var tcp *repl.TCPTransport
	if m.opts.Transport != nil {
		transport = m.opts.Transport(id)
	} else {
		tcp = repl.NewTCPTransport(id, me)
		tcp.SetMemberKey(m.memberKey)
		tcp.SetTLS(m.opts.TLS)
		tr, transport = tcp, tcp
	}
	clock := m.opts.Clock
	if clock == nil {
		clock = repl.RealClock{}
	}
	if m.cfg != nil {
		for _, mc := range m.cfg.Members {
			if mc.raftID() != id {
				tr.AddPeer(mc.raftID(), mc.Host)
			}
		}
	}
	et, hb := int64(defaultElectionTimeoutMillis), int64(defaultHeartbeatIntervalMillis)
	if m.cfg != nil {
		et, hb = m.cfg.ElectionTimeoutMillis, m.cfg.HeartbeatIntervalMillis
	}
	tick := m.opts.TickInterval
	node, err := repl.NewNode(repl.Config{
		ID: id, Peers: peers, Log: logs, Transport: transport, Clock: clock, SM: (*stateMachine)(m),
		TickInterval:   tick,
		ElectionTicks:  max(int(time.Duration(et)*time.Millisecond/tick), 2),
		HeartbeatTicks: max(int(time.Duration(hb)*time.Millisecond/tick), 1),
		OnRoleChange:   m.roleChanged,
		CompactEntries: m.opts.CompactEntries,
		CompactBytes:   m.opts.CompactBytes,
		CompactKeep:    m.opts.CompactEntries / 4,
		Logger:         raftLogger(),
		OnConfChange: func(peer uint64, addr string, typ pb.ConfChangeType, _ *pb.ConfState) {
			if addr != "" && peer != id && typ != pb.ConfChangeType_ConfChangeRemoveNode {
				tr.AddPeer(peer, addr)
			}
			m.topo.bump()
		},
	})
	if err != nil {
		logs.Close()
		return err
	}
	m.node, m.logs, m.tr, m.tcp, m.id = node, logs, tr, tcp, id
	m.topo.bump()
	return nil
}

// nodeState returns the node and this member's id (nil before it joined).
func (m *Member) nodeState() (*repl.Node, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node, m.id
}

// ServeMember takes a connection another member opened to this server's
// port (its first bytes were repl.MemberStreamMagic, still unread in r).
// A member that holds no state yet learns its id from the first one: it
// is being added to a set by that set's primary.
func (m *Member) ServeMember(c net.Conn, r *bufio.Reader) {
	defer c.Close()
	p, err := repl.ReadPreamble(r)
	if err != nil {
		return
	}
	// Before anything acts on the preamble (it may start this member's
	// node): a peer without the key is turned away here.
	if err := m.memberKey.Accept(c, r, p); err != nil {
		m.log.Warn("a member connection failed authentication", "remote", c.RemoteAddr().String(), "claimedMember", p.From, "err", err)
		return
	}
	node, id := m.nodeState()
	if node == nil {
		if err := m.startNode(p.To, nil); err != nil {
			m.log.Error("cannot join the replica set", "err", err)
			return
		}
		m.log.Info("joining a replica set", "memberRaftId", p.To, "from", p.Addr)
		_, id = m.nodeState()
	}
	if id != p.To {
		return
	}
	m.mu.Lock()
	tcp := m.tcp
	m.mu.Unlock()
	if tcp != nil {
		_ = tcp.ServeConn(c, r, p)
	}
}

// Close stops the node and the log.
func (m *Member) Close() error {
	close(m.stopc)
	m.wg.Wait()
	m.mu.Lock()
	node, logs := m.node, m.logs
	m.mu.Unlock()
	var err error
	if node != nil {
		err = node.Stop()
	}
	m.loaders.Wait() // the node loop, which starts them, has stopped
	if logs != nil {
		if cerr := logs.Close(); err == nil {
			err = cerr
		}
	}
	m.topo.close()
	return err
}

// roleChanged runs on the node loop at every change of role, term, leader
// or writability; it must not block.
func (m *Member) roleChanged(rc repl.RoleChange) {
	prev := m.role.Swap(&rc)
	m.raftWritable.Store(rc.Writable)
	if !rc.Writable {
		m.primary.Store(false)
		if prev != nil && prev.Writable && m.opts.OnStepDown != nil {
			go m.opts.OnStepDown()
		}
	}
	if rc.Writable && (prev == nil || !prev.Writable || prev.Term != rc.Term) {
		go m.promote(rc.Term)
	}
	m.log.Info("replica set member state", "role", rc.Role.String(), "term", rc.Term, "leader", rc.Lead, "writable", rc.Writable)
	m.topo.bump()
}

// Term is the Raft term this member last saw (0 before any): the oplog's t.
func (m *Member) Term() int64 {
	if rc := m.role.Load(); rc != nil {
		return int64(rc.Term)
	}
	return 0
}

// promote readies the engine to write (engine.Promote) and then lets
// clients write, if this member still leads term.
func (m *Member) promote(term uint64) {
	for attempt := 1; ; attempt++ {
		err := m.eng.Promote()
		if err == nil {
			break
		}
		// A write of Promote's can fail with a chain of the previous term
		// the pipeline had not yet given up (storage's "Chained groups
		// fail together"); the next attempt runs afresh.
		if rc := m.role.Load(); attempt < 5 && rc != nil && rc.Writable && rc.Term == term {
			continue
		}
		m.log.Warn("becoming primary failed", "term", term, "err", err)
		return
	}
	if rc := m.role.Load(); rc != nil && rc.Writable && rc.Term == term {
		if m.opts.OnPromote != nil {
			m.opts.OnPromote()
		}
		m.primary.Store(true)
		m.log.Info("this member is primary", "term", term)
		m.topo.bump()
	}
}

// Payload of a replicated group: a flags byte, the proposing pipeline's
// nonce, the primary's wall clock (unix milliseconds) and the batch.
const (
	flagCatalog = 1 << iota // the group changed the catalog
)

const payloadHeader = 1 + 8 + 8

// propose is storage's Hooks.Propose: it starts the group's proposal and
// returns what waits until the set committed it and this member applied
// it. The pipeline proposes group k+1 while group k replicates (storage's
// "Pipelined groups"); follows makes the node refuse a group whose
// predecessors did not all reach its log in this term (repl's "Chained
// proposals").
func (m *Member) propose(repr []byte, publishes, follows bool) func() error {
	node, _ := m.nodeState()
	if node == nil || !m.raftWritable.Load() {
		err := notWritablePrimary()
		return func() error { return err }
	}
	m.nonce++
	nonce := m.nonce
	// The pipeline left ProposeRoom bytes before the group's records for
	// the node's header and ours: the group is proposed without a copy.
	payload := repr[repl.HeaderLen:]
	payload[0] = 0
	if publishes {
		payload[0] |= flagCatalog
	}
	binary.BigEndian.PutUint64(payload[1:], nonce)
	binary.BigEndian.PutUint64(payload[9:], uint64(time.Now().UnixMilli()))
	m.ownHi.Store(nonce) // before the node can apply it ("Own groups")
	p := node.StartOwned(repr, follows)
	return func() error {
		_, err := p.Wait()
		// Groups complete in order: the next one in flight is nonce+1.
		m.ownLo.Store(nonce + 1)
		return replError(err)
	}
}

// logBusy is storage's Hooks.LogBusy: whether this member's Raft log is
// still writing (repl's Node.LogBusy), so that the pipeline gathers the
// next group meanwhile (storage's "Groups gather while the log syncs").
func (m *Member) logBusy() <-chan struct{} {
	node, _ := m.nodeState()
	if node == nil {
		return nil
	}
	return node.LogBusy()
}

// own reports whether nonce is of a group this member's pipeline proposed
// and still waits for ("Own groups").
func (m *Member) own(nonce uint64) bool {
	return nonce != 0 && m.ownLo.Load() <= nonce && nonce <= m.ownHi.Load()
}

// replError maps the node's errors to the codes drivers act on.
func replError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, repl.ErrNotLeader), errors.Is(err, raft.ErrProposalDropped):
		return notWritablePrimary()
	case errors.Is(err, repl.ErrLeadershipLost), errors.Is(err, repl.ErrChainBroken):
		e := mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "operation was interrupted because of a replica set state change (leadership lost; the write may or may not be applied)")
		e.Extra = []mongoerr.Field{{Name: "errorLabels", Value: bson.A{"RetryableWriteError"}}}
		return e
	case errors.Is(err, repl.ErrStopped):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")
	}
	return err
}

func notWritablePrimary() error {
	return mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
}

// stateMachine is the member as the node's state machine: the data store.
type stateMachine Member

// Apply applies a committed group on every member alike (engine's
// ApplyReplicated); own groups publish their catalog through the waiting
// pipeline, others by reloading it.
func (sm *stateMachine) Apply(index uint64, payload []byte) error {
	m := (*Member)(sm)
	if len(payload) < payloadHeader {
		return fmt.Errorf("replset: entry %d is not a commit group", index)
	}
	nonce := binary.BigEndian.Uint64(payload[1:])
	own := m.own(nonce)
	if err := m.eng.ApplyReplicated(index, payload[payloadHeader:], payload[0]&flagCatalog != 0, own); err != nil {
		return err
	}
	m.lastApplied.Store(index)
	m.lastWall.Store(int64(binary.BigEndian.Uint64(payload[9:])))
	if !bytes.Contains(payload[payloadHeader:], configKey) {
		// A group that did not write the configuration (a batch record
		// holds its key's bytes whole): nothing to read back.
		return nil
	}
	v, _, err := m.eng.Storage().Get(nil, configKey)
	if err != nil {
		return err
	}
	m.mu.Lock()
	changed := !bytes.Equal(v, m.cfgRaw)
	m.mu.Unlock()
	if changed {
		// The configuration holds the members' addresses: a member that
		// lost it to a power cut (groups are applied without a sync) would
		// restart knowing no peer, and if every member lost it, the set
		// could never elect again. Configurations change rarely; each is
		// synced once applied (invariant "Configuration durable once
		// applied", doc.go).
		if err := m.eng.Storage().SyncApplied(); err != nil {
			return err
		}
		return m.loadConfig()
	}
	return nil
}

// Applied is the index the store holds.
func (sm *stateMachine) Applied() uint64 { return (*Member)(sm).lastApplied.Load() }

// loadConfig reads the configuration from the store.
func (m *Member) loadConfig() error {
	raw, ok, err := m.eng.Storage().Get(nil, configKey)
	if err != nil || !ok {
		return err
	}
	cfg, err := ParseConfig(bsoncore.Document(raw))
	if err != nil {
		return fmt.Errorf("replset: stored configuration: %w", err)
	}
	m.mu.Lock()
	m.cfg, m.cfgRaw = cfg, raw
	tr, id := m.tr, m.id
	m.mu.Unlock()
	if tr != nil {
		for _, mc := range cfg.Members {
			if mc.raftID() == id {
				tr.SetAddr(mc.Host)
			} else {
				tr.AddPeer(mc.raftID(), mc.Host)
			}
		}
	}
	m.topo.bump()
	return nil
}

// config returns the current configuration (nil before initiate).
func (m *Member) config() *Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// writeConfig stores cfg through the replicated log.
func (m *Member) writeConfig(cfg *Config) error {
	raw := cfg.Document(0)
	return m.eng.Storage().Write(func(tx *storage.Txn) error {
		tx.Set(configKey, raw)
		return nil
	})
}

// reconcileLoop makes the Raft configuration follow the replica set
// configuration, on the primary: members new to it join as learners and
// become voters once caught up ("Learners first"); members gone from it
// are removed. One change at a time, as Raft takes them.
func (m *Member) reconcileLoop() {
	defer m.wg.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.stopc:
			return
		case <-t.C:
		}
		if err := m.reconcile(); err != nil {
			m.log.Debug("membership change", "err", err)
		}
	}
}

func (m *Member) reconcile() error {
	node, self := m.nodeState()
	cfg := m.config()
	if node == nil || cfg == nil || !m.primary.Load() {
		return nil
	}
	st := node.Status()
	voters, learners := idSet(st.Voters), idSet(st.Learners)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, mc := range cfg.Members {
		id := mc.raftID()
		if !voters[id] && !learners[id] {
			_, err := node.ProposeConfChange(ctx, pb.ConfChangeType_ConfChangeAddLearnerNode, id, mc.Host)
			return err
		}
		if learners[id] && mc.Votes == 1 {
			pr := node.Progress()[id]
			if pr.Match+catchUpSlack >= st.Commit {
				_, err := node.ProposeConfChange(ctx, pb.ConfChangeType_ConfChangeAddNode, id, mc.Host)
				return err
			}
		}
		if voters[id] && mc.Votes == 0 && id != self {
			_, err := node.ProposeConfChange(ctx, pb.ConfChangeType_ConfChangeAddLearnerNode, id, mc.Host)
			return err
		}
	}
	// A member leaves Raft's configuration once it holds the replica set
	// configuration without it (so it knows it is removed), or once it
	// is not heard from.
	var progress map[uint64]repl.Progress
	for _, ids := range []map[uint64]bool{voters, learners} {
		for id := range ids {
			if _, ok := cfg.member(id); ok || id == self {
				continue
			}
			if progress == nil {
				progress = node.Progress()
			}
			if pr := progress[id]; pr.RecentActive && pr.Match+catchUpSlack < st.Commit {
				continue
			}
			_, err := node.ProposeConfChange(ctx, pb.ConfChangeType_ConfChangeRemoveNode, id, "")
			return err
		}
	}
	return nil
}

// The log's default bounds: a checkpoint costs hard links and a flush, so
// a few per minute under load are cheap; a member further behind than the
// bound catches up by snapshot.
const (
	defaultCompactEntries = 20000
	defaultCompactBytes   = 256 << 20
)

// catchUpSlack is how far behind the commit index a learner may be when
// it is made a voter.
const catchUpSlack = 8

func idSet(ids []uint64) map[uint64]bool {
	out := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// topology is hello's topologyVersion: a counter bumped at every change
// a driver must see, and a channel closed at each bump for awaitable
// hellos.
type topology struct {
	mu      sync.Mutex
	counter int64
	changed chan struct{}
	closed  bool
}

func (t *topology) init() { t.changed = make(chan struct{}) }

func (t *topology) bump() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.counter++
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *topology) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.changed)
	}
}

// Topology returns the topologyVersion counter and a channel closed at
// its next change.
func (m *Member) Topology() (int64, <-chan struct{}) {
	m.topo.mu.Lock()
	defer m.topo.mu.Unlock()
	return m.topo.counter, m.topo.changed
}

// raftLogger is the Raft library's log: on standard error with
// CAIRN_RAFT_LOG=1 (debugging), else discarded.
func raftLogger() raft.Logger {
	if os.Getenv("CAIRN_RAFT_LOG") == "" {
		return nil
	}
	l := &raft.DefaultLogger{Logger: stdlog.New(os.Stderr, "raft ", stdlog.LstdFlags|stdlog.Lmicroseconds)}
	l.EnableDebug()
	return l
}
