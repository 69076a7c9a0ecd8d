package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Type operators: $type and the conversions $toString $toInt $toLong
// $toDouble $toBool. Conversions give null for null or missing, and
// ConversionFailure (241) for values they cannot convert.

func init() {
	register("$type", parseFixed("$type", 1, evalType))
	register("$toString", parseFixed("$toString", 1, evalToString))
	register("$toInt", parseFixed("$toInt", 1, evalToInt(32)))
	register("$toLong", parseFixed("$toLong", 1, evalToInt(64)))
	register("$toDouble", parseFixed("$toDouble", 1, evalToDouble))
	register("$toBool", parseFixed("$toBool", 1, evalToBool))
}

const codeConversionFailure = 241

func evalType(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	return String(TypeName(vals[0])), nil
}

func conversionError(v bsoncore.Value, to string) error {
	return errorf(codeConversionFailure, "Unsupported conversion from %s to %s in $convert with no onError value", TypeName(v), to)
}

func evalToString(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	v := vals[0]
	if IsNullish(v) {
		return Null, nil
	}
	s, ok := toStringValue(v)
	if !ok {
		return Missing, conversionError(v, "string")
	}
	return String(s), nil
}

func formatISODate(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// evalToInt converts to int32 (bits 32) or int64 (bits 64): numbers
// truncate toward zero and must fit, booleans are 0 or 1, strings must
// hold a base-10 integer, dates (to long only) are milliseconds.
func evalToInt(bits int) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	to := "int"
	if bits == 64 {
		to = "long"
	}
	lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
	if bits == 64 {
		lo, hi = -9223372036854775808.0, 9223372036854775807.0
	}
	mk := func(i int64) bsoncore.Value {
		if bits == 32 {
			return Int32(int32(i))
		}
		return Int64(i)
	}
	return func(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
		v := vals[0]
		if IsNullish(v) {
			return Null, nil
		}
		switch v.Type {
		case bsoncore.TypeBoolean:
			if b, _ := v.BooleanOK(); b {
				return mk(1), nil
			}
			return mk(0), nil
		case bsoncore.TypeInt32, bsoncore.TypeInt64:
			n, _ := numberOf(v)
			if float64(n.i) < lo || float64(n.i) > hi {
				return Missing, errorf(codeConversionFailure, "Conversion would overflow target type in $convert with no onError value: %s", v)
			}
			return mk(n.i), nil
		case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
			n, _ := numberOf(v)
			f := math.Trunc(n.float())
			if f != f || math.IsInf(f, 0) {
				return Missing, errorf(codeConversionFailure, "Attempt to convert NaN or infinity value to integer type in $convert with no onError value: %s", v)
			}
			if f < lo || f >= hi+1 {
				return Missing, errorf(codeConversionFailure, "Conversion would overflow target type in $convert with no onError value: %s", v)
			}
			return mk(int64(f)), nil
		case bsoncore.TypeString:
			s, _ := stringOf(v)
			i, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
			if err != nil || strings.TrimSpace(s) != s {
				return Missing, errorf(codeConversionFailure, "Failed to parse number '%s' in $convert with no onError value", s)
			}
			return mk(i), nil
		case bsoncore.TypeDateTime:
			if bits == 64 {
				ms, _ := v.DateTimeOK()
				return Int64(ms), nil
			}
		}
		return Missing, conversionError(v, to)
	}
}

func evalToDouble(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	v := vals[0]
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return Null, nil
	case bsoncore.TypeBoolean:
		if b, _ := v.BooleanOK(); b {
			return Double(1), nil
		}
		return Double(0), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, _ := numberOf(v)
		return Double(n.float()), nil
	case bsoncore.TypeString:
		s, _ := stringOf(v)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Missing, errorf(codeConversionFailure, "Failed to parse number '%s' in $convert with no onError value", s)
		}
		return Double(f), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return Double(float64(ms)), nil
	}
	return Missing, conversionError(v, "double")
}

// evalToBool: numbers are true unless zero, strings (even "") and every
// other type true, null and missing null.
func evalToBool(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	v := vals[0]
	if IsNullish(v) {
		return Null, nil
	}
	return Bool(Truthy(v)), nil
}
