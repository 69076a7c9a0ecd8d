package engine

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReusedOpIsNew checks invariant "A reused Op is a new operation":
// a killOp or a currentOp that found an Op before it ended, and reads it
// after BeginIn made it the next operation, neither kills that operation
// nor lists the ended one. First the interleaving itself, held in place by
// testAfterFound; then Kill and List racing End and BeginIn at random
// (run it under -race; the seed is logged).
func TestReusedOpIsNew(t *testing.T) {
	var ops Ops
	var slot Op
	parent := context.Background()
	begin := func() *Op { return ops.BeginIn(&slot, OpInfo{ConnID: 1, Op: "query", Parent: parent}) }

	// held runs call (Kill or List) until it has found its Ops, then ends
	// op and begins the next operation in the same Op before call goes
	// on; it returns the next operation.
	held := func(op *Op, call func()) *Op {
		found, proceed, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		testAfterFound = func() { found <- struct{}{}; <-proceed }
		defer func() { testAfterFound = nil }()
		go func() { call(); close(done) }()
		<-found
		ops.End(op)
		next := begin()
		close(proceed)
		<-done
		return next
	}
	first := begin()
	firstID := first.ID
	var killed bool
	second := held(first, func() { killed = ops.Kill(firstID) })
	if killed || second.Context().Err() != nil || second.killed {
		t.Fatalf("a kill of ended operation %d reached operation %d (Kill %v, its context %v)", firstID, second.ID, killed, second.Context().Err())
	}
	secondID := second.ID
	var listed []OpStatus
	third := held(second, func() { listed = ops.List() })
	if len(listed) != 0 {
		t.Fatalf("currentOp, begun while operation %d ran, listed %+v after it ended and %d began", secondID, listed, third.ID)
	}
	if l := ops.List(); len(l) != 1 || l[0].ID != third.ID {
		t.Fatalf("listed %+v, want operation %d", l, third.ID)
	}
	ops.End(third)

	// At random: killers kill ended operations, listers check that no
	// operation is listed after it ended, or twice.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	var ended atomic.Int64 // every operation up to this id has ended
	var stop atomic.Bool
	var wg sync.WaitGroup
	var kills, lists atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for !stop.Load() {
				if g%2 == 0 {
					if id := ended.Load(); id > 0 {
						ops.Kill(id)
						kills.Add(1)
					}
					continue
				}
				floor := ended.Load()
				seen := map[int64]bool{}
				for _, st := range ops.List() {
					if st.ID <= floor || seen[st.ID] {
						t.Errorf("currentOp listed operation %d (ended up to %d; twice: %v)", st.ID, floor, seen[st.ID])
					}
					seen[st.ID] = true
				}
				lists.Add(1)
			}
		})
	}
	for range 20000 {
		op := begin()
		for range r.IntN(50) {
			_ = op.Context().Err()
		}
		if err := op.Context().Err(); err != nil {
			t.Errorf("operation %d cancelled (%v) by a kill of one that had ended", op.ID, err)
		}
		id := op.ID
		ops.End(op)
		ended.Store(id)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d kills and %d lists raced 20,000 operations", kills.Load(), lists.Load())
}
