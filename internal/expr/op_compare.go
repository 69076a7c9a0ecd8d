package expr

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Comparison operators: $eq $ne $gt $gte $lt $lte take two arguments and
// return a boolean; $cmp returns -1, 0 or 1. They compare any two values in
// MongoDB's total order (no type bracketing: {$gt: ["a", 1]} is true),
// strings by the context's collation.

func init() {
	register("$eq", comparison("$eq", func(c int) bool { return c == 0 }))
	register("$ne", comparison("$ne", func(c int) bool { return c != 0 }))
	register("$gt", comparison("$gt", func(c int) bool { return c > 0 }))
	register("$gte", comparison("$gte", func(c int) bool { return c >= 0 }))
	register("$lt", comparison("$lt", func(c int) bool { return c < 0 }))
	register("$lte", comparison("$lte", func(c int) bool { return c <= 0 }))
	register("$cmp", parseCmp)
}

type compareExpr struct {
	a, b Expr
	ok   func(int) bool
}

func comparison(op string, ok func(int) bool) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseFixedArgs(op, 2, arg, s)
		if err != nil {
			return nil, err
		}
		return compareExpr{a: args[0], b: args[1], ok: ok}, nil
	}
}

func (c compareExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	cmp, err := compareArgs(ctx, c.a, c.b)
	if err != nil {
		return Missing, err
	}
	return Bool(c.ok(cmp)), nil
}

func compareArgs(ctx *Context, a, b Expr) (int, error) {
	va, err := a.Eval(ctx)
	if err != nil {
		return 0, err
	}
	vb, err := b.Eval(ctx)
	if err != nil {
		return 0, err
	}
	return CompareWith(va, vb, ctx.coll), nil
}

type cmpExpr struct{ a, b Expr }

func parseCmp(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseFixedArgs("$cmp", 2, arg, s)
	if err != nil {
		return nil, err
	}
	return cmpExpr{args[0], args[1]}, nil
}

func (c cmpExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	cmp, err := compareArgs(ctx, c.a, c.b)
	if err != nil {
		return Missing, err
	}
	return Int32(int32(cmp)), nil
}
