package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $let binds variables for one expression: {vars: {name: expr, …}, in:
// expr}. The vars are evaluated in the outer scope (they cannot see each
// other), then bound while "in" runs, shadowing outer variables of the
// same name.

func init() { register("$let", parseLet) }

const (
	codeLetNotObject    = mongoerr.LetNotObject
	codeLetUnknownArg   = mongoerr.LetUnknownArg
	codeLetMissingVars  = mongoerr.LetMissingVars
	codeLetMissingIn    = mongoerr.LetMissingIn
	codeVarNameEmpty    = mongoerr.VariableNameEmpty
	codeVarNameFirst    = mongoerr.VariableNameFirstChar // a user variable must start with a lower-case letter
	codeVarNameChar     = mongoerr.VarNameChar
	codeLetVarsNotObjct = mongoerr.ExpectedObject // "invalid parameter: expected an object (vars)"
)

type letExpr struct {
	names []string
	vals  []Expr
	in    Expr
}

func parseLet(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeLetNotObject, "$let only supports an object as its argument")
	}
	var vars, in bsoncore.Value
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		switch string(k) {
		case "vars":
			vars = v
		case "in":
			in = v
		default:
			return nil, errorf(codeLetUnknownArg, "Unrecognized parameter to $let: %s", k)
		}
	}
	switch {
	case vars.Type == 0:
		return nil, errorf(codeLetMissingVars, "Missing 'vars' parameter to $let")
	case in.Type == 0:
		return nil, errorf(codeLetMissingIn, "Missing 'in' parameter to $let")
	case vars.Type != bsoncore.TypeEmbeddedDocument:
		return nil, errorf(codeLetVarsNotObjct, "invalid parameter: expected an object (vars)")
	}
	var l letExpr
	it = elemsOf(vars)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		name := string(k)
		if err := checkUserVarName(name); err != nil {
			return nil, err
		}
		e, err := ParseIn(v, s)
		if err != nil {
			return nil, err
		}
		l.names, l.vals = append(l.names, name), append(l.vals, e)
	}
	body, err := ParseIn(in, NewScope(s, l.names...))
	if err != nil {
		return nil, err
	}
	l.in = body
	return l, nil
}

// checkUserVarName applies MongoDB's rules for a variable a user binds
// (validateNameForUserWrite); CURRENT is the one system variable a user
// may rebind.
func checkUserVarName(name string) error {
	if name == "CURRENT" {
		return nil
	}
	if name == "" {
		return errorf(codeVarNameEmpty, "empty variable names are not allowed")
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 0x80) {
		return errorf(codeVarNameFirst, "'%s' starts with an invalid character for a user variable name", name)
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80) {
			return errorf(codeVarNameChar, "'%s' contains an invalid character for a variable name: '%c'", name, c)
		}
	}
	return nil
}

func (l letExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals, err := evalArgs(ctx, l.vals)
	if err != nil {
		return Missing, err
	}
	for i, name := range l.names {
		defer ctx.bindVar(name, vals[i])()
	}
	return l.in.Eval(ctx)
}
