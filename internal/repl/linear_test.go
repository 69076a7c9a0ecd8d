package repl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

var linearRuns = flag.Int("repl.linruns", 2, "randomized runs of TestLinearizableKV")

type kvInput struct {
	put        bool
	key, value string
}

// kvModel is a map of registers, checked one key at a time.
var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(kvInput).key
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.put {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.put {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) → %q", in.key, output)
	},
}

// TestLinearizableKV records a key-value history built on the log —
// writes are proposals, reads are ReadIndex then a read of the member's
// applied state — while members are partitioned, isolated, paused,
// skewed and killed, and checks it with porcupine ("Linearizable register"). A write
// whose outcome is unknown (leadership lost, timeout, member killed) is
// recorded as never returning, so it may or may not take effect.
func TestLinearizableKV(t *testing.T) {
	base := testSeed(t)
	for run := range *linearRuns {
		seed := base + uint64(run)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			linearRun(t, seed)
		})
	}
}

func linearRun(t *testing.T, seed uint64) {
	c := newCluster(t, 3, seed)
	c.waitLeader(5 * time.Second)
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var (
		mu   sync.Mutex
		hist []porcupine.Operation
		wg   sync.WaitGroup
	)
	keys := []string{"a", "b", "c"}
	stopAt := time.Now().Add(1500 * time.Millisecond)
	for cl := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stopAt); i++ {
				l := c.leader()
				n := c.node(l)
				sm := c.sm(l)
				if n == nil {
					time.Sleep(time.Millisecond)
					continue
				}
				in := kvInput{put: (i+cl)%3 != 0, key: keys[(i*7+cl)%len(keys)], value: fmt.Sprintf("v%d-%d", cl, i)}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				op := porcupine.Operation{ClientId: cl, Input: in, Call: now()}
				if in.put {
					_, err := n.Propose(ctx, []byte("put "+in.key+" "+in.value))
					op.Return = now()
					switch {
					case errors.Is(err, ErrNotLeader):
						cancel()
						continue // refused before it reached the log: no effect
					case err != nil:
						op.Return = math.MaxInt64 // outcome unknown
					}
				} else {
					_, err := n.ReadIndex(ctx)
					if err != nil {
						cancel()
						continue // a failed read has no effect
					}
					op.Output = sm.get(in.key)
					op.Return = now()
				}
				cancel()
				mu.Lock()
				hist = append(hist, op)
				mu.Unlock()
			}
		}()
	}
	var actions []string
	for time.Now().Before(stopAt) {
		switch c.rnd.IntN(6) {
		case 0:
			if l := c.leader(); l != 0 {
				c.net.Isolate(l)
				actions = append(actions, fmt.Sprintf("isolate %d", l))
			}
		case 1:
			id := c.ids[c.rnd.IntN(len(c.ids))]
			c.restart(id)
			actions = append(actions, fmt.Sprintf("restart %d", id))
		case 2:
			id := c.ids[c.rnd.IntN(len(c.ids))]
			c.mu.Lock()
			c.paused[id] = !c.paused[id]
			c.mu.Unlock()
			actions = append(actions, fmt.Sprintf("pause/unpause %d", id))
		case 3:
			id, rate := c.ids[c.rnd.IntN(len(c.ids))], 0.2+0.8*c.rnd.Float64()
			c.skew(id, rate)
			actions = append(actions, fmt.Sprintf("skew %d %.2f", id, rate))
		default:
			c.net.Heal()
			c.pauseClocks(false)
			actions = append(actions, "heal")
		}
		time.Sleep(time.Duration(30+c.rnd.IntN(100)) * time.Millisecond)
	}
	wg.Wait()
	done := 0
	for _, op := range hist {
		if op.Return != math.MaxInt64 {
			done++
		}
	}
	t.Logf("%d operations (%d completed); faults: %v", len(hist), done, actions)
	if done == 0 {
		t.Fatalf("no operation completed")
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, hist, 30*time.Second)
	switch res {
	case porcupine.Illegal:
		path := t.TempDir() + "/history.html"
		porcupine.VisualizePath(kvModel, info, path)
		t.Fatalf("history is not linearizable (visualization: %s)", path)
	case porcupine.Unknown:
		t.Fatalf("linearizability check timed out")
	}
}

// TestKVModelRejects shows the checker can fail: hand-made histories a
// broken replication would produce (a stale read, a lost write) are
// refused, the correct ones accepted.
func TestKVModelRejects(t *testing.T) {
	put := func(c int, k, v string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: kvInput{put: true, key: k, value: v}, Call: call, Return: ret}
	}
	get := func(c int, k, out string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: kvInput{key: k}, Output: out, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		hist []porcupine.Operation
		ok   bool
	}{
		{"read after write", []porcupine.Operation{put(0, "a", "1", 0, 1), get(1, "a", "1", 2, 3)}, true},
		{"stale read", []porcupine.Operation{put(0, "a", "1", 0, 1), get(1, "a", "", 2, 3)}, false},
		{"concurrent read may miss", []porcupine.Operation{put(0, "a", "1", 0, 5), get(1, "a", "", 2, 3)}, true},
		{"lost write seen then unseen", []porcupine.Operation{put(0, "a", "1", 0, 1), get(1, "a", "1", 2, 3), get(1, "a", "", 4, 5)}, false},
		{"unknown write may apply late", []porcupine.Operation{put(0, "a", "1", 0, math.MaxInt64), get(1, "a", "", 2, 3), get(1, "a", "1", 4, 5)}, true},
		{"other key independent", []porcupine.Operation{put(0, "a", "1", 0, 1), get(1, "b", "", 2, 3)}, true},
	}
	for _, tc := range cases {
		if got := porcupine.CheckOperations(kvModel, tc.hist); got != tc.ok {
			t.Errorf("%s: linearizable=%v, want %v", tc.name, got, tc.ok)
		}
	}
}
