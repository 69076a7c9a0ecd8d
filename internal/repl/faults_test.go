package repl

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFaultScheduleKeepsAcknowledged runs writers against a 5-member group
// while a seeded schedule drops, delays, duplicates and reorders messages,
// partitions the group, isolates the leader, pauses and skews members' clocks,
// compacts logs and kills members (losing whatever their log had not
// synced) and restarts them from their Pebble log. Once healed, every
// member must have applied the same log, holding every acknowledged
// proposal once at the index it was acknowledged with.
func TestFaultScheduleKeepsAcknowledged(t *testing.T) {
	seed := testSeed(t)
	c := newCluster(t, 5, seed)
	c.waitLeader(5 * time.Second)

	var (
		mu    sync.Mutex
		acked = map[string]uint64{}
		stop  atomic.Bool
		wg    sync.WaitGroup
		tries atomic.Int64
	)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				p := fmt.Sprintf("w%d-%d", w, i)
				tries.Add(1)
				if idx, err := c.propose(p, 300*time.Millisecond); err == nil {
					mu.Lock()
					acked[p] = idx
					mu.Unlock()
				}
			}
		}()
	}

	down := map[uint64]bool{}
	var actions []string
	for step := range *faultSteps {
		var a string
		switch k := c.rnd.IntN(10); k {
		case 0:
			drop, dup, delay := c.rnd.Float64()*0.3, c.rnd.Float64()*0.2, time.Duration(c.rnd.IntN(30))*time.Millisecond
			c.net.SetFaults(drop, dup, delay)
			a = fmt.Sprintf("faults drop=%.2f dup=%.2f delay<%v", drop, dup, delay)
		case 1:
			var x, y []uint64
			for _, id := range c.ids {
				if c.rnd.IntN(2) == 0 {
					x = append(x, id)
				} else {
					y = append(y, id)
				}
			}
			c.net.Partition(x, y)
			a = fmt.Sprintf("partition %v | %v", x, y)
		case 2:
			l := c.leader()
			if l != 0 {
				c.net.Isolate(l)
			}
			a = fmt.Sprintf("isolate leader %d", l)
		case 3:
			c.net.Heal()
			a = "heal"
		case 4, 5:
			id := c.ids[c.rnd.IntN(len(c.ids))]
			if k == 4 || down[id] {
				c.restart(id)
				delete(down, id)
				a = fmt.Sprintf("kill and restart %d", id)
			} else if len(down) < 2 {
				c.crash(id)
				down[id] = true
				a = fmt.Sprintf("kill %d", id)
			}
		case 6:
			id := c.ids[c.rnd.IntN(len(c.ids))]
			if n := c.node(id); n != nil {
				err := n.Compact()
				a = fmt.Sprintf("compact %d: %v", id, err)
			}
		case 7:
			id := c.ids[c.rnd.IntN(len(c.ids))]
			c.mu.Lock()
			c.paused[id] = !c.paused[id]
			a = fmt.Sprintf("clock of %d paused=%v", id, c.paused[id])
			c.mu.Unlock()
		case 8:
			c.net.Heal()
			c.pauseClocks(false)
			a = "heal all, clocks running"
		case 9:
			id, rate := c.ids[c.rnd.IntN(len(c.ids))], 0.2+0.8*c.rnd.Float64()
			c.skew(id, rate)
			a = fmt.Sprintf("clock of %d at rate %.2f", id, rate)
		}
		if a != "" {
			actions = append(actions, fmt.Sprintf("%d: %s", step, a))
		}
		time.Sleep(time.Duration(10+c.rnd.IntN(50)) * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	c.net.Heal()
	c.pauseClocks(false)
	for id := range down {
		c.start(id)
	}
	_, barrier, err := c.commit("barrier", 20*time.Second)
	if err != nil {
		t.Fatalf("after healing: %v\nschedule:\n%s", err, lines(actions))
	}
	got := payloads(t, c.converge(barrier, 20*time.Second))
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d proposals tried, %d acknowledged, %d applied; %d steps", tries.Load(), len(acked), len(got), len(actions))
	if len(acked) == 0 {
		t.Errorf("no proposal was acknowledged: the schedule left no time to make progress")
	}
	for p, idx := range acked {
		if got[p] != idx {
			t.Errorf("%s acknowledged at index %d, applied at %d (0: lost)", p, idx, got[p])
		}
	}
	if t.Failed() {
		t.Logf("schedule:\n%s", lines(actions))
	}
}

func lines(s []string) string {
	out := ""
	for _, l := range s {
		out += l + "\n"
	}
	return out
}
