package planner

import (
	"math"
	"testing"
)

// TestHasNumericPart checks the paths whose index keys the planner does not
// trust (a component that may be an array position).
func TestHasNumericPart(t *testing.T) {
	for path, want := range map[string]bool{
		"a": false, "a.b": false, "a.0": true, "0": true, "a.10.b": true,
		"a.-1": true, "a.+1": true, "a.+": false, "a.1x": false, "a..b": false,
		"a.99999999999999999999999": true, "": false, "a.b1": false,
	} {
		if got := hasNumericPart(path); got != want {
			t.Errorf("hasNumericPart(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestTypeBracketNaN checks that a NaN bound is left unbounded (NaN sorts
// below every number, outside the numeric bracket), and a shared bracket
// is returned for each numeric type.
func TestTypeBracketNaN(t *testing.T) {
	if _, ok := typeBracket(doubleValue(math.NaN())); ok {
		t.Fatal("NaN got a type bracket")
	}
	a, ok1 := typeBracket(doubleValue(5))
	b, ok2 := typeBracket(doubleValue(-5))
	if !ok1 || !ok2 || a.String() != b.String() {
		t.Fatalf("numeric brackets differ: %v %v", a, b)
	}
}
