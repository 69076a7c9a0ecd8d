package opctx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// TestCancelerCauseReachesDerivedContexts: killOp's cause is what Err
// reports on the Canceler, on a deadline context derived from it and on a
// Bound attached to it; the context contract's Err stays Canceled.
func TestCancelerCauseReachesDerivedContexts(t *testing.T) {
	var c opctx.Canceler
	c.Init(context.Background())
	derived, stop := opctx.WithMaxTime(&c, time.Hour)
	defer stop()
	b := opctx.NewBound()
	defer b.Close()
	defer b.Attach(&c)()
	if opctx.Err(&c) != nil || opctx.Err(derived) != nil {
		t.Fatal("a live Canceler reports an end")
	}
	c.Cancel(opctx.ErrKilled)
	select {
	case <-derived.Done():
	case <-time.After(time.Second):
		t.Fatal("the derived context did not end with the Canceler")
	}
	select {
	case <-b.Context().Done():
	case <-time.After(time.Second):
		t.Fatal("the attached Bound did not end with the Canceler")
	}
	for name, ctx := range map[string]context.Context{"canceler": &c, "derived": derived, "bound": b.Context()} {
		if got := mongoerr.CodeOf(opctx.Err(ctx)); got != mongoerr.Interrupted {
			t.Errorf("%s: code %d, want Interrupted", name, got)
		}
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", c.Err())
	}
}

// TestCancelerFollowsItsParent: the embedded API's context ends the
// operation with the caller's own error.
func TestCancelerFollowsItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var c opctx.Canceler
	c.Init(parent)
	cancel()
	select {
	case <-c.Done():
	case <-time.After(time.Second):
		t.Fatal("the Canceler did not end with its parent")
	}
	if err := opctx.Err(&c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", err)
	}
}

// TestCancelerCostsNothingUnused: an operation that nobody waits on
// allocates nothing for its context ("Checks are cheap").
func TestCancelerCostsNothingUnused(t *testing.T) {
	// The Canceler lives inside the operation's registry entry, allocated
	// anyway; what is measured is everything else.
	cs := make([]opctx.Canceler, 1001)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		c := &cs[i]
		i++
		c.Init(context.Background())
		_ = opctx.Err(c)
		c.End()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per operation, want 0", allocs)
	}
}
