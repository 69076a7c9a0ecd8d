package expr

import (
	"encoding/hex"
	"math"
	"math/big"
	"strconv"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $convert and the one-target shorthands $toDate $toObjectId $toDecimal
// (op_type.go has $toString $toInt $toLong $toDouble $toBool, which share
// convertTo). convertTo is MongoDB 7.0's conversion table: a pair it does
// not list, a string that does not parse and a number that does not fit
// all fail with ConversionFailure (241), which $convert's onError catches.

func init() {
	register("$convert", parseConvert)
	register("$toDate", parseConvertShorthand("$toDate", bsoncore.TypeDateTime))
	register("$toObjectId", parseConvertShorthand("$toObjectId", bsoncore.TypeObjectID))
	register("$toDecimal", parseConvertShorthand("$toDecimal", bsoncore.TypeDecimal128))
}

// MongoDB's codes for $convert.
const (
	codeConversionFailure  = mongoerr.ConversionFailure
	codeConvertUnknownType = mongoerr.BadValue        // BadValue: "to" names no type
	codeConvertArgCount    = mongoerr.ConvertArgCount // a shorthand given an array of other than one argument
)

// parseConvertShorthand parses a one-target converter ($toInt, …): one
// argument, or an array of one, whose null or missing value gives null.
// MongoDB reports another count with its own code, not 16020.
func parseConvertShorthand(op string, to bsoncore.Type) parser {
	eval := func(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
		if IsNullish(vals[0]) {
			return Null, nil
		}
		return convertTo(vals[0], to)
	}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseArgs(arg, s)
		if err != nil {
			return nil, err
		}
		if len(args) != 1 {
			return nil, errorf(codeConvertArgCount, "%s requires a single argument, got %d", op, len(args))
		}
		return naryExpr{op: op, args: args, eval: eval}, nil
	}
}

type convertExpr struct{ input, to, onError, onNull Expr }

func parseConvert(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeFailedToParse, "$convert expects an object of named arguments but found: %s", TypeName(arg))
	}
	args, err := convertArgs.parse(arg, s)
	if err != nil {
		return nil, err
	}
	return convertExpr{input: args["input"], to: args["to"], onError: args["onError"], onNull: args["onNull"]}, nil
}

// convertArgs is $convert's object (parseConvert reports a non-object with
// its type name).
var convertArgs = namedArgs{op: "$convert", names: []string{"input", "to", "onError", "onNull"},
	unknown: codeFailedToParse, unknownMsg: foundUnknownArg,
	required: []requiredArg{
		{"input", codeFailedToParse, "Missing 'input' parameter to %s"},
		{"to", codeFailedToParse, "Missing 'to' parameter to %s"},
	}}

func (e convertExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	to, err := e.to.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	var target bsoncore.Type
	if !IsNullish(to) {
		if target, err = convertTarget(to); err != nil {
			return Missing, err
		}
	}
	switch {
	case IsNullish(in):
		if e.onNull != nil {
			return e.onNull.Eval(ctx)
		}
		return Null, nil
	case IsNullish(to):
		return Null, nil
	}
	out, err := convertTo(in, target)
	if err != nil && e.onError != nil && mongoerr.CodeOf(err) == codeConversionFailure {
		return e.onError.Eval(ctx)
	}
	return out, err
}

// convertTypeNames maps $type's names back to types; "missing" is type 0,
// which no conversion produces.
var convertTypeNames = func() map[string]bsoncore.Type {
	m := map[string]bsoncore.Type{}
	for t := 1; t < 256; t++ {
		if n := bsonx.TypeName(bsoncore.Type(t)); n != "unknown" {
			m[n] = bsoncore.Type(t)
		}
	}
	m["missing"] = 0
	return m
}()

// convertTarget reads "to": a type name or a BSON type number.
func convertTarget(to bsoncore.Value) (bsoncore.Type, error) {
	if name, ok := stringOf(to); ok {
		t, known := convertTypeNames[name]
		if !known {
			return 0, errorf(codeConvertUnknownType, "Unknown type name: %s", name)
		}
		return t, nil
	}
	if isNumber(to) {
		n, integral := integral64(to)
		if !integral || n < math.MinInt32 || n > math.MaxInt32 {
			return 0, errorf(codeFailedToParse, "In $convert, numeric 'to' argument is not an integer")
		}
		t := bsoncore.Type(n)
		if n == -1 {
			t = bsoncore.TypeMinKey
		}
		if (n != -1 && (n < 0 || n > 255)) || (n != 0 && bsonx.TypeName(t) == "unknown") {
			return 0, errorf(codeFailedToParse, "In $convert, numeric value for 'to' does not correspond to a BSON type: %d", n)
		}
		return t, nil
	}
	return 0, errorf(codeFailedToParse, "$convert's 'to' argument must be a string or number, but is %s", TypeName(to))
}

func unsupportedConversion(v bsoncore.Value, to bsoncore.Type) error {
	return errorf(codeConversionFailure, "Unsupported conversion from %s to %s in $convert with no onError value", TypeName(v), bsonx.TypeName(to))
}

func convertOverflow(v bsoncore.Value) error {
	return errorf(codeConversionFailure, "Conversion would overflow target type in $convert with no onError value: %s", v)
}

func convertParseFailure(s, why string) error {
	return errorf(codeConversionFailure, "Failed to parse number '%s' in $convert with no onError value: %s", s, why)
}

// convertTo converts a non-null value to type to.
func convertTo(v bsoncore.Value, to bsoncore.Type) (bsoncore.Value, error) {
	switch to {
	case bsoncore.TypeBoolean:
		return Bool(Truthy(v)), nil
	case bsoncore.TypeString:
		if ms, ok := v.DateTimeOK(); ok {
			// Years outside 0-9999 fail as in $dateToString.
			s, err := dateFormat("%Y-%m-%dT%H:%M:%S.%LZ", ms, utcZone)
			if err != nil {
				return Missing, err
			}
			return String(s), nil
		}
		if s, ok := toStringValue(v); ok {
			return String(s), nil
		}
	case bsoncore.TypeDouble:
		return convertToDouble(v)
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return convertToInt(v, to)
	case bsoncore.TypeDecimal128:
		return convertToDecimal(v)
	case bsoncore.TypeDateTime:
		return convertToDate(v)
	case bsoncore.TypeObjectID:
		return convertToObjectID(v)
	}
	return Missing, unsupportedConversion(v, to)
}

func convertToDouble(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return Double(map[bool]float64{true: 1, false: 0}[b]), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, _ := numberOf(v)
		return Double(n.float()), nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeError(err) || !plainNumber(s) {
			return Missing, convertParseFailure(s, "Did not consume whole string.")
		}
		if isRangeError(err) {
			return Missing, convertOverflow(v)
		}
		return Double(f), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return Double(float64(ms)), nil
	}
	return Missing, unsupportedConversion(v, bsoncore.TypeDouble)
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// plainNumber rejects the spellings strconv accepts and MongoDB's parser
// does not: hexadecimal and digit separators.
func plainNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '_' || s[i] == 'x' || s[i] == 'X' {
			return false
		}
	}
	return s != ""
}

// convertToInt converts to int32 or int64: numbers truncate toward zero
// and must fit, booleans are 0 or 1, strings must hold a base-10 integer,
// and dates convert to long only (their milliseconds).
func convertToInt(v bsoncore.Value, to bsoncore.Type) (bsoncore.Value, error) {
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if to == bsoncore.TypeInt64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	mk := func(i int64) bsoncore.Value {
		if to == bsoncore.TypeInt32 {
			return Int32(int32(i))
		}
		return Int64(i)
	}
	switch v.Type {
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return mk(map[bool]int64{true: 1, false: 0}[b]), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := numberOf(v)
		if n.i < lo || n.i > hi {
			return Missing, convertOverflow(v)
		}
		return mk(n.i), nil
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Missing, errorf(codeConversionFailure, "Attempt to convert NaN or infinity value to integer type in $convert with no onError value: %s", v)
		}
		f = math.Trunc(f)
		if f < float64(lo) || f >= float64(hi)+1 {
			return Missing, convertOverflow(v)
		}
		return mk(int64(f)), nil
	case bsoncore.TypeDecimal128:
		d, _ := decimalOf(v)
		if d.special != 0 {
			return Missing, errorf(codeConversionFailure, "Attempt to convert NaN or infinity value to integer type in $convert with no onError value: %s", v)
		}
		i, ok := decimalToInt64(d.quantize(0, roundTrunc))
		if !ok || i < lo || i > hi {
			return Missing, convertOverflow(v)
		}
		return mk(i), nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		bits := 32
		if to == bsoncore.TypeInt64 {
			bits = 64
		}
		i, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			if isRangeError(err) {
				return Missing, convertOverflow(v)
			}
			return Missing, convertParseFailure(s, "Did not consume whole string.")
		}
		return mk(i), nil
	case bsoncore.TypeDateTime:
		if to == bsoncore.TypeInt64 {
			ms, _ := v.DateTimeOK()
			return Int64(ms), nil
		}
	}
	return Missing, unsupportedConversion(v, to)
}

// convertToDecimal: doubles keep 15 significant digits (2.5 becomes
// 2.50000000000000), as MongoDB's Decimal128(double) does.
func convertToDecimal(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return decimalFromInt(map[bool]int64{true: 1, false: 0}[b]).value(), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := numberOf(v)
		return decimalFromInt(n.i).value(), nil
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return decimalFromFloat(f).value(), nil
	case bsoncore.TypeDecimal128:
		return v, nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		d, err := bson.ParseDecimal128(s)
		if err != nil || !plainNumber(s) {
			return Missing, errorf(codeConversionFailure, "Failed to parse string to decimal in $convert with no onError value: %s", s)
		}
		h, l := d.GetBytes()
		return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}, nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return decimalFromInt(ms).value(), nil
	}
	return Missing, unsupportedConversion(v, bsoncore.TypeDecimal128)
}

// convertToDate: numbers (but not int) are milliseconds, truncated;
// strings parse as $dateFromString does without a format; ObjectIds and
// Timestamps give their time.
func convertToDate(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeObjectID:
		ms, _ := dateMillis(v)
		return Date(ms), nil
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return Date(i), nil
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Missing, errorf(codeConversionFailure, "Attempt to convert NaN or infinity value to Date in $convert with no onError value: %s", v)
		}
		f = math.Trunc(f)
		if f < math.MinInt64 || f >= math.MaxInt64 {
			return Missing, convertOverflow(v)
		}
		return Date(int64(f)), nil
	case bsoncore.TypeDecimal128:
		d, _ := decimalOf(v)
		if d.special != 0 {
			return Missing, errorf(codeConversionFailure, "Attempt to convert NaN or infinity value to Date in $convert with no onError value: %s", v)
		}
		i, ok := decimalToInt64(d.quantize(0, roundTrunc))
		if !ok {
			return Missing, convertOverflow(v)
		}
		return Date(i), nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		ms, err := dateParse(s, "", false, utcZone, false)
		if err != nil {
			return Missing, err
		}
		return Date(ms), nil
	}
	return Missing, unsupportedConversion(v, bsoncore.TypeDateTime)
}

func convertToObjectID(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeObjectID:
		return v, nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		if len(s) != 24 {
			return Missing, errorf(codeConversionFailure, "Failed to parse objectId '%s' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found %d", s, len(s))
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return Missing, errorf(codeConversionFailure, "Failed to parse objectId '%s' in $convert with no onError value: Invalid character found in hex string", s)
		}
		var oid bson.ObjectID
		copy(oid[:], b)
		return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}, nil
	}
	return Missing, unsupportedConversion(v, bsoncore.TypeObjectID)
}

// decimalToInt64 converts an integral decimal, reporting whether it fits.
func decimalToInt64(d decimal) (int64, bool) {
	if d.special != 0 {
		return 0, false
	}
	c := d.coef
	switch {
	case d.exp > 0:
		c = new(big.Int).Mul(c, pow10(d.exp))
	case d.exp < 0:
		c = new(big.Int).Quo(c, pow10(-d.exp))
	}
	if !c.IsInt64() {
		return 0, false
	}
	return c.Int64(), true
}
