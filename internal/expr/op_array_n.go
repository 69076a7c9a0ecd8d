package expr

import (
	"slices"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The array forms of the "n" accumulators: {$firstN|$lastN|$maxN|$minN:
// {n, input}}. $firstN and $lastN keep positions (nulls included); $maxN
// and $minN drop null and missing elements and return the n largest
// (descending) or smallest (ascending). input must be an array, even
// null is an error.

func init() {
	register("$firstN", parseArrayN("$firstN", firstNCodes, takeFirst))
	register("$lastN", parseArrayN("$lastN", firstNCodes, takeLast))
	register("$maxN", parseArrayN("$maxN", maxNCodes, takeExtremes(-1)))
	register("$minN", parseArrayN("$minN", maxNCodes, takeExtremes(1)))
}

// arrayNCodes are an operator's parse-time codes: not an object, unknown
// argument, missing n, missing input. ($firstN and $lastN are expressions
// of their own in MongoDB; $maxN and $minN reuse the accumulators'
// parser, with its codes.)
type arrayNCodes [4]mongoerr.Code

var (
	firstNCodes = arrayNCodes{5788001, 5788002, 5788003, 5788004}
	maxNCodes   = arrayNCodes{5787900, 5787901, 5787906, 5787907}
)

const (
	codeNInputNotArray = mongoerr.NInputNotArray
	codeNNotNumeric    = mongoerr.NNotNumeric
	codeNNotIntegral   = mongoerr.NNotIntegral
	codeNNotPositive   = mongoerr.NNotPositive
)

type arrayNExpr struct {
	op       string
	n, input Expr
	take     func(elems []bsoncore.Value, n int, coll Collator) []bsoncore.Value
}

func parseArrayN(op string, codes arrayNCodes, take func([]bsoncore.Value, int, Collator) []bsoncore.Value) parser {
	spec := namedArgs{op: op, names: []string{"n", "input"},
		notObject: codes[0], notObjMsg: "%s: specification must be an object; found %s",
		unknown: codes[1], unknownMsg: "Unknown argument to %s '%s'"}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := spec.parse(arg, s)
		if err != nil {
			return nil, err
		}
		switch {
		case args["n"] == nil:
			return nil, errorf(codes[2], "Missing value for 'n'")
		case args["input"] == nil:
			return nil, errorf(codes[3], "Missing value for 'input'")
		}
		return arrayNExpr{op: op, n: args["n"], input: args["input"], take: take}, nil
	}
}

func (e arrayNExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	nv, err := e.n.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	n, err := ValidN(nv)
	if err != nil {
		return Missing, err
	}
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if in.Type != bsoncore.TypeArray {
		return Missing, errorf(codeNInputNotArray, "Input must be an array")
	}
	return Array(e.take(arrayValues(in), int(min(n, 1<<31)), ctx.coll)), nil
}

// ValidN checks the 'n' of the n-operators and n-accumulators ($firstN
// … $bottomN): an integral number above zero, with MongoDB's codes
// (5787902 not a number, 5787903 not integral, 5787908 not positive).
func ValidN(v bsoncore.Value) (int64, error) {
	if _, ok := numberOf(v); !ok {
		return 0, errorf(codeNNotNumeric, "Value for 'n' must be of integral type, but found %s", v)
	}
	n, ok := integral64(v)
	if !ok {
		return 0, errorf(codeNNotIntegral, "Value for 'n' must be of integral type, but found %s", v)
	}
	if n <= 0 {
		return 0, errorf(codeNNotPositive, "'n' must be greater than 0, found %d", n)
	}
	return n, nil
}

func takeFirst(elems []bsoncore.Value, n int, _ Collator) []bsoncore.Value {
	return elems[:min(n, len(elems))]
}

func takeLast(elems []bsoncore.Value, n int, _ Collator) []bsoncore.Value {
	return elems[max(len(elems)-n, 0):]
}

// takeExtremes sorts the non-null elements (ascending for sign 1, strings
// by coll) and keeps n.
func takeExtremes(sign int) func([]bsoncore.Value, int, Collator) []bsoncore.Value {
	return func(elems []bsoncore.Value, n int, coll Collator) []bsoncore.Value {
		kept := slices.DeleteFunc(elems, IsNullish)
		slices.SortStableFunc(kept, func(a, b bsoncore.Value) int { return sign * CompareWith(a, b, coll) })
		return kept[:min(n, len(kept))]
	}
}
