package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// String rewriting operators with named arguments: $trim $ltrim $rtrim
// ({input, chars}) and $replaceOne $replaceAll ({input, find,
// replacement}).

func init() {
	register("$trim", parseTrim("$trim", true, true))
	register("$ltrim", parseTrim("$ltrim", true, false))
	register("$rtrim", parseTrim("$rtrim", false, true))
	register("$replaceOne", parseReplace("$replaceOne", 1))
	register("$replaceAll", parseReplace("$replaceAll", -1))
}

const (
	codeTrimUnknownArg   = mongoerr.TrimUnknownArg
	codeTrimMissingInput = mongoerr.TrimMissingInput
	codeTrimNotObject    = mongoerr.TrimNotObject
	codeTrimInputType    = mongoerr.TrimInputType
	codeTrimCharsType    = mongoerr.TrimCharsType

	codeReplaceReplacementType = mongoerr.ReplaceReplacementType
	codeReplaceFindType        = mongoerr.ReplaceFindType
	codeReplaceInputType       = mongoerr.ReplaceInputType
	codeReplaceMissingRepl     = mongoerr.ReplaceMissingRepl
	codeReplaceMissingFind     = mongoerr.ReplaceMissingFind
	codeReplaceMissingInput    = mongoerr.ReplaceMissingInput
	codeReplaceUnknownArg      = mongoerr.ReplaceUnknownArg
	codeReplaceNotObject       = mongoerr.ReplaceNotObject
)

// trimWhitespace is what $trim removes without chars: MongoDB's list of
// Unicode whitespace and the null character.
const trimWhitespace = "\x00 \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"

type trimExpr struct {
	op          string
	input       Expr
	chars       Expr // nil: whitespace
	left, right bool
}

func parseTrim(op string, left, right bool) parser {
	spec := namedArgs{op: op, names: []string{"input", "chars"},
		notObject: codeTrimNotObject, notObjMsg: "%s only supports an object as an argument, found %s",
		unknown: codeTrimUnknownArg, unknownMsg: foundUnknownArg,
		required: []requiredArg{{"input", codeTrimMissingInput, "%s requires an 'input' field"}}}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := spec.parse(arg, s)
		if err != nil {
			return nil, err
		}
		return trimExpr{op: op, input: args["input"], chars: args["chars"], left: left, right: right}, nil
	}
}

func (t trimExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := t.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(in) {
		return Null, nil
	}
	s, ok := stringOf(in)
	if !ok {
		return Missing, errorf(codeTrimInputType, "%s requires its input to be a string, got %s (of type %s) instead.", t.op, in, TypeName(in))
	}
	cutset := trimWhitespace
	if t.chars != nil {
		c, err := t.chars.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if IsNullish(c) {
			return Null, nil
		}
		if cutset, ok = stringOf(c); !ok {
			return Missing, errorf(codeTrimCharsType, "%s requires 'chars' to be a string, got %s (of type %s) instead.", t.op, c, TypeName(c))
		}
	}
	if t.left {
		s = strings.TrimLeft(s, cutset)
	}
	if t.right {
		s = strings.TrimRight(s, cutset)
	}
	return String(s), nil
}

type replaceExpr struct {
	op                       string
	input, find, replacement Expr
	n                        int // 1 for $replaceOne, -1 for all
}

func parseReplace(op string, n int) parser {
	spec := namedArgs{op: op, names: []string{"input", "find", "replacement"},
		notObject: codeReplaceNotObject, notObjMsg: "%s requires an object as an argument, found: %s",
		unknown: codeReplaceUnknownArg, unknownMsg: foundUnknownArg,
		required: []requiredArg{
			{"input", codeReplaceMissingInput, "%s requires 'input' to be specified"},
			{"find", codeReplaceMissingFind, "%s requires 'find' to be specified"},
			{"replacement", codeReplaceMissingRepl, "%s requires 'replacement' to be specified"},
		}}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := spec.parse(arg, s)
		if err != nil {
			return nil, err
		}
		return replaceExpr{op: op, input: args["input"], find: args["find"], replacement: args["replacement"], n: n}, nil
	}
}

// Eval checks all three types before looking for null: a number given as
// find is an error even when input is null.
func (r replaceExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals, err := evalArgs(ctx, []Expr{r.input, r.find, r.replacement})
	if err != nil {
		return Missing, err
	}
	codes := [3]mongoerr.Code{codeReplaceInputType, codeReplaceFindType, codeReplaceReplacementType}
	names := [3]string{"input", "find", "replacement"}
	var strs [3]string
	null := false
	for i, v := range vals {
		if IsNullish(v) {
			null = true
			continue
		}
		s, ok := stringOf(v)
		if !ok {
			return Missing, errorf(codes[i], "%s requires that '%s' be a string, found: %s", r.op, names[i], v)
		}
		strs[i] = s
	}
	if null {
		return Null, nil
	}
	return String(strings.Replace(strs[0], strs[1], strs[2], r.n)), nil
}
