package rstest

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var (
	pcSeedFlag   = flag.Uint64("rstest.pcseed", 0, "seed of the TestPowerCut* tests (0: from the clock)")
	pcRoundsFlag = flag.Int("rstest.pcrounds", 3, "power cuts of TestPowerCutSchedule")
)

// pcSeed is the power-cut tests' seed, printed so a run can be replayed.
func pcSeed(t *testing.T) uint64 {
	seed := *pcSeedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -rstest.pcseed %d)", seed, seed)
	return seed
}

// acks records the writes the set acknowledged: key → value, when, and
// through which member.
type acks struct {
	mu     sync.Mutex
	m      map[string]ack
	sent   int
	failed map[string]int // the errors of writes not acknowledged, by kind
}

type ack struct {
	val       string
	start, at time.Time // the write began, was acknowledged
	member    int
}

// writers keeps n goroutines writing distinct keys through whichever
// member is primary until the returned stop is called.
func (a *acks) writers(s *Set, n int, prefix string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-done:
					return
				default:
				}
				p := primaryOf(s)
				if p < 0 {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				k, v := fmt.Sprintf("%s-w%d-%06d", prefix, w, seq), fmt.Sprintf("v%d", seq)
				a.mu.Lock()
				a.sent++
				a.mu.Unlock()
				start := time.Now()
				err := s.Write(p, []byte(k), []byte(v))
				a.mu.Lock()
				if err == nil {
					a.m[k] = ack{val: v, start: start, at: time.Now(), member: p}
				} else {
					if a.failed == nil {
						a.failed = map[string]int{}
					}
					a.failed[err.Error()[:min(len(err.Error()), 40)]]++
				}
				a.mu.Unlock()
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// primaryOf is the member that takes writes now, or -1.
func primaryOf(s *Set) int {
	for i := range s.dirs {
		if m := s.Member(i); m != nil && m.CanWrite() == nil {
			return i
		}
	}
	return -1
}

// count is the number of acknowledged writes.
func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// durable lists the acknowledged writes a cut at cutAt may not lose:
// every one acknowledged before the cut, those a member that kept its
// power acknowledged, and those a cut member acknowledged that began after
// its restart (restarted: when each cut member was running again; before,
// it may have acknowledged a write after its image was taken).
func (a *acks) durable(cutAt time.Time, restarted map[int]time.Time) map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]string{}
	for k, w := range a.m {
		back, cut := restarted[w.member]
		if w.at.Before(cutAt) || !cut || w.start.After(back) {
			out[k] = w.val
		}
	}
	return out
}

// restartAll restarts the members in cut and says when each was back.
func restartAll(s *Set, cut []int) map[int]time.Time {
	back := map[int]time.Time{}
	for _, i := range cut {
		s.Restart(i)
		back[i] = time.Now()
	}
	return back
}

// settle writes one more key through the primary, waits until every
// member applied it (so each holds everything committed before), then
// until the stores are identical, and checks every write of want on every
// member.
func settle(t *testing.T, s *Set, want map[string]string, tag string) {
	t.Helper()
	s.WaitVoters(len(s.dirs), 60*time.Second)
	key := []byte("settle-" + tag)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := s.Write(s.WaitForPrimary(30*time.Second), key, []byte("1")); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: no write after the restart: %v", tag, err)
		}
	}
	for i := range s.dirs {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, ok, _ := s.Read(i, key); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: member %d did not apply the settling write", tag, i)
			}
		}
	}
	sum, keys := s.WaitSame(60 * time.Second)
	for i := range s.dirs {
		for k, v := range want {
			got, ok, err := s.Read(i, []byte(k))
			if err != nil || !ok || string(got) != v {
				t.Fatalf("%s: member %d lost acknowledged %s=%s: reads %q, found %v, %v", tag, i, k, v, got, ok, err)
			}
		}
	}
	t.Logf("%s: %d acknowledged writes that must survive are on every member; stores identical (%d keys, %s…)", tag, len(want), keys, sum[:12])
}

// TestPowerCutAllKeepsAcknowledgedWrites cuts the power of every member
// at one moment, idle or under writers, keeping only synced bytes or a
// share of the unsynced ones; all restart, and every write acknowledged
// before the cut is on every member, whose stores are identical.
func TestPowerCutAllKeepsAcknowledgedWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		writers int // writing at the cut (0: the writes are done before)
		keep    int // Options.KeepUnsynced
	}{
		{"idle", 0, 0},
		{"under writes", 4, 0},
		{"under writes, unsynced kept in part", 4, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := pcSeed(t)
			s := Start(t, 3, seed, Options{Crashable: true, KeepUnsynced: tc.keep})
			a := &acks{m: map[string]ack{}}
			stop := a.writers(s, max(tc.writers, 2), "a")
			for a.count() < 60 {
				time.Sleep(2 * time.Millisecond)
			}
			if tc.writers == 0 {
				stop()
			}
			all := []int{0, 1, 2}
			cutAt := time.Now()
			s.PowerCut(all...)
			if tc.writers > 0 {
				stop()
			}
			want := a.durable(cutAt, restartAll(s, all))
			t.Logf("cut at %d acknowledged writes (%d sent); %d acknowledged before the cut", a.count(), a.sent, len(want))
			settle(t, s, want, tc.name)
		})
	}
}

// TestPowerCutKeepsConfiguration cuts the power of every member right
// after replSetInitiate, and right after a reconfig, once each member
// applied the configuration: restarted with no member reaching another,
// each must hold the configuration it had (a member over TCP finds its
// peers only through it: invariant "Configuration durable once applied");
// then the set elects and writes again under it.
func TestPowerCutKeepsConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reconfig bool
	}{
		{"after initiate", false},
		{"after reconfig", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := pcSeed(t)
			s := Start(t, 3, seed, Options{Crashable: true})
			version, votes2 := int32(1), int32(1)
			if tc.reconfig {
				version, votes2 = 2, 0
				p := s.WaitForPrimary(20 * time.Second)
				if err := s.Member(p).Reconfig(context.Background(), setConfig(version, votes2), false); err != nil {
					t.Fatalf("replSetReconfig: %v", err)
				}
			}
			for i := range 3 {
				waitConfig(t, s, i, version, votes2, 20*time.Second)
			}
			s.PowerCut(0, 1, 2)
			s.Partition([]int{0}, []int{1, 2})
			s.Partition([]int{1}, []int{2})
			for i := range 3 {
				s.Restart(i)
			}
			for i := range 3 {
				waitConfig(t, s, i, version, votes2, 5*time.Second)
			}
			s.Heal()
			settle(t, s, nil, tc.name)
		})
	}
}

// setConfig is rs0's configuration document of the set's three members at
// version, member 2 with votes2 votes (and the same priority).
func setConfig(version, votes2 int32) bsoncore.Document {
	ms := bsoncore.NewArrayBuilder()
	for i := range 3 {
		b := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendString("host", Host(i))
		if i == 2 {
			b.AppendInt32("votes", votes2).AppendInt32("priority", votes2)
		}
		ms.AppendDocument(b.Build())
	}
	return bsoncore.NewDocumentBuilder().AppendString("_id", "rs0").AppendInt32("version", version).AppendArray("members", ms.Build()).Build()
}

// waitConfig waits until member i's replSetGetConfig is at version with
// member 2's votes at votes2.
func waitConfig(t *testing.T, s *Set, i int, version, votes2 int32, timeout time.Duration) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		m := s.Member(i)
		if m == nil {
			last = "not running"
			continue
		}
		doc, err := m.ConfigDocument()
		if err != nil {
			last = err.Error()
			continue
		}
		last = doc.String()
		v, _ := doc.Lookup("version").AsInt32OK()
		vals, _ := doc.Lookup("members").Array().Values()
		if v == version && len(vals) == 3 {
			if got, _ := vals[2].Document().Lookup("votes").AsInt32OK(); got == votes2 {
				return
			}
		}
	}
	t.Fatalf("member %d: configuration not at version %d (member 2 with %d votes) within %v: %s", i, version, votes2, timeout, last)
}

// TestPowerCutPrimaryUnderWrites cuts the power of the primary while
// writers write: the others elect and take writes, the cut member
// restarts, rejoins and converges, and no write acknowledged before the
// cut, or by another member after it, is lost.
func TestPowerCutPrimaryUnderWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int
	}{
		{"only synced bytes", 0},
		{"unsynced kept in part", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := pcSeed(t)
			s := Start(t, 3, seed, Options{Crashable: true, KeepUnsynced: tc.keep})
			a := &acks{m: map[string]ack{}}
			stop := a.writers(s, 4, "c")
			for a.count() < 60 {
				time.Sleep(2 * time.Millisecond)
			}
			p := s.WaitForPrimary(20 * time.Second)
			cutAt := time.Now()
			s.PowerCut(p)
			before := a.count()
			for a.count() < before+60 {
				time.Sleep(2 * time.Millisecond)
			}
			back := restartAll(s, []int{p})
			for a.count() < before+120 {
				time.Sleep(2 * time.Millisecond)
			}
			stop()
			want := a.durable(cutAt, back)
			t.Logf("primary %d cut at %d acknowledged writes; %d acknowledged in all (%d sent), %d must survive", p, before, a.count(), a.sent, len(want))
			settle(t, s, want, tc.name)
		})
	}
}

// TestPowerCutSchedule runs -rstest.pcrounds power cuts under writers,
// each of a random choice of members (the primary, a secondary, two, or
// all three) keeping none, 30 % or all of the unsynced data, with a log
// compacted every 30 entries so that members also come back through
// snapshots, and the network dropping, duplicating and delaying 2 % of
// the messages (as TestFaultsKeepAcknowledgedWrites); after each, the cut members restart and every write that must
// survive is on every member (`make repl-powercut` runs it at length).
func TestPowerCutSchedule(t *testing.T) {
	seed := pcSeed(t)
	rnd := rand.New(rand.NewPCG(seed, 5))
	s := Start(t, 3, seed, Options{Crashable: true, CompactEntries: 30})
	s.Net.SetFaults(0.02, 0.02, 2*time.Millisecond)
	a := &acks{m: map[string]ack{}}
	want := map[string]string{}
	for round := range *pcRoundsFlag {
		stop := a.writers(s, 1+rnd.IntN(4), fmt.Sprintf("r%d", round))
		target := a.count() + 20 + rnd.IntN(80)
		for a.count() < target {
			time.Sleep(time.Millisecond)
		}
		p := s.WaitForPrimary(30 * time.Second)
		var cut []int
		switch rnd.IntN(4) {
		case 0:
			cut = []int{p}
		case 1:
			cut = []int{(p + 1 + rnd.IntN(2)) % 3}
		case 2:
			cut = []int{p, (p + 1 + rnd.IntN(2)) % 3}
		case 3:
			cut = []int{0, 1, 2}
		}
		keep := []int{0, 0, 30, 100}[rnd.IntN(4)]
		s.KeepUnsynced(keep)
		cutAt := time.Now()
		s.PowerCut(cut...)
		if len(cut) == 1 {
			// The others keep a majority: they go on writing without it.
			more := a.count() + rnd.IntN(60)
			for deadline := time.Now().Add(30 * time.Second); a.count() < more && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		back := restartAll(s, cut)
		// Writes go on through the restarted members before the check.
		more := a.count() + rnd.IntN(40)
		for deadline := time.Now().Add(30 * time.Second); a.count() < more && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		stop()
		t.Logf("round %d: %d writes sent, %d acknowledged, failed: %v", round, a.sent, len(a.m), a.failed)
		for k, v := range a.durable(cutAt, back) {
			want[k] = v
		}
		a.mu.Lock()
		a.m, a.sent, a.failed = map[string]ack{}, 0, nil
		a.mu.Unlock()
		settle(t, s, want, fmt.Sprintf("round %d (members %v cut, %d %% of unsynced data kept)", round, cut, keep))
	}
}

// TestPowerCutThenSnapshotCatchUp cuts the power of a majority after
// their logs were compacted while the third member was down: restarted,
// the new primary has only its checkpoint to catch that member up with
// (no write follows that would compact again), so the checkpoint named
// by its log's snapshot must have survived the cut with its directory.
func TestPowerCutThenSnapshotCatchUp(t *testing.T) {
	seed := pcSeed(t)
	s := Start(t, 3, seed, Options{Crashable: true, CompactEntries: 30})
	a := &acks{m: map[string]ack{}}
	stop := a.writers(s, 2, "s0")
	for a.count() < 5 {
		time.Sleep(time.Millisecond)
	}
	stop()
	p := s.WaitForPrimary(20 * time.Second)
	behind := (p + 1) % 3
	s.Kill(behind)
	stop = a.writers(s, 2, "s1")
	for a.count() < 120 { // past several compactions of 30 entries
		time.Sleep(time.Millisecond)
	}
	stop()
	rest := others(behind)
	s.PowerCut(rest...)
	want := a.durable(time.Now(), nil)
	for _, i := range rest {
		s.Restart(i)
	}
	s.WaitForPrimary(30 * time.Second)
	s.Restart(behind)
	settle(t, s, want, fmt.Sprintf("member %d caught up after members %v were cut", behind, rest))
}

// TestPowerCutDuringSnapshotInstall cuts the power of a member in the
// middle of installing the snapshot it needs (the snapshot stored in its
// log, its store emptied by the install's first synced batch, nothing
// copied yet): restarted, it finds its log's snapshot above its store's
// applied index and installs again from the checkpoint it received, which
// must have survived the cut with its directory (storage's "Restore is
// redone until whole").
func TestPowerCutDuringSnapshotInstall(t *testing.T) {
	seed := pcSeed(t)
	s := Start(t, 3, seed, Options{Crashable: true, CompactEntries: 30})
	p := s.WaitForPrimary(20 * time.Second)
	behind := (p + 1) % 3
	s.Kill(behind)
	a := &acks{m: map[string]ack{}}
	stop := a.writers(s, 2, "i")
	for a.count() < 120 { // past several compactions of 30 entries
		time.Sleep(time.Millisecond)
	}
	stop()
	stopped := make(chan (<-chan struct{}), 1)
	s.OnInstallProgress(func(i int, copied int64) {
		if i == behind && copied == 0 {
			s.OnInstallProgress(nil)
			stopped <- s.PowerCutNow(i)
		}
	})
	s.Restart(behind)
	select {
	case done := <-stopped:
		<-done
	case <-time.After(30 * time.Second):
		t.Fatalf("member %d installed no snapshot", behind)
	}
	s.Restart(behind)
	settle(t, s, a.durable(time.Now(), nil), fmt.Sprintf("member %d cut during its install", behind))
}
