package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Array building and searching operators: $reverseArray $sortArray $zip
// $range $indexOfArray $isArray.

func init() {
	register("$reverseArray", parseFixed("$reverseArray", 1, evalReverseArray))
	register("$sortArray", parseSortArray)
	register("$zip", parseZip)
	register("$range", parseRanged("$range", 2, 3, evalRange))
	register("$indexOfArray", collated(parseRanged("$indexOfArray", 2, 4, nil), evalIndexOfArray))
	register("$isArray", parseFixed("$isArray", 1, evalIsArray))
}

const (
	codeReverseArrayType    = mongoerr.ReverseArrayType
	codeSortArrayNotObject  = mongoerr.SortArrayNotObject
	codeSortArrayUnknownArg = mongoerr.SortArrayUnknownArg
	codeSortArrayMissingIn  = mongoerr.SortArrayMissingIn
	codeSortArrayMissingBy  = mongoerr.SortArrayMissingBy
	codeSortArrayInputType  = mongoerr.SortArrayInputType
	codeSortArraySortByType = mongoerr.SortArraySortByType
	codeSortArrayDirection  = mongoerr.SortArrayDirection
	codeSortKeyDirection    = mongoerr.SortBadDirection // a sortBy document's value is not 1 or -1
	codeZipNotObject        = mongoerr.ZipNotObject
	codeZipInputsType       = mongoerr.ZipInputsType
	codeZipDefaultsType     = mongoerr.ZipDefaultsType
	codeZipLongestType      = mongoerr.ZipLongestType
	codeZipUnknownArg       = mongoerr.ZipUnknownArg
	codeZipNoInputs         = mongoerr.ZipNoInputs
	codeZipDefaultsNoLong   = mongoerr.ZipDefaultsNoLong
	codeZipDefaultsLength   = mongoerr.ZipDefaultsLength
	codeZipInputNotArray    = mongoerr.ZipInputNotArray
	codeRangeStartType      = mongoerr.RangeStartType
	codeRangeStartInt       = mongoerr.RangeStartInt
	codeRangeEndType        = mongoerr.RangeEndType
	codeRangeEndInt         = mongoerr.RangeEndInt
	codeRangeStepType       = mongoerr.RangeStepType
	codeRangeStepInt        = mongoerr.RangeStepInt
	codeRangeStepZero       = mongoerr.RangeStepZero
	codeExceededMemory      = mongoerr.ExceededMemoryLimit // ExceededMemoryLimit
	codeIndexOfArrayType    = mongoerr.IndexOfArrayType
)

// maxRangeBytes is MongoDB's internalQueryMaxRangeBytes: how much memory a
// $range result may take.
const maxRangeBytes = 64 << 20

func evalReverseArray(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	arr := vals[0]
	if IsNullish(arr) {
		return Null, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeReverseArrayType, "The argument to $reverseArray must be an array, but was of type: %s", TypeName(arr))
	}
	elems := arrayValues(arr)
	slices.Reverse(elems)
	return Array(elems), nil
}

// sortKey is one field of a $sortArray sortBy document.
type sortKey struct {
	path []string
	desc bool
}

type sortArrayExpr struct {
	input Expr
	// whole is the direction for sortBy 1 or -1 (compare whole elements);
	// keys is used instead for a sortBy document.
	whole int
	keys  []sortKey
}

func parseSortArray(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSortArrayNotObject, "$sortArray requires an object as an argument, found: %s", TypeName(arg))
	}
	var e sortArrayExpr
	var sortBy bsoncore.Value
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		switch string(k) {
		case "input":
			in, err := ParseIn(v, s)
			if err != nil {
				return nil, err
			}
			e.input = in
		case "sortBy":
			sortBy = v
		default:
			return nil, errorf(codeSortArrayUnknownArg, "$sortArray found an unknown argument: %s", k)
		}
	}
	switch {
	case e.input == nil:
		return nil, errorf(codeSortArrayMissingIn, "$sortArray requires 'input' to be specified")
	case sortBy.Type == 0:
		return nil, errorf(codeSortArrayMissingBy, "$sortArray requires 'sortBy' to be specified")
	}
	if isNumber(sortBy) {
		dir, ok := sortDirection(sortBy)
		if !ok {
			return nil, errorf(codeSortArrayDirection, "The $sort element value must be either 1 or -1")
		}
		e.whole = dir
		return e, nil
	}
	if sortBy.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSortArraySortByType, "$sortArray requires sortBy to be either 1, -1, or a document, found: %s", TypeName(sortBy))
	}
	it = elemsOf(sortBy)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		dir, ok := sortDirection(v)
		if !ok {
			return nil, errorf(codeSortKeyDirection, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		e.keys = append(e.keys, sortKey{path: strings.Split(string(k), "."), desc: dir < 0})
	}
	if len(e.keys) == 0 {
		return nil, errorf(codeSortArraySortByType, "$sortArray requires sortBy to be either 1, -1, or a non-empty document")
	}
	return e, nil
}

// sortDirection reads 1 or -1 (of any numeric type).
func sortDirection(v bsoncore.Value) (int, bool) {
	n, ok := numberOf(v)
	if !ok {
		return 0, false
	}
	switch n.float() {
	case 1:
		return 1, true
	case -1:
		return -1, true
	}
	return 0, false
}

func (e sortArrayExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeArray {
		return Missing, errorf(codeSortArrayInputType, "The input argument to $sortArray must be an array, but was of type: %s", TypeName(in))
	}
	elems := arrayValues(in)
	if e.keys == nil {
		slices.SortStableFunc(elems, func(a, b bsoncore.Value) int { return e.whole * CompareWith(a, b, ctx.coll) })
		return Array(elems), nil
	}
	slices.SortStableFunc(elems, func(a, b bsoncore.Value) int {
		for _, k := range e.keys {
			c := CompareWith(sortKeyValue(a, k, ctx.coll), sortKeyValue(b, k, ctx.coll), ctx.coll)
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return Array(elems), nil
}

// sortKeyValue is the value an element sorts by for key k, as $sort picks
// it: an array at the path sorts by its smallest element ascending and its
// largest descending.
func sortKeyValue(elem bsoncore.Value, k sortKey, coll Collator) bsoncore.Value {
	if elem.Type != bsoncore.TypeEmbeddedDocument {
		return Missing
	}
	v := walkPath(elem, k.path)
	if v.Type != bsoncore.TypeArray {
		return v
	}
	vals := arrayValues(v)
	if len(vals) == 0 {
		return v
	}
	best := vals[0]
	for _, x := range vals[1:] {
		c := CompareWith(x, best, coll)
		if k.desc && c > 0 || !k.desc && c < 0 {
			best = x
		}
	}
	return best
}

type zipExpr struct {
	inputs   []Expr
	defaults []Expr
	longest  bool
}

func parseZip(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeZipNotObject, "$zip only supports an object as an argument, found %s", TypeName(arg))
	}
	var z zipExpr
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		var err error
		switch string(k) {
		case "inputs":
			if v.Type != bsoncore.TypeArray {
				return nil, errorf(codeZipInputsType, "inputs must be an array of expressions, found %s", TypeName(v))
			}
			z.inputs, err = parseArgs(v, s)
		case "defaults":
			if v.Type != bsoncore.TypeArray {
				return nil, errorf(codeZipDefaultsType, "defaults must be an array of expressions, found %s", TypeName(v))
			}
			z.defaults, err = parseArgs(v, s)
		case "useLongestLength":
			b, ok := v.BooleanOK()
			if !ok {
				return nil, errorf(codeZipLongestType, "useLongestLength must be a bool, found %s", TypeName(v))
			}
			z.longest = b
		default:
			return nil, errorf(codeZipUnknownArg, "$zip found an unknown argument: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case len(z.inputs) == 0:
		return nil, errorf(codeZipNoInputs, "$zip requires at least one input array")
	case len(z.defaults) > 0 && !z.longest:
		return nil, errorf(codeZipDefaultsNoLong, "cannot specify defaults unless useLongestLength is true")
	case len(z.defaults) > 0 && len(z.defaults) != len(z.inputs):
		return nil, errorf(codeZipDefaultsLength, "defaults and inputs must have the same length")
	}
	return z, nil
}

func (z zipExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	ins, err := evalArgs(ctx, z.inputs)
	if err != nil {
		return Missing, err
	}
	arrays := make([][]bsoncore.Value, len(ins))
	n := -1
	for i, in := range ins {
		if IsNullish(in) {
			return Null, nil
		}
		if in.Type != bsoncore.TypeArray {
			return Missing, errorf(codeZipInputNotArray, "$zip found a non-array expression in input: %s", in)
		}
		arrays[i] = arrayValues(in)
		switch l := len(arrays[i]); {
		case n < 0, z.longest && l > n, !z.longest && l < n:
			n = l
		}
	}
	defaults := make([]bsoncore.Value, len(ins))
	if len(z.defaults) > 0 {
		if defaults, err = evalArgs(ctx, z.defaults); err != nil {
			return Missing, err
		}
	}
	out := make([]bsoncore.Value, n)
	row := make([]bsoncore.Value, len(arrays))
	for i := range n {
		for j, a := range arrays {
			if i < len(a) {
				row[j] = a[i]
			} else {
				row[j] = defaults[j]
			}
		}
		out[i] = Array(row)
	}
	return Array(out), nil
}

func evalRange(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	start, numeric, integral := int32Arg(vals[0])
	switch {
	case !numeric:
		return Missing, errorf(codeRangeStartType, "$range requires a numeric starting value, found value of type: %s", TypeName(vals[0]))
	case !integral:
		return Missing, errorf(codeRangeStartInt, "$range requires a starting value that can be represented as a 32-bit integer, found value: %s", vals[0])
	}
	end, numeric, integral := int32Arg(vals[1])
	switch {
	case !numeric:
		return Missing, errorf(codeRangeEndType, "$range requires a numeric ending value, found value of type: %s", TypeName(vals[1]))
	case !integral:
		return Missing, errorf(codeRangeEndInt, "$range requires an ending value that can be represented as a 32-bit integer, found value: %s", vals[1])
	}
	step := int32(1)
	if len(vals) > 2 {
		step, numeric, integral = int32Arg(vals[2])
		switch {
		case !numeric:
			return Missing, errorf(codeRangeStepType, "$range requires a numeric step value, found value of type:%s", TypeName(vals[2]))
		case !integral:
			return Missing, errorf(codeRangeStepInt, "$range requires a step value that can be represented as a 32-bit integer, found value: %s", vals[2])
		case step == 0:
			return Missing, errorf(codeRangeStepZero, "$range requires a non-zero step value")
		}
	}
	count := int64(0)
	if s, e, st := int64(start), int64(end), int64(step); st > 0 && e > s {
		count = (e - s + st - 1) / st
	} else if st < 0 && e < s {
		count = (s - e - st - 1) / -st
	}
	// Each element costs about a Value in MongoDB (16 bytes); refuse what
	// would pass the memory limit instead of building it.
	if count*16 > maxRangeBytes {
		return Missing, errorf(codeExceededMemory, "$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", count*16, maxRangeBytes)
	}
	out := make([]bsoncore.Value, count)
	v := int64(start)
	for i := range out {
		out[i] = Int32(int32(v))
		v += int64(step)
	}
	return Array(out), nil
}

func evalIndexOfArray(coll Collator, op string, vals []bsoncore.Value) (bsoncore.Value, error) {
	arr := vals[0]
	if IsNullish(arr) {
		return Null, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeIndexOfArrayType, "$indexOfArray requires an array as a first argument, found: %s", TypeName(arr))
	}
	elems := arrayValues(arr)
	start, end := 0, len(elems)
	var err error
	if len(vals) > 2 {
		if start, err = indexArg(op, "starting index", vals[2]); err != nil {
			return Missing, err
		}
	}
	if len(vals) > 3 {
		if end, err = indexArg(op, "ending index", vals[3]); err != nil {
			return Missing, err
		}
		end = min(end, len(elems))
	}
	for i := start; i < end; i++ {
		if EqualWith(elems[i], vals[1], coll) {
			return Int32(int32(i)), nil
		}
	}
	return Int32(-1), nil
}

func evalIsArray(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	return Bool(vals[0].Type == bsoncore.TypeArray), nil
}
