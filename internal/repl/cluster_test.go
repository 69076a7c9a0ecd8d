package repl

import (
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
)

var (
	faultSteps = flag.Int("repl.steps", 25, "fault schedule steps of TestFaultScheduleKeepsAcknowledged")
	faultSeed  = flag.Uint64("repl.seed", 0, "seed of the fault schedule (0: from the time)")
)

func testSeed(t *testing.T) uint64 {
	s := *faultSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -repl.seed %d)", s, s)
	return s
}

func TestElectsOneLeader(t *testing.T) {
	for _, size := range []int{1, 3, 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := newCluster(t, size, testSeed(t))
			l := c.waitLeader(5 * time.Second)
			// Every member comes to follow that leader, and no other
			// member leads.
			deadline := time.Now().Add(5 * time.Second)
			for _, id := range c.ids {
				for {
					st := c.node(id).Status()
					if id != l && st.Role == raft.StateLeader {
						t.Fatalf("member %d leads too (term %d)", id, st.Term)
					}
					if st.Lead == l {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("member %d follows %d, not %d", id, st.Lead, l)
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
		})
	}
}

func TestProposalsCommitInOneOrder(t *testing.T) {
	for _, tc := range []struct {
		size int
		tcp  bool
	}{{3, false}, {5, false}, {3, true}} {
		t.Run(fmt.Sprintf("%d/tcp=%v", tc.size, tc.tcp), func(t *testing.T) {
			c := newClusterOver(t, tc.size, testSeed(t), tc.tcp)
			c.waitLeader(5 * time.Second)
			const writers, each = 4, 25
			var wg sync.WaitGroup
			var mu sync.Mutex
			acked := map[string]uint64{}
			var last uint64
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						p := fmt.Sprintf("w%d-%d", w, i)
						name, idx, err := c.commit(p, 10*time.Second)
						if err != nil {
							t.Errorf("%s: %v", p, err)
							return
						}
						mu.Lock()
						acked[name] = idx
						last = max(last, idx)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			got := payloads(t, c.converge(last, 10*time.Second))
			if len(acked) != writers*each || len(got) < len(acked) {
				t.Errorf("%d acknowledged, %d applied; want %d acknowledged", len(acked), len(got), writers*each)
			}
			for p, idx := range acked {
				if got[p] != idx {
					t.Errorf("%s acknowledged at index %d, applied at %d", p, idx, got[p])
				}
			}
		})
	}
}

// TestRestartCatchesUp kills a member, commits while it is down, and
// restarts it from its Pebble log: it catches up by log replay, or from
// a snapshot when the leader has truncated its log past it.
func TestRestartCatchesUp(t *testing.T) {
	for _, tc := range []struct{ compact, tcp bool }{{false, false}, {true, false}, {true, true}} {
		compact := tc.compact
		t.Run(fmt.Sprintf("compact=%v/tcp=%v", compact, tc.tcp), func(t *testing.T) {
			c := newClusterOver(t, 3, testSeed(t), tc.tcp)
			l := c.waitLeader(5 * time.Second)
			victim := c.ids[0]
			if victim == l {
				victim = c.ids[1]
			}
			for i := range 10 {
				if _, _, err := c.commit(fmt.Sprintf("before-%d", i), 10*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			c.crash(victim)
			var last uint64
			acked := map[string]uint64{}
			for i := range 50 {
				name, idx, err := c.commit(fmt.Sprintf("down-%d", i), 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				acked[name], last = idx, idx
			}
			if compact {
				for _, id := range c.ids {
					if id != victim {
						if err := c.node(id).Compact(); err != nil {
							t.Fatalf("compact %d: %v", id, err)
						}
						if first, _ := c.logs[id].FirstIndex(); first <= last-10 {
							t.Fatalf("member %d log starts at %d after compacting at about %d", id, first, last)
						}
					}
				}
			}
			c.start(victim)
			got := payloads(t, c.converge(last, 10*time.Second))
			for p, idx := range acked {
				if got[p] != idx {
					t.Errorf("%s acknowledged at %d, applied at %d on every member", p, idx, got[p])
				}
			}
			if len(got) < 60 {
				t.Errorf("applied %d payloads, want at least 60", len(got))
			}
		})
	}
}
