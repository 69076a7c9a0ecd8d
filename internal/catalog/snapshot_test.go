package catalog

import (
	"testing"
	"time"
)

// TestSnapshotMatchesCatalog checks invariant "Catalog matches snapshot":
// a snapshot taken while no catalog change is in flight gets the published
// state at once; one taken while a change became visible is retaken after
// that change is published, and gets the new state.
func TestSnapshotMatchesCatalog(t *testing.T) {
	st0, st1 := &State{}, &State{}
	c := &Catalog{working: st0}
	c.published.Store(st0)

	takes, undos := 0, 0
	got := c.Snapshot(func() { takes++ }, func() { undos++ })
	if got != st0 || takes != 1 || undos != 0 {
		t.Fatalf("quiet catalog: state %p (want %p), %d takes, %d undos", got, st0, takes, undos)
	}

	// The first take races a commit that changed the catalog: its writes
	// may be in that snapshot, its state is not yet published.
	takes, undos = 0, 0
	got = c.Snapshot(func() {
		takes++
		if takes == 1 {
			c.working = st1
			c.Committing()
			go func() {
				time.Sleep(5 * time.Millisecond)
				c.Committed()
			}()
		}
	}, func() { undos++ })
	if got != st1 || takes != 2 || undos != 1 {
		t.Fatalf("change in flight: state %p (want the new %p), %d takes (want 2), %d undos (want 1)", got, st1, takes, undos)
	}

	// A group that fails after Committing leaves the catalog quiet again.
	c.working = &State{}
	c.Committing()
	c.Failed()
	if g := c.gen.Load(); g%2 != 0 {
		t.Fatalf("gen %d odd after a failed commit", g)
	}
	if got := c.Snapshot(func() {}, func() {}); got != st1 {
		t.Fatalf("after a failed change: state %p, want %p", got, st1)
	}

	// A group that did not change the catalog leaves gen alone.
	g := c.gen.Load()
	c.Committing()
	c.Committed()
	if c.gen.Load() != g {
		t.Fatalf("gen moved from %d to %d for a group without catalog changes", g, c.gen.Load())
	}
}
