package commands

import (
	"context"
	"errors"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
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
	op := s.Env.Engine.Ops().Begin(engine.OpInfo{ConnID: s.ConnID, Client: s.Remote, Op: opKind(req.Name), DB: req.DB, Command: req.Body, Parent: ctx})
	ctx, stop := opctx.WithMaxTime(op.Context(), maxTime)
	s.running.Store(op)
	return ctx, operation{s: s, op: op, stop: stop}, nil
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
	s    *Session
	op   *engine.Op
	stop context.CancelFunc
}

func (o operation) end() {
	o.s.running.Store(nil)
	o.stop()
	o.s.Env.Engine.Ops().End(o.op) // ends its context too
}

// maxTimeMS reads the generic maxTimeMS argument as MongoDB 7.0 does: a
// number of milliseconds from 0 (none) to 2147483647. A fractional double is
// BadValue, a negative value 51024 (the IDL's ">= 0" validator, checked
// first), beyond int32 BadValue, null BadValue, another type TypeMismatch.
// On getMore it is the await time of a tailable awaitData cursor, which
// Cairn does not have yet, so it is refused as MongoDB refuses it for
// every other cursor.
func maxTimeMS(req *Request) (time.Duration, error) {
	v, ok := req.Arg("maxTimeMS")
	if !ok {
		return 0, nil
	}
	if req.Name == "getMore" {
		return 0, mongoerr.New(mongoerr.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
	}
	if v.Type == bsoncore.TypeNull {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	}
	n, frac, ok := wholeNumber(v)
	switch {
	case !ok:
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.maxTimeMS' is the wrong type '%s', expected types '[long, int, decimal, double]'", req.Name, typeName(v.Type))
	case n < 0:
		return 0, mongoerr.New(mongoerr.ValueNegative, "BSON field 'maxTimeMS' value must be >= 0, actual value '%d'", n)
	case n > math.MaxInt32:
		return 0, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range", n)
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
	Source
	bound *opctx.Bound
}

// openBound opens sp under a Bound attached to ctx until detach is called,
// for a read whose plan may become a cursor. A point read needs none: its
// one document is read at once.
func (sp findSpec) openBound(ctx context.Context, eng *engine.Engine) (src Source, detach func(), err error) {
	if src, ok, err := sp.pointRead(eng); ok || err != nil {
		return src, func() {}, err
	}
	b := opctx.NewBound()
	detach = b.Attach(ctx)
	ex, err := sp.prepare(b.Context(), eng, false)
	if err != nil {
		detach()
		b.Close()
		return nil, func() {}, err
	}
	return &boundSource{Source: ex, bound: b}, detach, nil
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
