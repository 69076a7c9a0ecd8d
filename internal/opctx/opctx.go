package opctx

import (
	"context"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// The causes Cairn cancels an operation with; each is the reply MongoDB sends.
var (
	// ErrMaxTime ends an operation whose maxTimeMS passed.
	ErrMaxTime = mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	// ErrKilled ends an operation killOp interrupted.
	ErrKilled = mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	// ErrClientGone ends an operation whose client closed its connection.
	ErrClientGone = mongoerr.New(mongoerr.ClientDisconnect, "operation was interrupted because a client disconnected")
)

// Err is nil while ctx lives, and why it ended otherwise: its cause (see
// "The cause is the reply").
func Err(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if cause == context.Canceled || cause == context.DeadlineExceeded {
		// Ended through a Canceler above (a derived context records only
		// Canceled from it): its cause is the reason.
		if c, ok := causeOf(ctx); ok {
			return c
		}
	}
	return cause
}

// pollEvery spaces the checks of Poll. A step is usually a document (a
// fraction of a microsecond), but one with a costly filter or expression
// may take a millisecond, and 16 of those still end well inside the 100 ms
// in which a cancelled operation must be gone.
const pollEvery = 16

// Poll checks a context every pollEvery calls, for loops whose single step
// is too cheap to pay even an atomic load. The zero value is ready.
type Poll struct{ n uint32 }

// Err is Err(ctx) on every pollEvery-th call and nil on the others.
func (p *Poll) Err(ctx context.Context) error {
	p.n++
	if p.n%pollEvery != 0 {
		return nil
	}
	return Err(ctx)
}

// WithMaxTime bounds ctx by a maxTimeMS of d from now; d <= 0 leaves ctx
// unbounded (cancel is then a no-op).
func WithMaxTime(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, time.Now().Add(d), ErrMaxTime)
}

// Remaining is the time left before ctx's deadline, for a cursor to carry
// its maxTimeMS over to the next getMore (MongoDB's leftover max time).
// ok is false without a deadline; a passed deadline leaves a nanosecond,
// so the next getMore expires at once.
func Remaining(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return max(time.Until(dl), time.Nanosecond), true
}

// Bound is the context of work that outlives one request: a plan a cursor
// keeps for getMore. Each request that pulls it attaches its own context
// for its duration ("A cursor outlives its requests, not their limits").
type Bound struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// NewBound returns a live Bound; Close it when the work ends.
func NewBound() *Bound {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Bound{ctx: ctx, cancel: cancel}
}

// Context is the context the work runs under.
func (b *Bound) Context() context.Context { return b.ctx }

// Attach makes the end of req end the bound work too, with req's cause,
// until detach is called (call it before req ends normally).
func (b *Bound) Attach(req context.Context) (detach func()) {
	stop := context.AfterFunc(req, func() { b.cancel(Err(req)) })
	return func() { stop() }
}

// Close ends the work's context.
func (b *Bound) Close() { b.cancel(context.Canceled) }
