package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $reduce folds an array: {input, initialValue, in}, with $$value the
// accumulated value and $$this the current element while "in" runs.

func init() { register("$reduce", parseReduce) }

const (
	codeReduceNotObject    = mongoerr.ReduceNotObject
	codeReduceUnknownArg   = mongoerr.ReduceUnknownArg
	codeReduceMissingInput = mongoerr.ReduceMissingInput
	codeReduceMissingInit  = mongoerr.ReduceMissingInit
	codeReduceMissingIn    = mongoerr.ReduceMissingIn
	codeReduceInputType    = mongoerr.ReduceInputType
)

type reduceExpr struct{ input, init, in Expr }

func parseReduce(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeReduceNotObject, "$reduce requires an object as an argument, found: %s", TypeName(arg))
	}
	var r reduceExpr
	inner := NewScope(s, "value", "this")
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		var err error
		switch string(k) {
		case "input":
			r.input, err = ParseIn(v, s)
		case "initialValue":
			r.init, err = ParseIn(v, s)
		case "in":
			r.in, err = ParseIn(v, inner)
		default:
			return nil, errorf(codeReduceUnknownArg, "$reduce found an unknown argument: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case r.input == nil:
		return nil, errorf(codeReduceMissingInput, "$reduce requires 'input' to be specified")
	case r.init == nil:
		return nil, errorf(codeReduceMissingInit, "$reduce requires 'initialValue' to be specified")
	case r.in == nil:
		return nil, errorf(codeReduceMissingIn, "$reduce requires 'in' to be specified")
	}
	return r, nil
}

func (r reduceExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := r.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeArray {
		return Missing, errorf(codeReduceInputType, "$reduce requires that 'input' be an array, found: %s", in)
	}
	acc, err := r.init.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	defer ctx.bindVar("value", Missing)()
	defer ctx.bindVar("this", Missing)()
	it := elemsOf(in)
	for {
		_, e, ok := it.next()
		if !ok {
			return acc, nil
		}
		if err := ctx.interrupted(); err != nil {
			return Missing, err
		}
		ctx.SetVar("value", acc)
		ctx.SetVar("this", e)
		if acc, err = r.in.Eval(ctx); err != nil {
			return Missing, err
		}
	}
}
