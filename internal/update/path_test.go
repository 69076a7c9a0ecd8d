package update

import (
	"slices"
	"testing"
)

// TestComparePathParts pins the order in which paths apply (and new
// fields are appended): bytewise, numbers by length then digits, zero
// padded numbers as strings.
func TestComparePathParts(t *testing.T) {
	got := []string{"b", "10", "a", "9", "B", "09", "1", "100", "1a", "$x", "_id"}
	slices.SortFunc(got, comparePathParts)
	want := []string{"$x", "09", "1", "9", "10", "1a", "100", "B", "_id", "a", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %q, want %q", got, want)
	}
}

func TestArrayIndex(t *testing.T) {
	for _, tc := range []struct {
		s  string
		n  int
		ok bool
	}{{"0", 0, true}, {"12", 12, true}, {"007", 7, true}, {"", 0, false}, {"-1", 0, false}, {"1a", 0, false}, {"2147483647", 2147483647, true}, {"2147483648", 0, false}, {"99999999999999999999", 0, false}} {
		n, ok := arrayIndex(tc.s)
		if n != tc.n || ok != tc.ok {
			t.Errorf("arrayIndex(%q) = %d, %v; want %d, %v", tc.s, n, ok, tc.n, tc.ok)
		}
	}
}
