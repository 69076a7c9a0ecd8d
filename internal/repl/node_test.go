package repl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestNodeAPI: what a caller of Node sees on the leader and on a follower.
func TestNodeAPI(t *testing.T) {
	c := newCluster(t, 3, testSeed(t))
	c.waitLeader(5 * time.Second)
	_, idx, err := c.commit("put a 1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// On a loaded machine leadership may move between two calls: ask the
	// leader of the moment, again while the answer is that it moved.
	var l uint64
	for {
		l = c.waitLeader(5 * time.Second)
		r, err := c.node(l).ReadIndex(ctx)
		if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeadershipLost) {
			continue
		}
		if err != nil || r < idx {
			t.Fatalf("ReadIndex after a write at %d: %d %v", idx, r, err)
		}
		break
	}
	if got := c.sm(l).get("a"); got != "1" {
		t.Errorf("leader's state after its ReadIndex: a=%q", got)
	}
	var f uint64
	for _, id := range c.ids {
		if id != l {
			f = id
			break
		}
	}
	if _, err := c.node(f).Propose(ctx, []byte("put a 2")); !errors.Is(err, ErrNotLeader) {
		t.Errorf("Propose on a follower: %v", err)
	}
	if _, err := c.node(f).ReadIndex(ctx); !errors.Is(err, ErrNotLeader) {
		t.Errorf("ReadIndex on a follower: %v", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancelShort()
	<-short.Done()
	if _, err := c.node(l).Propose(short, []byte("put a 3")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Propose with an ended context: %v", err)
	}

	// Role notifications: every follower comes to hear of the leader.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		heard := map[uint64]bool{}
		for _, rc := range c.changes {
			if rc.Lead == l && rc.ID != l && rc.Role == raft.StateFollower {
				heard[rc.ID] = true
			}
		}
		c.mu.Unlock()
		if len(heard) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("followers told of leader %d: %v", l, heard)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLeadershipLostFailsPending: a proposal waiting on a leader that is
// cut off fails with ErrLeadershipLost when CheckQuorum makes it step
// down, and (never having left it) is not in the healed group's log.
func TestLeadershipLostFailsPending(t *testing.T) {
	c := newCluster(t, 3, testSeed(t))
	l := c.waitLeader(5 * time.Second)
	c.pauseClocks(true)
	c.net.Isolate(l)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.node(l).Propose(ctx, []byte("orphan"))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // the proposal reaches the leader's log
	c.pauseClocks(false)
	if err := <-errc; !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("pending proposal on an isolated leader: %v", err)
	}
	c.net.Heal()
	_, barrier, err := c.commit("barrier", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log := c.converge(barrier, 10*time.Second)
	if _, ok := payloads(t, log)["orphan"]; ok {
		t.Errorf("the orphaned proposal was applied: %v", log)
	}
}

// TestReadIndexOnDeposedLeader: a leader cut off with its clock stopped
// still believes it leads and holds a stale value after the others elect
// a new leader and overwrite it. Its ReadIndex must not return (it cannot
// reach a quorum), where a local read would return the stale value.
func TestReadIndexOnDeposedLeader(t *testing.T) {
	c := newCluster(t, 3, testSeed(t))
	old := c.waitLeader(5 * time.Second)
	if _, _, err := c.commit("put a 1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.converge(c.node(old).Status().Applied, 5*time.Second)
	c.mu.Lock()
	c.paused[old] = true
	c.mu.Unlock()
	c.net.Isolate(old)
	deadline := time.Now().Add(5 * time.Second)
	for c.leader() == old {
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, _, err := c.commit("put a 2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := c.node(old).Status(); st.Role != raft.StateLeader {
		t.Fatalf("the cut-off leader already stepped down (%v): the scenario needs it to believe it leads", st.Role)
	}
	if got := c.sm(old).get("a"); got != "1" {
		t.Fatalf("cut-off leader's local state a=%q, want the stale 1", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if idx, err := c.node(old).ReadIndex(ctx); err == nil {
		t.Fatalf("ReadIndex on a deposed leader returned index %d (a=%q)", idx, c.sm(old).get("a"))
	}
	c.net.Heal()
	c.pauseClocks(false)
	_, barrier, err := c.commit("barrier", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.converge(barrier, 10*time.Second)
	if got := c.sm(old).get("a"); got != "2" {
		t.Errorf("after healing the old leader has a=%q", got)
	}
}

// TestForgedProposalIgnored: a proposal message from a peer (members never
// forward proposals) is dropped, neither applied nor stopping a member.
func TestForgedProposalIgnored(t *testing.T) {
	c := newCluster(t, 3, testSeed(t))
	l := c.waitLeader(5 * time.Second)
	forger := c.net.Endpoint(99)
	forger.Send([]*pb.Message{{
		Type: pb.MsgProp.Enum(), From: proto.Uint64(99), To: proto.Uint64(l),
		Entries: []*pb.Entry{{Data: []byte("forged")}},
	}})
	_, barrier, err := c.commit("barrier", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := payloads(t, c.converge(barrier, 10*time.Second))["forged"]; ok {
		t.Errorf("a forged proposal was applied")
	}
}

// appliedSM is memSM whose applied index survives restarts, as the data
// store's does.
type appliedSM struct {
	*memSM
	persisted uint64
}

func (s *appliedSM) Applied() uint64 { return s.persisted }

// TestRestartAppliedPastCommit: a member whose state machine applied past
// the commit index its log kept starts, with the log's commit index
// raised to the applied one, and applies only what follows ("Commit
// covers applied").
func TestRestartAppliedPastCommit(t *testing.T) {
	log := openMem(t, vfs.NewCrashableMem())
	defer log.Close()
	if err := log.Bootstrap([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	var es []*pb.Entry
	for i := uint64(2); i <= 10; i++ {
		es = append(es, &pb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(1), Data: append(make([]byte, headerLen), fmt.Sprint("e", i)...)})
	}
	if err := log.Save(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(5)}, es, nil, true); err != nil {
		t.Fatal(err)
	}
	sm := &appliedSM{memSM: newMemSM(), persisted: 8}
	sm.applied = 8
	net := NewNetwork(1)
	defer net.Close()
	n, err := NewNode(Config{ID: 1, Log: log, Transport: net.Endpoint(1), Clock: NewManualClock(time.Unix(0, 0)), SM: sm})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if hs, _, _ := log.InitialState(); hs.GetCommit() != 8 {
		t.Errorf("commit index %d after the start, want 8", hs.GetCommit())
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ReadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, applied := sm.snapshotLog()
	if applied != 10 || fmt.Sprint(got) != "[9\te9 10\te10]" {
		t.Errorf("applied %v up to %d; want entries 9 and 10 only", got, applied)
	}
}

// TestChainedProposals: proposals started one after another without
// waiting commit in the order started (invariant "Chained proposals");
// once one of a chain fails — refused on a member that does not lead,
// or lost with its leadership — every later proposal that follows is
// refused with ErrChainBroken and is in no log, until a proposal starts a
// new chain.
func TestChainedProposals(t *testing.T) {
	c := newCluster(t, 3, testSeed(t))
	var l uint64
	var idx []uint64
	for attempt := 0; ; attempt++ {
		l = c.waitLeader(5 * time.Second)
		ps := []*Proposal{c.node(l).Start([]byte("put c 1"), false), c.node(l).Start([]byte("put c 2"), true), c.node(l).Start([]byte("put c 3"), true)}
		idx = idx[:0]
		var err error
		for _, p := range ps {
			var i uint64
			if i, err = p.Wait(); err != nil {
				break
			}
			idx = append(idx, i)
		}
		if err == nil {
			break
		}
		if attempt == 5 { // leadership moved under a loaded machine each time
			t.Fatalf("a chain of three: %v", err)
		}
	}
	if !(idx[0] < idx[1] && idx[1] < idx[2]) {
		t.Errorf("chain committed at %v, want rising indexes", idx)
	}
	var f uint64
	for _, id := range c.ids {
		if id != l {
			f = id
			break
		}
	}
	if _, err := c.node(f).Start([]byte("put f 1"), false).Wait(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a chain's first proposal on a follower: %v", err)
	}
	if _, err := c.node(f).Start([]byte("put f 2"), true).Wait(); !errors.Is(err, ErrChainBroken) {
		t.Errorf("a proposal following a refused one: %v", err)
	}

	// The leader cut off: its pending proposal fails with its leadership,
	// and what follows it is refused, even once it may lead again.
	c.pauseClocks(true)
	c.net.Isolate(l)
	orphan := c.node(l).Start([]byte("put o 1"), false)
	time.Sleep(20 * time.Millisecond)
	c.pauseClocks(false)
	if _, err := orphan.Wait(); !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("pending proposal on an isolated leader: %v", err)
	}
	if _, err := c.node(l).Start([]byte("put o 2"), true).Wait(); !errors.Is(err, ErrChainBroken) {
		t.Errorf("a proposal following one lost with leadership: %v", err)
	}
	c.net.Heal()
	_, barrier, err := c.commit("barrier", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log := c.converge(barrier, 10*time.Second)
	got := payloads(t, log)
	for _, p := range []string{"put f 1", "put f 2", "put o 2"} {
		if _, ok := got[p]; ok {
			t.Errorf("refused proposal %q is in the log: %v", p, log)
		}
	}
	for _, p := range []string{"put c 1", "put c 2", "put c 3"} {
		if _, ok := got[p]; !ok {
			t.Errorf("chained proposal %q is not in the log: %v", p, log)
		}
	}
}

// TestDurablePrefix checks which committed entries of a Ready are applied
// before the Ready's write ("Apply before the next sync"): those the log
// holds durably, below the first entry the Ready writes, and none with a
// snapshot.
func TestDurablePrefix(t *testing.T) {
	log, err := OpenLogStore("raft", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := log.Save(&pb.HardState{Term: proto.Uint64(2)}, ents(2, 1, 5), nil, true); err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: Config{Log: log}}
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(9), Term: proto.Uint64(2)}}
	for _, c := range []struct {
		name      string
		committed []*pb.Entry
		entries   []*pb.Entry
		snap      *pb.Snapshot
		want      int
	}{
		{"nothing committed", nil, ents(2, 6, 7), nil, 0},
		{"committed, nothing new", ents(2, 3, 5), nil, nil, 3},
		{"committed below the new entries", ents(2, 4, 5), ents(2, 6, 8), nil, 2},
		{"committed reaching into the new entries", ents(2, 4, 7), ents(2, 6, 8), nil, 2},
		{"new entries replace a tail", ents(2, 3, 5), ents(3, 5, 6), nil, 2},
		{"committed entries all new", ents(2, 6, 7), ents(2, 6, 7), nil, 0},
		{"with a snapshot", ents(2, 3, 4), nil, snap, 0},
	} {
		rd := raft.Ready{CommittedEntries: c.committed, Entries: c.entries, Snapshot: c.snap}
		if got := n.durablePrefix(rd); got != c.want {
			t.Errorf("%s: %d entries applied before the write, want %d", c.name, got, c.want)
		}
	}
}
