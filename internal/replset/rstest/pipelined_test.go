package rstest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/storage"
)

// TestPipelinedAppendsUnderFaults: many writers at once, so the primary's
// pipeline proposes groups while earlier ones replicate (storage's
// "Pipelined groups", repl's "Chained proposals"), each write a
// read-modify-write that appends its id to one of a few shared lists —
// a later group reads the earlier, unapplied ones' lists — through the
// faults of TestFaultsKeepAcknowledgedWrites. Then every acknowledged id
// is in its list on every member, no id is in a list twice, and the
// stores are identical: a group built on a group the set never took, or
// on a stale view of the store, would lose or repeat an id.
func TestPipelinedAppendsUnderFaults(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -rstest.seed %d)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 5))
	s := Start(t, 3, seed, Options{CompactEntries: 30})
	s.Net.SetFaults(0.02, 0.02, 2*time.Millisecond)
	const writers, lists = 12, 3
	var (
		mu      sync.Mutex
		acked   = map[string]int{} // id → list
		tried   int
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		primary = func() int {
			for i := range 3 {
				if m := s.Member(i); m != nil && m.CanWrite() == nil {
					return i
				}
			}
			return -1
		}
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := primary()
				eng := s.Engine(max(p, 0))
				if p < 0 || eng == nil {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				id, list := fmt.Sprintf("%d.%d", w, n), (w+n)%lists
				key := []byte("x/l" + strconv.Itoa(list))
				err := eng.Storage().Write(func(tx *storage.Txn) error {
					v, _, err := tx.Get(nil, key)
					if err != nil {
						return err
					}
					tx.Set(key, append(append(v, id...), ','))
					return nil
				})
				mu.Lock()
				tried++
				if err == nil {
					acked[id] = list
				}
				mu.Unlock()
			}
		}()
	}
	for round := range *roundsFlag {
		time.Sleep(150 * time.Millisecond)
		p := s.WaitForPrimary(20 * time.Second)
		other := (p + 1 + rnd.IntN(2)) % 3
		switch f := rnd.IntN(3); f {
		case 0:
			t.Logf("round %d: kill the primary %d", round, p)
			s.Kill(p)
			time.Sleep(300 * time.Millisecond)
			s.Restart(p)
		case 1:
			t.Logf("round %d: partition the primary %d", round, p)
			s.Partition([]int{p}, others(p))
			time.Sleep(300 * time.Millisecond)
			s.Heal()
		case 2:
			t.Logf("round %d: pause member %d", round, other)
			s.Pause(other)
			time.Sleep(200 * time.Millisecond)
			s.Resume(other)
		}
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	var follows int64
	for i := range 3 {
		if e := s.Engine(i); e != nil {
			follows += e.Storage().CommitGroups().Follows
		}
	}
	if follows == 0 && !invariants.Enabled {
		// (Builds with the invariants tag verify each group before the
		// next applies: nothing overlaps there.)
		t.Errorf("no group was proposed while another replicated: nothing pipelined")
	}
	s.Heal()
	s.WaitVoters(3, 60*time.Second)
	sum, keys := s.WaitSame(60 * time.Second)
	t.Logf("%d acknowledged appends of %d, %d groups proposed over groups in flight (members running now); stores identical (%d keys, %s…)", len(acked), tried, follows, keys, sum[:12])
	if len(acked) < 100 {
		t.Errorf("only %d of %d appends acknowledged", len(acked), tried)
	}
	for i := range 3 {
		seen := map[string]bool{}
		for l := range lists {
			v, _, err := s.Read(i, []byte("l"+strconv.Itoa(l)))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range bytes.Split(bytes.TrimSuffix(v, []byte(",")), []byte(",")) {
				if len(id) == 0 {
					continue
				}
				if seen[string(id)] {
					t.Fatalf("member %d: id %s appended twice", i, id)
				}
				seen[string(id)] = true
			}
		}
		var lost []string
		for id := range acked {
			if !seen[id] {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			t.Fatalf("member %d: %d acknowledged appends lost, e.g. %v", i, len(lost), lost[:min(len(lost), 10)])
		}
	}
}
