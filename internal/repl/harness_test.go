package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
)

// memSM is the tests' state machine: the applied payloads in order (each
// as "index<TAB>payload"), and a
// key-value map built from "put k v" payloads.
type memSM struct {
	mu      sync.Mutex
	applied uint64
	Log     []string
	KV      map[string]string
}

func newMemSM() *memSM { return &memSM{KV: map[string]string{}} }

func (s *memSM) Apply(index uint64, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return fmt.Errorf("apply %d after %d", index, s.applied)
	}
	s.applied = index
	p := string(payload)
	s.Log = append(s.Log, fmt.Sprintf("%d\t%s", index, p))
	if f := strings.Fields(p); len(f) >= 3 && f[0] == "put" {
		s.KV[f[1]] = f[2]
	}
	return nil
}

func (s *memSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(s)
}

func (s *memSM) Restore(index uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Log, s.KV, s.applied = nil, map[string]string{}, index
	if len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, s)
}

func (s *memSM) Applied() uint64 { return 0 } // kept in memory: gone at a restart

func (s *memSM) snapshotLog() ([]string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.Log), s.applied
}

func (s *memSM) get(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.KV[k]
}

// cluster is an in-process group on a faulty Network, each member with
// its own crashable in-memory file system and its own manual clock.
type cluster struct {
	t      testing.TB
	ids    []uint64
	net    *Network
	rnd    *rand.Rand
	fs     map[uint64]*vfs.MemFS
	logs   map[uint64]*LogStore
	nodes  map[uint64]*Node
	sms    map[uint64]*memSM
	clocks map[uint64]*ManualClock
	paused map[uint64]bool
	rates  map[uint64]float64 // clock skew: a member's clock runs at this rate (default 1)

	mu      sync.Mutex
	leaders map[uint64]uint64 // term → the member that led it
	changes []RoleChange
	twoLead []string

	stopTicks chan struct{}
	tickWG    sync.WaitGroup

	tcpAddrs map[uint64]string // members talk over TCP on loopback when set
	disk     string            // members keep their logs on disk under it when set

	// With streaming set (before the members start), the state machines
	// stream their snapshots (streamSM) from snapshot stores that survive
	// restarts, and members compact by themselves every compactEvery
	// entries, keeping compactKeep.
	streaming                 bool
	compactEvery, compactKeep uint64
	snaps                     map[uint64]*snapStore
	// gates, if set before the members start, hold the syncs of a
	// member's log while closed (syncGate).
	gates map[uint64]*syncGate
	// slowSync is the members' Config.slowSync (nanoseconds; 0: the
	// default): how long a write on a follower's loop may take before the
	// next ones go through its appender, read at the end of each.
	slowSync atomic.Int64
}

const testTick = 10 * time.Millisecond

func newCluster(t testing.TB, size int, seed uint64) *cluster {
	return newClusterOver(t, size, seed, false)
}

// newClusterOver starts a group whose members talk over the in-process
// Network, or, with tcp, over TCPTransport on loopback addresses that
// stay each member's across restarts.
func newClusterOver(t testing.TB, size int, seed uint64, tcp bool) *cluster {
	return newClusterOn(t, size, seed, tcp, "")
}

// newClusterOn is newClusterOver with the logs on disk under disk (if not
// empty): for benchmarks, as members cannot be crashed there.
func newClusterOn(t testing.TB, size int, seed uint64, tcp bool, disk string) *cluster {
	return newClusterWith(t, size, seed, tcp, disk, nil)
}

// newClusterWith is newClusterOn with setup applied to the cluster before
// its members start.
func newClusterWith(t testing.TB, size int, seed uint64, tcp bool, disk string, setup func(*cluster)) *cluster {
	c := &cluster{
		t: t, net: NewNetwork(seed), rnd: rand.New(rand.NewPCG(seed, 7)),
		fs: map[uint64]*vfs.MemFS{}, logs: map[uint64]*LogStore{}, nodes: map[uint64]*Node{},
		sms: map[uint64]*memSM{}, clocks: map[uint64]*ManualClock{}, paused: map[uint64]bool{}, rates: map[uint64]float64{},
		leaders: map[uint64]uint64{}, stopTicks: make(chan struct{}), disk: disk, snaps: map[uint64]*snapStore{},
	}
	if setup != nil {
		setup(c)
	}
	for i := 1; i <= size; i++ {
		id := uint64(i)
		c.ids = append(c.ids, id)
		c.fs[id] = vfs.NewCrashableMem()
		c.clocks[id] = NewManualClock(time.Unix(0, 0))
	}
	if tcp {
		c.tcpAddrs = map[uint64]string{}
		for _, id := range c.ids {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			c.tcpAddrs[id] = ln.Addr().String()
			ln.Close()
		}
	}
	for _, id := range c.ids {
		c.start(id)
	}
	c.tickWG.Add(1)
	go c.drive()
	t.Cleanup(c.close)
	return c
}

// drive moves every member's clock one tick per real millisecond (so an
// election timeout, 20 to 40 ticks, takes 20 to 40 ms), a skewed one
// slower, a paused one not at all.
func (c *cluster) drive() {
	defer c.tickWG.Done()
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-c.stopTicks:
			return
		case <-tk.C:
		}
		c.mu.Lock()
		for _, id := range c.ids {
			if c.paused[id] {
				continue
			}
			rate, ok := c.rates[id]
			if !ok {
				rate = 1
			}
			c.clocks[id].Advance(time.Duration(float64(testTick) * rate))
		}
		c.mu.Unlock()
	}
}

func (c *cluster) start(id uint64) {
	c.t.Helper()
	var log *LogStore
	var err error
	if c.disk != "" {
		log, err = OpenLogStore(filepath.Join(c.disk, fmt.Sprint(id)), nil)
	} else {
		var fs vfs.FS = c.fs[id]
		if g := c.gates[id]; g != nil {
			fs = gatedFS{FS: fs, g: g}
		}
		log, err = OpenLogStore("raft", fs)
	}
	if err != nil {
		c.t.Fatalf("member %d: %v", id, err)
	}
	sm := newMemSM()
	var machine StateMachine = sm
	if c.streaming {
		if c.snaps[id] == nil {
			c.snaps[id] = &snapStore{held: map[string][]byte{}}
		}
		machine = &streamSM{memSM: sm, store: c.snaps[id]}
	}
	var tr Transport = c.net.Endpoint(id)
	if c.tcpAddrs != nil {
		tt, err := ListenTCP(id, c.tcpAddrs[id])
		if err != nil {
			c.t.Fatalf("member %d: %v", id, err)
		}
		for peer, addr := range c.tcpAddrs {
			if peer != id {
				tt.AddPeer(peer, addr)
			}
		}
		tr = tt
	}
	n, err := NewNode(Config{
		ID: id, Peers: c.ids, Log: log, Transport: tr, Clock: c.clocks[id], SM: machine,
		TickInterval: testTick, ElectionTicks: 20, HeartbeatTicks: 2, OnRoleChange: c.observe,
		CompactEntries: c.compactEvery, CompactKeep: c.compactKeep, slowSync: func() time.Duration { return time.Duration(c.slowSync.Load()) },
	})
	if err != nil {
		c.t.Fatalf("member %d: %v", id, err)
	}
	c.mu.Lock()
	c.logs[id], c.nodes[id], c.sms[id] = log, n, sm
	c.mu.Unlock()
}

// observe checks "One leader per term" from the role notifications.
func (c *cluster) observe(rc RoleChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, rc)
	if rc.Role != raft.StateLeader {
		return
	}
	if prev, ok := c.leaders[rc.Term]; ok && prev != rc.ID {
		c.twoLead = append(c.twoLead, fmt.Sprintf("term %d: members %d and %d", rc.Term, prev, rc.ID))
	}
	c.leaders[rc.Term] = rc.ID
}

// crash stops a member as a kill -9 would: whatever its log had not synced
// is lost (a random part of it survives, as on a real disk).
func (c *cluster) crash(id uint64) {
	c.t.Helper()
	c.mu.Lock()
	n, log := c.nodes[id], c.logs[id]
	delete(c.nodes, id)
	delete(c.logs, id)
	c.mu.Unlock()
	if n == nil {
		return
	}
	if err := n.Stop(); err != nil {
		c.t.Fatalf("member %d stopped with %v", id, err)
	}
	clone := c.fs[id].CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: c.rnd.IntN(101), RNG: rand.New(rand.NewPCG(c.rnd.Uint64(), 1))})
	log.Close()
	c.fs[id] = clone
}

func (c *cluster) restart(id uint64) {
	c.crash(id)
	c.start(id)
}

func (c *cluster) close() {
	select {
	case <-c.stopTicks:
		return
	default:
	}
	close(c.stopTicks)
	c.tickWG.Wait()
	c.mu.Lock()
	nodes := c.nodes
	c.mu.Unlock()
	for id, n := range nodes {
		n.Stop()
		c.logs[id].Close()
	}
	c.net.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.twoLead {
		c.t.Errorf("two leaders in one term: %s", s)
	}
}

// pauseClocks stops (or restarts) every member's clock; restarting also
// ends every skew.
func (c *cluster) pauseClocks(paused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.ids {
		c.paused[id] = paused
	}
	if !paused {
		clear(c.rates)
	}
}

// skew makes member id's clock run at rate (0 < rate <= 1) of the others'.
func (c *cluster) skew(id uint64, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rates[id] = rate
}

func (c *cluster) sm(id uint64) *memSM {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sms[id]
}

// upTo returns the entries of an applied log at or below index.
func upTo(log []string, index uint64) []string {
	n := 0
	for n < len(log) {
		var i uint64
		fmt.Sscanf(log[n], "%d", &i)
		if i > index {
			break
		}
		n++
	}
	return log[:n]
}

// payloads returns each payload of an applied log with its index, failing
// the test if one appears twice ("Each proposal once").
func payloads(t *testing.T, log []string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, e := range log {
		idx, p, _ := strings.Cut(e, "\t")
		var i uint64
		fmt.Sscanf(idx, "%d", &i)
		if _, dup := out[p]; dup {
			t.Fatalf("payload %q applied twice", p)
		}
		out[p] = i
	}
	return out
}

func (c *cluster) node(id uint64) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// leader returns the live member that is leader in the highest term any
// live member knows, or 0.
func (c *cluster) leader() uint64 {
	var best, term uint64
	for _, id := range c.ids {
		n := c.node(id)
		if n == nil {
			continue
		}
		st := n.Status()
		if st.Role == raft.StateLeader && st.Term >= term {
			best, term = id, st.Term
		}
	}
	return best
}

func (c *cluster) waitLeader(timeout time.Duration) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.leader(); l != 0 {
			return l
		}
		time.Sleep(2 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %v", timeout)
	return 0
}

// propose proposes payload on whichever member is leader, trying again
// while there is none; it returns the entry's index once acknowledged.
func (c *cluster) propose(payload string, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	for {
		l := c.leader()
		if l != 0 {
			if n := c.node(l); n != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				idx, err := n.Propose(ctx, []byte(payload))
				cancel()
				if err == nil || !errors.Is(err, ErrNotLeader) {
					return idx, err
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no leader took %q within %v", payload, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// commit proposes payload until an attempt is acknowledged, and returns
// the acknowledged payload and its index. An attempt whose outcome is
// unknown (leadership lost, timed out: a loaded machine can stall a
// member past an election timeout) may still apply, so the next attempt
// carries a new name, payload + " ~k" (a fourth field memSM ignores).
func (c *cluster) commit(payload string, timeout time.Duration) (string, uint64, error) {
	deadline := time.Now().Add(timeout)
	name := payload
	for k := 1; ; k++ {
		idx, err := c.propose(name, time.Until(deadline))
		if err == nil {
			return name, idx, nil
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("%s: %w", payload, err)
		}
		name = fmt.Sprintf("%s ~%d", payload, k)
	}
}

// converge waits until every member has applied at least index, then
// checks "Same log everywhere": every member applied the same payloads in
// the same order. It returns that log.
func (c *cluster) converge(index uint64, timeout time.Duration) []string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		behind := []string{}
		for _, id := range c.ids {
			if _, a := c.sm(id).snapshotLog(); a < index {
				behind = append(behind, fmt.Sprintf("%d at %d", id, a))
			}
		}
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("members not at index %d after %v: %v", index, timeout, behind)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var want []string
	for i, id := range c.ids {
		got, _ := c.sm(id).snapshotLog()
		got = upTo(got, index) // members may have applied more since
		if i == 0 {
			want = got
			continue
		}
		if !slices.Equal(want, got) {
			c.t.Fatalf("member %d applied a different log than member %d:\n%v\n%v", id, c.ids[0], got, want)
		}
	}
	return want
}

// syncGate holds the syncs of the files of a gatedFS while it is closed:
// a log whose writes cannot become durable.
type syncGate struct {
	mu      sync.Mutex
	ch      chan struct{} // nil while open
	waiting atomic.Int32  // syncs held now
}

func (g *syncGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *syncGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *syncGate) wait() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch != nil {
		g.waiting.Add(1)
		<-ch
		g.waiting.Add(-1)
	}
}

// gatedFS is a file system whose writable files sync only through g.
type gatedFS struct {
	vfs.FS
	g *syncGate
}

func (f gatedFS) gated(file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return gatedFile{File: file, g: f.g}, nil
}

func (f gatedFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return f.gated(f.FS.Create(name, cat))
}

func (f gatedFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return f.gated(f.FS.ReuseForWrite(oldname, newname, cat))
}

func (f gatedFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return f.gated(f.FS.OpenReadWrite(name, cat, opts...))
}

type gatedFile struct {
	vfs.File
	g *syncGate
}

func (f gatedFile) Sync() error {
	f.g.wait()
	return f.File.Sync()
}

func (f gatedFile) SyncData() error {
	f.g.wait()
	return f.File.SyncData()
}

func (f gatedFile) SyncTo(length int64) (bool, error) {
	f.g.wait()
	return f.File.SyncTo(length)
}
