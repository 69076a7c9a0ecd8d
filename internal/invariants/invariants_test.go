package invariants

import "testing"

// catch runs f and returns the Violation it panicked with, or nil.
func catch(f func()) (v *Violation) {
	defer func() {
		if r := recover(); r != nil {
			v, _ = r.(*Violation)
		}
	}()
	f()
	return nil
}

func TestCloseChecker(t *testing.T) {
	var c CloseChecker
	c.Opened()
	if v := catch(func() { c.Close("thing") }); v != nil {
		t.Fatalf("first Close panicked: %v", v)
	}
	v := catch(func() { c.Close("thing") })
	if !Enabled {
		if v != nil {
			t.Fatalf("without the invariants tag a second Close must do nothing, got %v", v)
		}
		return
	}
	if v == nil || v.Invariant != "Closed once" {
		t.Fatalf("second Close: got %v, want a violation of \"Closed once\"", v)
	}
}

func TestFailNamesTheInvariant(t *testing.T) {
	v := catch(func() { Fail("Tail bound", "key %d", 7) })
	if v == nil || v.Invariant != "Tail bound" || v.Error() != `invariant "Tail bound" violated: key 7` {
		t.Fatalf("got %v", v)
	}
}
