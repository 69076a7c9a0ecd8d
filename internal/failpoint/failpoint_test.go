package failpoint

import "testing"

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // one character per evaluation: x fires, . passes
	}{
		{"off", Config{Mode: Off}, "....."},
		{"alwaysOn", Config{Mode: AlwaysOn}, "xxxxx"},
		{"times 2", Config{Mode: Times, N: 2}, "xx..."},
		{"times 0 is off", Config{Mode: Times, N: 0}, "....."},
		{"skip 3", Config{Mode: Skip, N: 3}, "...xx"},
		{"probability 0", Config{Mode: Probability, P: 0}, "....."},
		{"probability 1", Config{Mode: Probability, P: 1}, "xxxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewRegistry(1).Define("p")
			p.Set(tc.cfg)
			got := ""
			for range len(tc.want) {
				if _, ok := p.Eval(nil); ok {
					got += "x"
				} else {
					got += "."
				}
			}
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if want := int64(len(stripDots(tc.want))); p.Entered() != want {
				t.Fatalf("entered %d, want %d", p.Entered(), want)
			}
		})
	}
}

func stripDots(s string) string {
	out := ""
	for _, c := range s {
		if c == 'x' {
			out += "x"
		}
	}
	return out
}

// TestMatchBeforeCount checks that evaluations the filter rejects do not use
// up {times: n}.
func TestMatchBeforeCount(t *testing.T) {
	p := NewRegistry(1).Define("p")
	p.Set(Config{Mode: Times, N: 1, Data: []byte("d")})
	no := func([]byte) bool { return false }
	for range 3 {
		if _, ok := p.Eval(no); ok {
			t.Fatal("fired although the filter rejected")
		}
	}
	data, ok := p.Eval(func(d []byte) bool { return string(d) == "d" })
	if !ok || string(data) != "d" {
		t.Fatalf("Eval = %q, %v; want the data, true", data, ok)
	}
	if _, ok := p.Eval(nil); ok {
		t.Fatal("fired after its one time")
	}
	if got := p.Set(Config{Mode: Off}); got != 1 {
		t.Fatalf("Set returned entered %d, want 1", got)
	}
}

func TestProbabilityIsRoughlyP(t *testing.T) {
	const seed, n = 7, 10000
	t.Logf("seed %d", seed)
	p := NewRegistry(seed).Define("p")
	p.Set(Config{Mode: Probability, P: 0.25})
	fired := 0
	for range n {
		if _, ok := p.Eval(nil); ok {
			fired++
		}
	}
	if fired < n/5 || fired > n*3/10 {
		t.Fatalf("fired %d of %d at p=0.25", fired, n)
	}
}

func TestNilIsOff(t *testing.T) {
	var r *Registry
	p := r.Define("x")
	if p.Active() {
		t.Fatal("nil point active")
	}
	if _, ok := p.Eval(nil); ok {
		t.Fatal("nil point fired")
	}
}

// BenchmarkOffPoint measures the check at a point that is off ("Off is one
// load").
func BenchmarkOffPoint(b *testing.B) {
	p := NewRegistry(1).Define("p")
	for b.Loop() {
		if p.Active() {
			b.Fatal("active")
		}
	}
}
