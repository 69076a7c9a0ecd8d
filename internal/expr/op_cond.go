package expr

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Conditional operators: $cond and $ifNull.

func init() {
	register("$cond", parseCond)
	register("$ifNull", parseIfNull)
}

type condExpr struct{ cond, then, els Expr }

// parseCond accepts [if, then, else] and {if, then, else}.
func parseCond(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		args, err := parseFixedArgs("$cond", 3, arg, s)
		if err != nil {
			return nil, err
		}
		return condExpr{args[0], args[1], args[2]}, nil
	}
	var c condExpr
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		e, err := ParseIn(v, s)
		if err != nil {
			return nil, err
		}
		switch string(k) {
		case "if":
			c.cond = e
		case "then":
			c.then = e
		case "else":
			c.els = e
		default:
			return nil, errorf(codeCondUnknownArg, "Unrecognized parameter to $cond: %s", k)
		}
	}
	switch {
	case c.cond == nil:
		return nil, errorf(codeCondMissingIf, "Missing 'if' parameter to $cond")
	case c.then == nil:
		return nil, errorf(codeCondMissingThen, "Missing 'then' parameter to $cond")
	case c.els == nil:
		return nil, errorf(codeCondMissingElse, "Missing 'else' parameter to $cond")
	}
	return c, nil
}

func (c condExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := c.cond.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if Truthy(v) {
		return c.then.Eval(ctx)
	}
	return c.els.Eval(ctx)
}

// ifNullExpr returns its first argument that is neither null, undefined nor
// missing, or else the value of its last argument.
type ifNullExpr []Expr

func parseIfNull(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseArgs(arg, s)
	if err != nil {
		return nil, err
	}
	if len(args) < 2 {
		return nil, errorf(codeIfNullArgs, "$ifNull needs at least two arguments, had: %d", len(args))
	}
	return ifNullExpr(args), nil
}

func (n ifNullExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for i, e := range n {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !IsNullish(v) || i == len(n)-1 {
			return v, nil
		}
	}
	return Missing, nil
}
