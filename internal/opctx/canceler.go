package opctx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Canceler is an operation's context, cheaper than context.WithCancelCause
// on the path every command takes: it lives inside the operation's
// registry entry (no allocation of its own), makes no channel until
// something waits on Done, and registers with no parent (the server's
// context is never cancelled; a cancellable parent, the embedded API's,
// is followed through context.AfterFunc). Derived contexts (a maxTimeMS
// deadline, a cursor's Bound) link to it through AfterFunc, without a
// goroutine.
//
// Err follows the context contract (Canceled or DeadlineExceeded); the
// cause given to Cancel is what opctx.Err reports, also through contexts
// derived from it ("The cause is the reply").
type Canceler struct {
	parent context.Context
	cause  atomic.Pointer[error]

	mu     sync.Mutex
	done   chan struct{}
	afters []*afterFunc
	stop   func() bool // unlinks from a cancellable parent
}

type afterFunc struct{ f func() }

// cancelerKey finds the Canceler above a derived context (Value).
type cancelerKey struct{}

// endCause is the cause End records: a static pointer, so ending an
// operation allocates nothing.
var endCause error = context.Canceled

// Init makes c a live context under parent; call it once, before use.
func (c *Canceler) Init(parent context.Context) {
	c.parent = parent
	c.follow(parent)
}

// follow links c to a cancellable parent: c is cancelled with the
// parent's cause when it is (Init, Reuse).
func (c *Canceler) follow(parent context.Context) {
	if parent.Done() != nil {
		c.stop = context.AfterFunc(parent, func() { c.Cancel(Err(parent)) })
	}
}

// Reuse makes c, ended (End or Cancel) or never initialized, a live
// context under parent again, for its operation's Op begun anew
// (engine.Ops.BeginIn), as Init does for a new one. What waited on c's
// last life was woken when it ended; what still holds c from it sees the
// new life, which is why only an Op whose contexts end with its command
// is reused (invariant "A reused Op is a new operation", engine/ops.go).
// The parent is written only when it differs: the server's never does,
// and what still reads c's parent from the last life then reads the same.
func (c *Canceler) Reuse(parent context.Context) {
	c.mu.Lock()
	if c.parent != parent {
		c.parent = parent
	}
	c.done, c.afters, c.stop = nil, nil, nil
	c.mu.Unlock()
	c.cause.Store(nil)
	c.follow(parent)
}

// Cancel ends c with cause (kept by the first call only).
func (c *Canceler) Cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.finish(&cause)
}

// End ends c when its operation is over, allocating nothing.
func (c *Canceler) End() { c.finish(&endCause) }

func (c *Canceler) finish(cause *error) {
	if !c.cause.CompareAndSwap(nil, cause) {
		return
	}
	c.mu.Lock()
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range afters {
		if a.f != nil {
			go a.f()
		}
	}
	if c.stop != nil {
		c.stop()
	}
}

// Deadline is the parent's.
func (c *Canceler) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done returns a channel closed when c ends, made on first use.
func (c *Canceler) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.cause.Load() != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err is nil while c lives, then DeadlineExceeded when a deadline ended it
// and Canceled otherwise; one atomic load while it lives.
func (c *Canceler) Err() error {
	p := c.cause.Load()
	if p == nil {
		return nil
	}
	if errors.Is(*p, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// Value answers for c itself (see Err) and asks the parent otherwise.
func (c *Canceler) Value(key any) any {
	if key == (cancelerKey{}) {
		return c
	}
	return c.parent.Value(key)
}

// AfterFunc runs f in its own goroutine once c ends, as context.AfterFunc
// does; context.AfterFunc and the context package's derived contexts use
// it instead of starting a goroutine to wait on Done.
func (c *Canceler) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.cause.Load() != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.afters = append(c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.afters {
			if x == a {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// causeOf is the cause of the Canceler above ctx, if one ended it.
func causeOf(ctx context.Context) (error, bool) {
	c, ok := ctx.Value(cancelerKey{}).(*Canceler)
	if !ok {
		return nil, false
	}
	p := c.cause.Load()
	if p == nil {
		return nil, false
	}
	return *p, true
}
