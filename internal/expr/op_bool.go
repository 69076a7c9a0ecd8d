package expr

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Boolean operators: $and and $or take any number of arguments and
// short-circuit; $not takes one. All use aggregation truthiness (Truthy).

func init() {
	register("$and", parseAnd)
	register("$or", parseOr)
	register("$not", parseNot)
}

type andExpr []Expr

func parseAnd(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseArgs(arg, s)
	return andExpr(args), err
}

func (a andExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for _, e := range a {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !Truthy(v) {
			return Bool(false), nil
		}
	}
	return Bool(true), nil
}

type orExpr []Expr

func parseOr(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseArgs(arg, s)
	return orExpr(args), err
}

func (o orExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for _, e := range o {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if Truthy(v) {
			return Bool(true), nil
		}
	}
	return Bool(false), nil
}

type notExpr struct{ e Expr }

func parseNot(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseFixedArgs("$not", 1, arg, s)
	if err != nil {
		return nil, err
	}
	return notExpr{args[0]}, nil
}

func (n notExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := n.e.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	return Bool(!Truthy(v)), nil
}
