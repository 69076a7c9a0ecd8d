package commands

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdKillOp interrupts the operation with the given opid (currentOp's):
// {killOp: 1, op: <opid>} on admin. The victim fails with Interrupted
// (11601) at its next check of its context. As MongoDB's, the reply is the
// same whether or not the operation still exists.
func cmdKillOp(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	v, ok := req.Arg("op")
	if !ok {
		return nil, mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"op\"")
	}
	id, frac, ok := wholeNumber(v)
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "\"op\" had the wrong type. Expected number, found %s", typeName(v.Type))
	case frac:
		return nil, mongoerr.New(mongoerr.BadValue, "Expected field \"op\" to have a value exactly representable as a 64-bit integer, but found op: %s", v)
	}
	if id < math.MinInt32 || id > math.MaxInt32 {
		return nil, mongoerr.New(mongoerr.OpIDOutOfRange, "invalid op : %d. Op ID cannot be represented with 32 bits", id)
	}
	s.Env.Engine.Ops().Kill(id)
	return NewReply(dst).String("info", "attempting to kill op").Finish(), nil
}
