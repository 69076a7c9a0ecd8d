package expr

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFindAllInterruptible: findAllInterruptible yields exactly the
// matches of FindAllStringSubmatchIndex on inputs long enough to be
// searched in chunks — empty matches, matches that abut, multi-byte
// runes, captures that do not take part, patterns that look behind their
// start — and on random inputs (the seed is printed).
func TestFindAllInterruptible(t *testing.T) {
	long := func(unit string) string { return strings.Repeat(unit, findAllLong/len(unit)+7) }
	for _, tc := range []struct{ name, pattern, input string }{
		{"one letter", "a", long("abcdefghij")},
		{"every position empty", "x*", long("abc")},
		{"empty and non-empty abut", "a*", long("aab")},
		{"multi-byte runes, empty matches", "é?", long("aéb€")},
		{"captures not taking part", "(a)|(b)", long("abc")},
		{"matches at the very end", "c$", long("abc")},
		{"a chunk's end inside a run", "ab|b", long("ab")},
		{"start of text", "^a", long("ab")},
		{"start of line", "(?m)^a", long("ab\n")},
		{"word boundary", `\ba`, long("aa ")},            // a suffix's start is a boundary
		{"start of text, captured", "(^a)|a", long("a")}, // a suffix's start is the text's
		{"no match", "z", long("abc")},
	} {
		t.Run(tc.name, func(t *testing.T) { checkFindAll(t, tc.pattern, tc.input) })
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	patterns := []string{"a", "a*", "b?", "(a|ab)(c|bcd)?", "[ab]+", "é*", "x*y*"}
	for range 20 {
		var b strings.Builder
		for b.Len() < findAllLong+r.IntN(4*findAllChunk) {
			b.WriteString([]string{"a", "b", "c", "é", "x", "y", " "}[r.IntN(7)])
		}
		checkFindAll(t, patterns[r.IntN(len(patterns))], b.String())
	}
}

func checkFindAll(t *testing.T, pattern, input string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	want := re.FindAllStringSubmatchIndex(input, -1)
	var got [][]int
	checks := 0
	err := findAllInterruptible(re, input, func() error { checks++; return nil }, func(m []int) {
		got = append(got, append([]int(nil), m...))
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		n := min(len(got), len(want))
		for i := range n {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%q over %d bytes: match %d is %v, want %v (%d and %d matches)", pattern, len(input), i, got[i], want[i], len(got), len(want))
			}
		}
		t.Fatalf("%q over %d bytes: %d matches, want %d", pattern, len(input), len(got), len(want))
	}
	if len(want) >= 2*findAllChunk && checks == 0 {
		t.Errorf("%q: %d matches and the deadline never checked", pattern, len(want))
	}
}

// TestFindAllInterruptedStopsEarly: an interruption ends the search at the
// next chunk, not after every match is found.
func TestFindAllInterruptedStopsEarly(t *testing.T) {
	stop := errors.New("stop")
	input := strings.Repeat("a", 1<<20)
	seen := 0
	err := findAllInterruptible(regexp.MustCompile("a"), input, func() error { return stop }, func([]int) { seen++ })
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the interruption", err)
	}
	if seen > findAllChunk {
		t.Fatalf("%d matches handed on after an interruption at the first check, want at most %d", seen, findAllChunk)
	}
}
