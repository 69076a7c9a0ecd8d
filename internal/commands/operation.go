package commands

import (
	"context"
	"errors"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/planner"
)

// This file gives each command its operation: the context every handler
// receives (cancelled by killOp, bounded by maxTimeMS, ended when the
// client goes away; package opctx), registered for currentOp. maxTimeMS is
// a generic argument, read here once for every command.

// beginOp registers req as an operation in progress and derives its
// context from ctx; end the returned operation when the command is done.
// It is on every command's path, so it allocates nothing beyond the
// registry entry, which carries the context (opctx.Canceler), unless
// maxTimeMS asks for a deadline.
func beginOp(ctx context.Context, s *Session, req *Request) (context.Context, operation, error) {
	maxTime, err := maxTimeMS(req)
	if err != nil {
		return ctx, operation{}, err
	}
	info := engine.OpInfo{ConnID: s.ConnID, Client: s.Remote, Op: opKind(req.Name), DB: req.DB, Command: req.Body, Parent: ctx, Began: req.start}
	var op *engine.Op
	reused := !s.opBusy && ctx.Done() == nil
	if reused {
		// The connection's own Op, begun anew for each of its commands
		// (engine's "A reused Op is a new operation"); a command run
		// inside another, or under a context that can be cancelled
		// (the embedded API's), has one of its own.
		op, s.opBusy = s.Env.Engine.Ops().BeginIn(&s.opSlot, info), true
	} else {
		op = s.Env.Engine.Ops().Begin(info)
	}
	ctx, stop := opctx.WithMaxTime(op.Context(), maxTime)
	s.running.Store(op)
	return ctx, operation{s: s, op: op, stop: stop, reused: reused}, nil
}

// opKind is currentOp's op field for a command, as MongoDB names it.
func opKind(name string) string {
	switch name {
	case "find":
		return "query"
	case "getMore":
		return "getmore"
	case "insert":
		return "insert"
	case "update":
		return "update"
	case "delete":
		return "remove"
	}
	return "command"
}

// operation is a command's entry in the registry and its context.
type operation struct {
	s      *Session
	op     *engine.Op
	stop   context.CancelFunc
	reused bool // op is the Session's opSlot
}

func (o operation) end() {
	o.s.running.Store(nil)
	o.stop()
	o.s.Env.Engine.Ops().End(o.op) // ends its context too
	if o.reused {
		o.s.opBusy = false
	}
}

// maxTimeMS reads the generic maxTimeMS argument as MongoDB 7.0's
// parseMaxTimeMS does: a number of milliseconds from 0 (none) to
// 2147483647, read as safeNumberLong reads it. Every refusal is BadValue:
// a value that is not a number (null included), one out of that range
// (negative included), a double with a fraction. On getMore maxTimeMS is
// not the command's deadline (it is an awaitData cursor's await time;
// cmdGetMore reads it), so it is not read here.
func maxTimeMS(req *Request) (time.Duration, error) {
	v, ok := req.Arg("maxTimeMS")
	if !ok || req.Name == "getMore" {
		return 0, nil
	}
	n, frac, ok := wholeNumber(v)
	switch {
	case !ok:
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	case n < 0 || n > math.MaxInt32:
		return 0, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range [0, %d]", n, math.MaxInt32)
	case frac && v.Type == bsoncore.TypeDouble:
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// wholeNumber reads a numeric argument as MongoDB's safeNumberLong does:
// int32 and int64 as they are, a double or decimal truncated (frac reports
// a dropped fraction), clamped to int64's range, NaN as 0. ok is false for
// any other type.
func wholeNumber(v bsoncore.Value) (n int64, frac, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), false, true
	case bsoncore.TypeInt64:
		return v.Int64(), false, true
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.AsFloat64(v)
		switch {
		case math.IsNaN(f):
			return 0, false, true
		case f >= math.MaxInt64:
			return math.MaxInt64, false, true
		case f <= math.MinInt64:
			return math.MinInt64, false, true
		}
		return int64(f), f != math.Trunc(f), true
	}
	return 0, false, false
}

// isInterruption reports whether err ended an operation early (maxTimeMS,
// killOp, a client gone, or the embedded caller's context): such an error
// fails a whole write command, not one statement, as in MongoDB.
func isInterruption(err error) bool {
	switch mongoerr.CodeOf(err) {
	case mongoerr.MaxTimeMSExpired, mongoerr.Interrupted, mongoerr.ClientDisconnect:
		return true
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// boundSource is a plan that may outlive its request as a cursor's: it runs
// under its own opctx.Bound, which each request pulling it attaches to.
type boundSource struct {
	agg.Source
	bound *opctx.Bound
}

// keepForCursor returns a find's plan, opened under its request's context,
// as a cursor keeps it: under a Bound of its own from now on, which each
// getMore attaches to. A find answered in one batch, the common case, pays
// nothing for it; nor does the point read, which keeps no context.
func keepForCursor(ex *planner.Exec, sel *exec.Selection) agg.Source {
	if sel.PointRead() {
		return ex
	}
	b := opctx.NewBound()
	ex.SetContext(b.Context())
	return &boundSource{Source: ex, bound: b}
}

func (s *boundSource) Close() error {
	err := s.Source.Close()
	s.bound.Close()
	return err
}

// resume prepares a getMore of cur under ctx: the cursor's leftover
// maxTimeMS becomes ctx's deadline (MongoDB rolls the remaining time of the
// originating command over from getMore to getMore), and the cursor's plan
// follows ctx until done is called, which records the time left.
func (cur *Cursor) resume(ctx context.Context) (_ context.Context, done func()) {
	cancel := context.CancelFunc(func() {})
	if cur.maxTime > 0 {
		ctx, cancel = opctx.WithMaxTime(ctx, cur.maxTime)
	}
	detach := func() {}
	if b, ok := cur.src.(*boundSource); ok {
		detach = b.bound.Attach(ctx)
	}
	return ctx, func() {
		if cur.maxTime > 0 {
			cur.maxTime, _ = opctx.Remaining(ctx)
		}
		detach()
		cancel()
	}
}
