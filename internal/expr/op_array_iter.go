package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Array iteration operators: $filter and $map. Each binds a variable (as,
// default "this") to every element in turn; the binding shadows an outer
// variable of the same name and is undone afterwards.

func init() {
	register("$filter", parseFilter)
	register("$map", parseMap)
}

const (
	codeFilterNotObject   = mongoerr.FilterNotObject
	codeFilterUnknownArg  = mongoerr.FilterUnknownArg
	codeFilterMissingIn   = mongoerr.FilterMissingIn
	codeFilterMissingCond = mongoerr.FilterMissingCond
	codeFilterInputType   = mongoerr.FilterInputType
	codeFilterLimitType   = mongoerr.FilterLimitType  // "$filter: limit must be represented as a 32-bit integral value"
	codeFilterLimitRange  = mongoerr.FilterLimitRange // "$filter: limit must be greater than 0"
	codeMapNotObject      = mongoerr.MapNotObject
	codeMapUnknownArg     = mongoerr.MapUnknownArg
	codeMapMissingInput   = mongoerr.MapMissingInput
	codeMapMissingIn      = mongoerr.MapMissingIn
	codeMapInputType      = mongoerr.MapInputType
	codeBadVarNameIter    = mongoerr.VariableNameEmpty // "empty variable names are not allowed"
)

// iterSpec is the parsed {input, as, …} of $filter and $map.
type iterSpec struct {
	input Expr
	as    string
	body  Expr // cond for $filter, in for $map
	limit Expr // $filter only, may be nil
}

func parseIter(op string, arg bsoncore.Value, s *Scope, bodyKey string, codes [5]mongoerr.Code) (iterSpec, error) {
	var spec iterSpec
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return spec, errorf(codesAt(codes, 0), "%s only supports an object as its argument", op)
	}
	var input, body, limit bsoncore.Value
	spec.as = "this"
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		switch key := string(k); {
		case key == "input":
			input = v
		case key == "as":
			name, ok := stringOf(v)
			if !ok || name == "" {
				return spec, errorf(codeBadVarNameIter, "empty variable names are not allowed")
			}
			if err := checkUserVarName(name); err != nil {
				return spec, err
			}
			spec.as = name
		case key == bodyKey:
			body = v
		case key == "limit" && op == "$filter":
			limit = v
		default:
			return spec, errorf(codesAt(codes, 1), "Unrecognized parameter to %s: %s", op, key)
		}
	}
	if input.Type == 0 {
		return spec, errorf(codesAt(codes, 2), "Missing 'input' parameter to %s", op)
	}
	if body.Type == 0 {
		return spec, errorf(codesAt(codes, 3), "Missing '%s' parameter to %s", bodyKey, op)
	}
	var err error
	if spec.input, err = ParseIn(input, s); err != nil {
		return spec, err
	}
	if spec.body, err = ParseIn(body, NewScope(s, spec.as)); err != nil {
		return spec, err
	}
	if limit.Type != 0 {
		if spec.limit, err = ParseIn(limit, s); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

func codesAt(codes [5]mongoerr.Code, i int) mongoerr.Code { return codes[i] }

// each evaluates body for every element of the input with the element
// bound, calling f with the element and the body's value until f says
// stop. It returns false when the input is null or missing.
func (sp iterSpec) each(ctx *Context, op string, typeCode mongoerr.Code, f func(elem, v bsoncore.Value) (stop bool)) (bool, error) {
	in, err := sp.input.Eval(ctx)
	if err != nil {
		return false, err
	}
	if IsNullish(in) {
		return false, nil
	}
	if in.Type != bsoncore.TypeArray {
		return false, errorf(typeCode, "input to %s must be an array not %s", op, TypeName(in))
	}
	defer ctx.bindVar(sp.as, Missing)()
	it := elemsOf(in)
	for {
		_, e, ok := it.next()
		if !ok {
			return true, nil
		}
		if err := ctx.interrupted(); err != nil {
			return true, err
		}
		ctx.SetVar(sp.as, e)
		v, err := sp.body.Eval(ctx)
		if err != nil {
			return true, err
		}
		if f(e, v) {
			return true, nil
		}
	}
}

type filterExpr struct{ iterSpec }

func parseFilter(arg bsoncore.Value, s *Scope) (Expr, error) {
	sp, err := parseIter("$filter", arg, s, "cond",
		[5]mongoerr.Code{codeFilterNotObject, codeFilterUnknownArg, codeFilterMissingIn, codeFilterMissingCond, codeFilterInputType})
	if err != nil {
		return nil, err
	}
	return filterExpr{sp}, nil
}

func (e filterExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	limit := -1
	if e.limit != nil {
		l, err := e.limit.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if !IsNullish(l) {
			n, numeric, integral := int32Arg(l)
			if !numeric || !integral {
				return Missing, errorf(codeFilterLimitType, "$filter: limit must be represented as a 32-bit integral value: %s", l)
			}
			if n < 1 {
				return Missing, errorf(codeFilterLimitRange, "$filter: limit must be greater than 0: %d", n)
			}
			limit = int(n)
		}
	}
	var out []bsoncore.Value
	ok, err := e.each(ctx, "$filter", codeFilterInputType, func(elem, v bsoncore.Value) bool {
		if Truthy(v) {
			out = append(out, elem)
		}
		return limit > 0 && len(out) >= limit
	})
	if err != nil {
		return Missing, err
	}
	if !ok {
		return Null, nil
	}
	return Array(out), nil
}

type mapExpr struct{ iterSpec }

func parseMap(arg bsoncore.Value, s *Scope) (Expr, error) {
	sp, err := parseIter("$map", arg, s, "in",
		[5]mongoerr.Code{codeMapNotObject, codeMapUnknownArg, codeMapMissingInput, codeMapMissingIn, codeMapInputType})
	if err != nil {
		return nil, err
	}
	return mapExpr{sp}, nil
}

func (e mapExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	var out []bsoncore.Value
	ok, err := e.each(ctx, "$map", codeMapInputType, func(_, v bsoncore.Value) bool {
		out = append(out, v)
		return false
	})
	if err != nil {
		return Missing, err
	}
	if !ok {
		return Null, nil
	}
	return Array(out), nil
}
