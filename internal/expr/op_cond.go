package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Conditional operators: $cond, $ifNull and $switch.

func init() {
	register("$cond", parseCond)
	register("$ifNull", parseIfNull)
	register("$switch", parseSwitch)
}

const (
	codeSwitchNotObject     = mongoerr.SwitchNotObject
	codeSwitchBranchesType  = mongoerr.SwitchBranchesType
	codeSwitchBranchType    = mongoerr.SwitchBranchType
	codeSwitchBranchUnknown = mongoerr.SwitchBranchUnknown
	codeSwitchMissingCase   = mongoerr.SwitchMissingCase
	codeSwitchMissingThen   = mongoerr.SwitchMissingThen
	codeSwitchNoMatch       = mongoerr.BucketNoMatch
	codeSwitchUnknownArg    = mongoerr.SwitchUnknownArg
	codeSwitchNoBranches    = mongoerr.SwitchNoBranches
)

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
	args, err := condArgs.parse(arg, s)
	if err != nil {
		return nil, err
	}
	return condExpr{args["if"], args["then"], args["else"]}, nil
}

// condArgs is $cond's object form (parseCond has seen an object).
var condArgs = namedArgs{op: "$cond", names: []string{"if", "then", "else"},
	unknown: codeCondUnknownArg, unknownMsg: "Unrecognized parameter to %s: %s",
	required: []requiredArg{
		{"if", codeCondMissingIf, "Missing 'if' parameter to %s"},
		{"then", codeCondMissingThen, "Missing 'then' parameter to %s"},
		{"else", codeCondMissingElse, "Missing 'else' parameter to %s"},
	}}

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

// switchExpr evaluates its branches' cases in order and returns the "then"
// of the first truthy one, else the default; with no default and no
// match it fails (40066), but only when evaluated.
type switchExpr struct {
	cases, thens []Expr
	dflt         Expr // may be nil
}

func parseSwitch(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSwitchNotObject, "$switch requires an object as an argument, found: %s", TypeName(arg))
	}
	var sw switchExpr
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		switch string(k) {
		case "branches":
			if v.Type != bsoncore.TypeArray {
				return nil, errorf(codeSwitchBranchesType, "$switch expected an array for 'branches', found: %s", TypeName(v))
			}
			for _, b := range arrayValues(v) {
				c, t, err := parseSwitchBranch(b, s)
				if err != nil {
					return nil, err
				}
				sw.cases, sw.thens = append(sw.cases, c), append(sw.thens, t)
			}
		case "default":
			d, err := ParseIn(v, s)
			if err != nil {
				return nil, err
			}
			sw.dflt = d
		default:
			return nil, errorf(codeSwitchUnknownArg, "$switch found an unknown argument: %s", k)
		}
	}
	if len(sw.cases) == 0 {
		return nil, errorf(codeSwitchNoBranches, "$switch requires at least one branch")
	}
	return sw, nil
}

func parseSwitchBranch(b bsoncore.Value, s *Scope) (cs, then Expr, err error) {
	if b.Type != bsoncore.TypeEmbeddedDocument {
		return nil, nil, errorf(codeSwitchBranchType, "$switch expected each branch to be an object, found: %s", TypeName(b))
	}
	it := elemsOf(b)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		e, err := ParseIn(v, s)
		if err != nil {
			return nil, nil, err
		}
		switch string(k) {
		case "case":
			cs = e
		case "then":
			then = e
		default:
			return nil, nil, errorf(codeSwitchBranchUnknown, "$switch found an unknown argument to a branch: %s", k)
		}
	}
	switch {
	case cs == nil:
		return nil, nil, errorf(codeSwitchMissingCase, "$switch requires each branch have a 'case' expression")
	case then == nil:
		return nil, nil, errorf(codeSwitchMissingThen, "$switch requires each branch have a 'then' expression.")
	}
	return cs, then, nil
}

func (sw switchExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	for i, c := range sw.cases {
		v, err := c.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if Truthy(v) {
			return sw.thens[i].Eval(ctx)
		}
	}
	if sw.dflt == nil {
		return Missing, errorf(codeSwitchNoMatch, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return sw.dflt.Eval(ctx)
}
