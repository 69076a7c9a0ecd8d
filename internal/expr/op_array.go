package expr

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Array operators: $in and $size.

func init() {
	register("$in", parseInOp)
	register("$size", parseSize)
}

type inExpr struct{ elem, arr Expr }

func parseInOp(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseFixedArgs("$in", 2, arg, s)
	if err != nil {
		return nil, err
	}
	return inExpr{args[0], args[1]}, nil
}

func (e inExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	x, err := e.elem.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	arr, err := e.arr.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeInNotArray, "$in requires an array as a second argument, found: %s", TypeName(arr))
	}
	it := elemsOf(arr)
	for {
		_, v, ok := it.next()
		if !ok {
			return Bool(false), nil
		}
		if EqualWith(x, v, ctx.coll) {
			return Bool(true), nil
		}
	}
}

type sizeExpr struct{ arr Expr }

func parseSize(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseFixedArgs("$size", 1, arg, s)
	if err != nil {
		return nil, err
	}
	return sizeExpr{args[0]}, nil
}

func (e sizeExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	arr, err := e.arr.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeSizeNotArray, "The argument to $size must be an array. Type of argument: %s", TypeName(arr))
	}
	n := int32(0)
	it := elemsOf(arr)
	for {
		if _, _, ok := it.next(); !ok {
			return Int32(n), nil
		}
		n++
	}
}
