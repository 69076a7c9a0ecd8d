package catalog

import (
	"testing"
	"time"
)

// TestReadMatchesSnapshot checks invariant "Catalog matches snapshot":
// a read with no catalog change in flight is valid at once; one that a
// catalog change races is invalid, and the next ReadBegin waits until that
// change is published and returns it.
func TestReadMatchesSnapshot(t *testing.T) {
	st0, st1 := &State{}, &State{}
	c := &Catalog{working: st0}
	c.published.Store(st0)

	st, g := c.ReadBegin()
	if st != st0 || !c.ReadValid(g) {
		t.Fatalf("quiet catalog: state %p (want %p), valid %v", st, st0, c.ReadValid(g))
	}

	// A group that changed the catalog commits while a reader takes its
	// snapshot: its writes may be in that snapshot, its state is not yet
	// published.
	st, g = c.ReadBegin()
	c.working = st1
	c.Committing()
	if c.ReadValid(g) {
		t.Fatal("a read raced by a catalog change is still valid")
	}
	published := make(chan struct{})
	go func() {
		time.Sleep(5 * time.Millisecond)
		close(published)
		c.Committed()
	}()
	st, g = c.ReadBegin()
	select {
	case <-published:
	default:
		t.Fatal("ReadBegin returned while a catalog change was in flight")
	}
	if st != st1 || !c.ReadValid(g) {
		t.Fatalf("after the change: state %p (want the new %p), valid %v", st, st1, c.ReadValid(g))
	}

	// A group that fails after Committing leaves the catalog quiet again.
	c.working = &State{}
	c.Committing()
	c.Failed()
	if st, g := c.ReadBegin(); st != st1 || !c.ReadValid(g) {
		t.Fatalf("after a failed change: state %p (want %p), valid %v", st, st1, c.ReadValid(g))
	}

	// A group that did not change the catalog leaves reads valid.
	_, g = c.ReadBegin()
	c.Committing()
	c.Committed()
	if !c.ReadValid(g) {
		t.Fatal("a group without catalog changes invalidated a read")
	}
}
