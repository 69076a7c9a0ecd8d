//go:build !cairntrace

package hoptrace

import (
	"strings"
	"testing"
)

// TestOff checks "Off is free": without the tag nothing is timed or kept.
func TestOff(t *testing.T) {
	if Enabled || Now() != 0 || Since(GroupRepl, 1) != 0 {
		t.Fatal("the trace is on in a build without the cairntrace tag")
	}
	Count(GroupSize, 3)
	var m Mark
	if m.Set(5); m.Get() != 0 {
		t.Fatal("a Mark kept a timestamp in a build without the cairntrace tag")
	}
	var b strings.Builder
	Write(&b)
	if b.Len() != 0 {
		t.Fatalf("Write wrote %q", b.String())
	}
}

// TestHopNames: every hop has a distinct name.
func TestHopNames(t *testing.T) {
	seen := map[string]bool{}
	for h := range numHops {
		n := h.String()
		if n == "" || seen[n] {
			t.Fatalf("hop %d has the name %q, empty or taken", h, n)
		}
		seen[n] = true
	}
}
