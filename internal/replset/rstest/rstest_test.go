package rstest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	seedFlag   = flag.Uint64("rstest.seed", 0, "seed of TestFaultsKeepAcknowledgedWrites (0: from the clock)")
	roundsFlag = flag.Int("rstest.rounds", 6, "fault rounds of TestFaultsKeepAcknowledgedWrites")
)

// TestFaultsKeepAcknowledgedWrites runs three in-process members (real
// engines over the faulty network, manual clocks, logs compacted every 30
// entries) through rounds of faults — the primary killed and restarted,
// partitioned from the others, a member paused, a clock skewed, a member
// kept down while the log moves past it so it comes back through a
// snapshot — writing all along; then every acknowledged write is on
// every member with its value, and the members' stores are identical
// ("Same store everywhere").
func TestFaultsKeepAcknowledgedWrites(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -rstest.seed %d)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, 3))
	s := Start(t, 3, seed, Options{CompactEntries: 30})
	s.Net.SetFaults(0.02, 0.02, 2*time.Millisecond)
	acked := map[string]string{}
	next := 0
	write := func(n int) {
		for range n {
			next++
			k, v := fmt.Sprintf("k%05d", next), fmt.Sprintf("v%d", rnd.Int64())
			p := s.WaitForPrimary(20 * time.Second)
			if err := s.Write(p, []byte(k), []byte(v)); err == nil {
				acked[k] = v
			}
		}
	}
	write(20)
	var down []int
	for round := range *roundsFlag {
		p := s.WaitForPrimary(20 * time.Second)
		other := (p + 1 + rnd.IntN(2)) % 3
		switch f := rnd.IntN(5); f {
		case 0:
			t.Logf("round %d: kill the primary %d", round, p)
			s.Kill(p)
			write(10)
			s.Restart(p)
		case 1:
			t.Logf("round %d: partition the primary %d", round, p)
			s.Partition([]int{p}, others(p))
			write(10)
			s.Heal()
		case 2:
			t.Logf("round %d: pause member %d", round, other)
			s.Pause(other)
			write(10)
			s.Resume(other)
		case 3:
			t.Logf("round %d: member %d's clock at 1.5×", round, other)
			s.SkewClock(other, 1.5)
			write(10)
			s.SkewClock(other, 1)
		case 4:
			t.Logf("round %d: member %d down past two compactions", round, other)
			s.Kill(other)
			down = append(down, other)
			write(70)
			s.Restart(other)
		}
		write(5)
	}
	s.Heal()
	s.WaitVoters(3, 60*time.Second)
	sum, keys := s.WaitSame(60 * time.Second)
	t.Logf("%d acknowledged writes of %d; stores identical (%d keys, %s…); members brought back past compactions: %v", len(acked), next, keys, sum[:12], down)
	if len(acked) < next/2 {
		t.Errorf("only %d of %d writes acknowledged", len(acked), next)
	}
	for i := range 3 {
		for k, v := range acked {
			got, ok, err := s.Read(i, []byte(k))
			if err != nil || !ok || string(got) != v {
				t.Fatalf("member %d: acknowledged %s=%s reads %q, %v, %v", i, k, v, got, ok, err)
			}
		}
	}
}

// others lists the members of a set of three but p.
func others(p int) []int {
	var rest []int
	for i := range 3 {
		if i != p {
			rest = append(rest, i)
		}
	}
	return rest
}
