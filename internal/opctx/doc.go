// Package opctx owns what an operation's context.Context means in Cairn: why
// an operation ends early (its maxTimeMS passed, killOp interrupted it, its
// client went away), as MongoDB errors, and the cheap check that stages,
// scans and loops make where they spend time.
//
// The server gives every command a context; commands.Run makes the
// operation's own under it (a Canceler inside the operation's registry
// entry, which killOp and a client's disconnect cancel, and a deadline for
// maxTimeMS), hands it to every exec entry point, and everything below —
// planner stages, aggregation stages and expression loops, write loops,
// index builds, collStats walks — checks that context, never a clock of
// its own.
//
// A connection's Op, and the Canceler in it, serve one command after
// another (Canceler.Reuse, engine's invariant "A reused Op is a new
// operation"): contexts derived from a command's must end with it (a
// maxTimeMS deadline is stopped, a cursor's Bound detached) before the
// command's operation ends.
//
// Invariant "The cause is the reply": an operation ended early fails with
// Err(ctx), which is the context's cause. Cairn's own cancellations carry a
// *mongoerr.Error as the cause (MaxTimeMSExpired 50, Interrupted 11601,
// ClientDisconnect 279), so the error a stage returns is already the reply a
// MongoDB server sends; a caller's own cancellation (the embedded API)
// surfaces as context.Canceled or context.DeadlineExceeded.
//
// Invariant "Checks are cheap": Err is one atomic load while the context
// lives; Poll spaces even that over many calls on the hottest loops.
//
// Invariant "A cursor outlives its requests, not their limits": a plan kept
// for getMore runs under a Bound context that each request pulling it
// attaches to for its duration, so the deadline, killOp or disconnect of the
// request that is running it ends it, and nothing of a finished request
// does.
package opctx
