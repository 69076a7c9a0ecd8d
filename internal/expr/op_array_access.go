package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Array access operators: $arrayElemAt $first $last $slice $concatArrays.
// A null or missing array gives null; any other non-array is an error.

func init() {
	register("$arrayElemAt", parseFixed("$arrayElemAt", 2, evalArrayElemAt))
	register("$first", parseFixed("$first", 1, evalFirstLast(false)))
	register("$last", parseFixed("$last", 1, evalFirstLast(true)))
	register("$slice", parseSlice)
	register("$concatArrays", parseVariadic("$concatArrays", evalConcatArrays))
}

const (
	codeArrayArgType       = mongoerr.ArrayArgType // "$arrayElemAt's first argument must be an array"
	codeArrayIndexType     = mongoerr.ArrayIndexType
	codeArrayIndexInt      = mongoerr.ArrayIndexInt
	codeSliceArrayType     = mongoerr.SliceArrayType
	codeSliceSecondType    = mongoerr.SliceSecondType
	codeSliceSecondInt     = mongoerr.SliceSecondInt
	codeSliceThirdType     = mongoerr.SliceThirdType
	codeSliceThirdInt      = mongoerr.SliceThirdInt
	codeSliceThirdPositive = mongoerr.SliceThirdPositive
	codeRangeArgCount      = mongoerr.RangeArgCount
	codeConcatArraysType   = mongoerr.ConcatArraysType
)

func evalArrayElemAt(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	arr, idx := vals[0], vals[1]
	if IsNullish(arr) || IsNullish(idx) {
		return Null, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeArrayArgType, "$arrayElemAt's first argument must be an array, but is %s", TypeName(arr))
	}
	i, numeric, integral := int32Arg(idx)
	switch {
	case !numeric:
		return Missing, errorf(codeArrayIndexType, "$arrayElemAt's second argument must be a numeric value, but is %s", TypeName(idx))
	case !integral:
		return Missing, errorf(codeArrayIndexInt, "$arrayElemAt's second argument must be representable as a 32-bit integer: %s", idx)
	}
	elems := arrayValues(arr)
	n := int(i)
	if n < 0 {
		n += len(elems)
	}
	if n < 0 || n >= len(elems) {
		return Missing, nil
	}
	return elems[n], nil
}

func evalFirstLast(last bool) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
		arr := vals[0]
		if IsNullish(arr) {
			return Null, nil
		}
		if arr.Type != bsoncore.TypeArray {
			return Missing, errorf(codeArrayArgType, "%s's argument must be an array, but is %s", op, TypeName(arr))
		}
		elems := arrayValues(arr)
		switch {
		case len(elems) == 0:
			return Missing, nil
		case last:
			return elems[len(elems)-1], nil
		}
		return elems[0], nil
	}
}

func parseSlice(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseArgs(arg, s)
	if err != nil {
		return nil, err
	}
	if len(args) < 2 || len(args) > 3 {
		return nil, errorf(codeRangeArgCount, "Expression $slice takes at least 2 arguments, and at most 3, but %d were passed in.", len(args))
	}
	return naryExpr{op: "$slice", args: args, eval: evalSlice}, nil
}

func evalSlice(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	for _, v := range vals {
		if IsNullish(v) {
			return Null, nil
		}
	}
	arr := vals[0]
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeSliceArrayType, "First argument to $slice must be an array, but is of type: %s", TypeName(arr))
	}
	second, numeric, integral := int32Arg(vals[1])
	switch {
	case !numeric:
		return Missing, errorf(codeSliceSecondType, "Second argument to $slice must be a numeric value, but is of type: %s", TypeName(vals[1]))
	case !integral:
		return Missing, errorf(codeSliceSecondInt, "Second argument to $slice can't be represented as a 32-bit integer: %s", vals[1])
	}
	elems := arrayValues(arr)
	n := len(elems)
	var start, end int
	if len(vals) == 2 {
		if second >= 0 {
			start, end = 0, min(int(second), n)
		} else {
			start, end = max(n+int(second), 0), n
		}
	} else {
		count, numeric, integral := int32Arg(vals[2])
		switch {
		case !numeric:
			return Missing, errorf(codeSliceThirdType, "Third argument to $slice must be numeric, but is of type: %s", TypeName(vals[2]))
		case !integral:
			return Missing, errorf(codeSliceThirdInt, "Third argument to $slice can't be represented as a 32-bit integer: %s", vals[2])
		case count <= 0:
			return Missing, errorf(codeSliceThirdPositive, "Third argument to $slice must be positive: %s", vals[2])
		}
		start = int(second)
		if start < 0 {
			start = max(n+start, 0)
		}
		start = min(start, n)
		end = min(start+int(count), n)
	}
	return Array(elems[start:end]), nil
}

func evalConcatArrays(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var out []bsoncore.Value
	for _, v := range vals {
		if IsNullish(v) {
			return Null, nil
		}
		if v.Type != bsoncore.TypeArray {
			return Missing, errorf(codeConcatArraysType, "$concatArrays only supports arrays, not %s", TypeName(v))
		}
		out = append(out, arrayValues(v)...)
	}
	return Array(out), nil
}
