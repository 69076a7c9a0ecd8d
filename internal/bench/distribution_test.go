package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKeyNames pins YCSB's key naming: FNV-1a of the key number, so that
// record 0 is the "user6284781860667377211" every YCSB run starts with.
func TestKeyNames(t *testing.T) {
	for n, want := range map[int64]string{0: "user6284781860667377211", 1: "user8517097267634966620"} {
		if got := key(n); got != want {
			t.Errorf("key(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestZipfianShape checks the zipfian against its definition: P(i) is
// proportional to 1/(i+1)^theta over the items. Gray et al.'s generator is
// exact for the two most popular items and a continuous approximation
// after them, hence the wider tolerance there.
func TestZipfianShape(t *testing.T) {
	const items, draws = 1000, 400000
	r := rand.New(rand.NewPCG(1, 2))
	z := newZipfian(items, zipfianConstant)
	counts := make([]int, items)
	for range draws {
		v := z.next(r, items)
		if v < 0 || v >= items {
			t.Fatalf("draw %d outside [0, %d)", v, items)
		}
		counts[v]++
	}
	zetan := zeta(0, items, zipfianConstant, 0)
	for _, i := range []int{0, 1, 2, 9, 99} {
		want := draws / math.Pow(float64(i+1), zipfianConstant) / zetan
		tolerance := 0.05
		if i >= 2 {
			tolerance = 0.3
		}
		if got := float64(counts[i]); math.Abs(got-want) > tolerance*want+30 {
			t.Errorf("item %d drawn %v times, want about %.0f", i, got, want)
		}
	}
}

func TestScrambledZipfianSpreadsHotKeys(t *testing.T) {
	keys := newKeySequence(10000)
	ch, err := newKeyChooser(DistZipfian, 10000, 0, keys)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	counts := map[int64]int{}
	for range 100000 {
		k := ch.next(r)
		if k < 0 || k > keys.last() {
			t.Fatalf("key %d outside the loaded records", k)
		}
		counts[k]++
	}
	// Skewed: the hottest key is far above the uniform share (10 per key)…
	hottest := int64(-1)
	for k, c := range counts {
		if hottest < 0 || c > counts[hottest] {
			hottest = k
		}
	}
	if counts[hottest] < 500 {
		t.Errorf("hottest key drawn %d times: not skewed", counts[hottest])
	}
	// …and it is not simply key 0: the hash scatters popularity.
	if counts[0] == counts[hottest] && hottest == 0 {
		t.Errorf("hottest key is key 0: not scrambled")
	}
}

func TestLatestFollowsInserts(t *testing.T) {
	keys := newKeySequence(1000)
	ch, err := newKeyChooser(DistLatest, 1000, 0, keys)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		n := keys.allocate()
		keys.acknowledge(n)
	}
	recent := 0
	for range 10000 {
		k := ch.next(r)
		if k < 0 || k > keys.last() {
			t.Fatalf("key %d outside [0, %d]", k, keys.last())
		}
		if k >= keys.last()-10 {
			recent++
		}
	}
	if recent < 3000 {
		t.Errorf("only %d of 10000 draws among the 10 newest records", recent)
	}
}

func TestKeySequenceWaitsForGaps(t *testing.T) {
	s := newKeySequence(10)
	a, b := s.allocate(), s.allocate()
	s.acknowledge(b)
	if s.last() != 9 {
		t.Errorf("last %d after acknowledging %d before %d", s.last(), b, a)
	}
	s.acknowledge(a)
	if s.last() != 11 {
		t.Errorf("last %d, want 11", s.last())
	}
}

func TestWorkloadMix(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, w := range Workloads {
		var counts [numOps]int
		for range 100000 {
			counts[w.choose(r.Float64())]++
		}
		for op, want := range map[opKind]float64{opRead: w.Read, opUpdate: w.Update, opInsert: w.Insert, opScan: w.Scan, opReadModifyWrite: w.ReadModifyWrite} {
			if got := float64(counts[op]) / 100000; math.Abs(got-want) > 0.01 {
				t.Errorf("workload %s: %s is %.3f of operations, want %.2f", w.Name, op, got, want)
			}
		}
	}
}

func TestParseWorkloads(t *testing.T) {
	ws, err := ParseWorkloads([]string{"A,c", "all"})
	if err != nil || len(ws) != 8 || ws[0].Name != "a" || ws[1].Name != "c" {
		t.Errorf("got %v, %v", ws, err)
	}
	if _, err := ParseWorkloads([]string{"g"}); err == nil {
		t.Error("workload g accepted")
	}
}
