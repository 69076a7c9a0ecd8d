package bsonx

import (
	"errors"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// AsFloat64 returns a numeric value (int32, int64, double, decimal128) as
// the nearest float64; ok is false for other types. A decimal128 beyond the
// double range becomes ±Inf or ±0, as a conversion to double does; NaN and
// the infinities map to themselves.
func AsFloat64(v bsoncore.Value) (f float64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return float64(i), ok
	case bsoncore.TypeInt64:
		i, ok := v.Int64OK()
		return float64(i), ok
	case bsoncore.TypeDouble:
		return v.DoubleOK()
	case bsoncore.TypeDecimal128:
		h, l, ok := v.Decimal128OK()
		if !ok {
			return 0, false
		}
		// Decimal128's string form ("1.5E+3", "Infinity", "NaN") is what
		// ParseFloat reads, correctly rounded; out of range it returns ±Inf
		// or ±0 with ErrRange, which is the conversion we want.
		f, err := strconv.ParseFloat(bson.NewDecimal128(h, l).String(), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// AsInt64 returns a numeric value that holds an integer (an int32, an
// int64, or a double or decimal128 with no fraction) as an int64; ok is
// false for other values.
func AsInt64(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, ok := AsFloat64(v)
		if !ok || f != float64(int64(f)) {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}
