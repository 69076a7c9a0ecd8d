package expr

import (
	"encoding/hex"
	"github.com/cairndb/cairn/internal/mongoerr"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// String operators: $concat $toLower $toUpper $substrCP $strLenCP $split.
// Strings are UTF-8; the "CP" operators count code points.

func init() {
	register("$concat", parseVariadic("$concat", evalConcat))
	register("$toLower", parseFixed("$toLower", 1, evalCase(strings.ToLower)))
	register("$toUpper", parseFixed("$toUpper", 1, evalCase(strings.ToUpper)))
	register("$strLenCP", parseFixed("$strLenCP", 1, evalStrLenCP))
	register("$substrCP", parseFixed("$substrCP", 3, evalSubstrCP))
	register("$split", parseSplit)
}

// MongoDB's codes for the string operators.
const (
	codeConcatType         = mongoerr.ConcatType
	codeCoerceToString     = mongoerr.CoerceToString
	codeStrLenCPType       = mongoerr.StrLenCPType
	codeSubstrStartType    = mongoerr.SubstrStartType
	codeSubstrStartInt     = mongoerr.SubstrStartInt
	codeSubstrLengthType   = mongoerr.SubstrLengthType
	codeSubstrLengthInt    = mongoerr.SubstrLengthInt
	codeSubstrLengthNeg    = mongoerr.SubstrLengthNeg
	codeSubstrStartNeg     = mongoerr.SubstrStartNeg
	codeSplitStringType    = mongoerr.SplitStringType
	codeSplitDelimiterType = mongoerr.SplitDelimiterType
	codeSplitEmptyDelim    = mongoerr.SplitEmptyDelim
)

// parseFixed parses exactly n arguments and evaluates them all before
// calling eval.
func parseFixed(op string, n int, eval func(string, []bsoncore.Value) (bsoncore.Value, error)) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseFixedArgs(op, n, arg, s)
		if err != nil {
			return nil, err
		}
		return naryExpr{op: op, args: args, eval: eval}, nil
	}
}

func stringOf(v bsoncore.Value) (string, bool) {
	if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeSymbol {
		return "", false
	}
	s, _, ok := bsoncore.ReadString(v.Data)
	return s, ok
}

// $concat: null or missing anywhere gives null; non-strings are an error.
func evalConcat(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var b strings.Builder
	for _, v := range vals {
		if IsNullish(v) {
			return Null, nil
		}
		s, ok := stringOf(v)
		if !ok {
			return Missing, errorf(codeConcatType, "$concat only supports strings, not %s", TypeName(v))
		}
		b.WriteString(s)
	}
	return String(b.String()), nil
}

// coerceToString is MongoDB's Value::coerceToString: null and missing are
// "", numbers, dates and timestamps print, and other types are an error.
func coerceToString(op string, v bsoncore.Value) (string, error) {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return "", nil
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		s, _, _ := bsoncore.ReadString(v.Data)
		return s, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128,
		bsoncore.TypeDateTime:
		s, ok := toStringValue(v)
		if ok {
			return s, nil
		}
	case bsoncore.TypeTimestamp:
		t, i, _ := v.TimestampOK()
		return "Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")", nil
	}
	return "", errorf(codeCoerceToString, "can't convert from BSON type %s to String", TypeName(v))
}

func evalCase(f func(string) string) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
		s, err := coerceToString(op, vals[0])
		if err != nil {
			return Missing, err
		}
		// MongoDB changes the case of ASCII letters only.
		return String(asciiMap(s, f)), nil
	}
}

func asciiMap(s string, f func(string) string) string {
	b := []byte(s)
	for i, c := range b {
		if c < utf8.RuneSelf {
			b[i] = f(string(c))[0]
		}
	}
	return string(b)
}

func evalStrLenCP(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s, ok := stringOf(vals[0])
	if !ok {
		return Missing, errorf(codeStrLenCPType, "$strLenCP requires a string argument, found: %s", TypeName(vals[0]))
	}
	return Int32(int32(utf8.RuneCountInString(s))), nil
}

// int32Arg reads an integral numeric argument that fits an int32.
func int32Arg(v bsoncore.Value) (n int32, numeric, integral bool) {
	num, ok := numberOf(v)
	if !ok {
		return 0, false, false
	}
	f := num.float()
	if num.t == bsoncore.TypeInt32 || num.t == bsoncore.TypeInt64 {
		if num.i < -1<<31 || num.i > 1<<31-1 {
			return 0, true, false
		}
		return int32(num.i), true, true
	}
	if f != f || f < -1<<31 || f > 1<<31-1 || f != float64(int64(f)) {
		return 0, true, false
	}
	return int32(f), true, true
}

func evalSubstrCP(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString(op, vals[0])
	if err != nil {
		return Missing, err
	}
	start, numeric, integral := int32Arg(vals[1])
	switch {
	case !numeric:
		return Missing, errorf(codeSubstrStartType, "$substrCP: starting index must be a numeric type (is BSON type %s)", TypeName(vals[1]))
	case !integral:
		return Missing, errorf(codeSubstrStartInt, "$substrCP: starting index cannot be represented as a 32-bit integral value: %s", vals[1])
	}
	length, numeric, integral := int32Arg(vals[2])
	switch {
	case !numeric:
		return Missing, errorf(codeSubstrLengthType, "$substrCP: length must be a numeric type (is BSON type %s)", TypeName(vals[2]))
	case !integral:
		return Missing, errorf(codeSubstrLengthInt, "$substrCP: length cannot be represented as a 32-bit integral value: %s", vals[2])
	case length < 0:
		return Missing, errorf(codeSubstrLengthNeg, "$substrCP: length must be a nonnegative integer.")
	case start < 0:
		return Missing, errorf(codeSubstrStartNeg, "$substrCP: the starting index must be nonnegative integer.")
	}
	runes := []rune(s)
	if int(start) >= len(runes) {
		return String(""), nil
	}
	end := min(int(start)+int(length), len(runes))
	return String(string(runes[start:end])), nil
}

// splitExpr is $split: its loop over the parts checks the operation's end
// (a 10 MiB string split on one letter has a million parts).
type splitExpr struct{ args []Expr }

func parseSplit(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseFixedArgs("$split", 2, arg, s)
	if err != nil {
		return nil, err
	}
	return splitExpr{args}, nil
}

func (e splitExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals, err := evalArgs(ctx, e.args)
	if err != nil {
		return Missing, err
	}
	if IsNullish(vals[0]) {
		return Null, nil
	}
	s, ok := stringOf(vals[0])
	if !ok {
		return Missing, errorf(codeSplitStringType, "$split requires an expression that evaluates to a string as a first argument, found: %s", TypeName(vals[0]))
	}
	if IsNullish(vals[1]) {
		return Null, nil
	}
	sep, ok := stringOf(vals[1])
	if !ok {
		return Missing, errorf(codeSplitDelimiterType, "$split requires an expression that evaluates to a string as a second argument, found: %s", TypeName(vals[1]))
	}
	if sep == "" {
		return Missing, errorf(codeSplitEmptyDelim, "$split requires a non-empty separator")
	}
	var out []bsoncore.Value
	for i := 0; ; i++ {
		if i%1024 == 1023 {
			if err := ctx.interrupted(); err != nil {
				return Missing, err
			}
		}
		at := strings.Index(s, sep)
		if at < 0 {
			out = append(out, String(s))
			return Array(out), nil
		}
		out = append(out, String(s[:at]))
		s = s[at+len(sep):]
	}
}

// toStringValue is $toString's conversion of the types it accepts.
func toStringValue(v bsoncore.Value) (string, bool) {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return stringOf(v)
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := numberOf(v)
		return strconv.FormatInt(n.i, 10), true
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return formatDouble(f), true
	case bsoncore.TypeDecimal128:
		h, l, ok := v.Decimal128OK()
		return bson.NewDecimal128(h, l).String(), ok
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return strconv.FormatBool(b), true
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return formatISODate(ms), true
	case bsoncore.TypeObjectID:
		oid, ok := v.ObjectIDOK()
		return hex.EncodeToString(oid[:]), ok
	}
	return "", false
}

// formatDouble prints a double as MongoDB does for common values: the
// shortest representation that round-trips ("2.5", "1", "1e+21").
func formatDouble(f float64) string {
	switch {
	case f != f:
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
