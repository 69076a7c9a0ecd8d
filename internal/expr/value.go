package expr

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Missing is the value of a field that does not exist: the zero Value. It is
// not null, and an expression that yields it makes $project leave the field
// out.
var Missing = bsoncore.Value{}

// IsMissing reports whether v is Missing.
func IsMissing(v bsoncore.Value) bool { return v.Type == 0 }

// IsNullish reports whether v is missing, null or undefined: the values that
// arithmetic turns into null and $ifNull replaces.
func IsNullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// Truthy is aggregation's conversion to boolean: false, null, undefined,
// missing and numeric zeros (of any type, -0 included) are false; everything
// else, NaN and empty strings and arrays included, is true.
func Truthy(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return len(v.Data) > 0 && v.Data[0] == 1
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return !isZeroNumber(v)
	}
	return true
}

func isZeroNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return ok && i == 0
	case bsoncore.TypeInt64:
		i, ok := v.Int64OK()
		return ok && i == 0
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		return ok && f == 0
	case bsoncore.TypeDecimal128:
		d, ok := decimalOf(v)
		return ok && d.isZero()
	}
	return false
}

// Compare orders two values as aggregation does: bsonx.Compare, with missing
// sorting below every other value but equal to MinKey (both have the lowest
// canonical rank).
func Compare(a, b bsoncore.Value) int {
	if a.Type == 0 || b.Type == 0 {
		return compareRanks(a, b)
	}
	return bsonx.Compare(a, b)
}

// Collator compares strings by a collation and makes their collation keys
// (package collation's *Collator). A nil Collator is the simple collation;
// pass an untyped nil for it, never a typed nil pointer.
type Collator interface {
	Compare(a, b []byte) int
	AppendKey(dst, s []byte) []byte
}

// CompareWith is Compare under a collation: strings and symbols, inside
// documents and arrays too, compare by coll (bsonx.CompareWith); nil is
// Compare.
func CompareWith(a, b bsoncore.Value, coll Collator) int {
	if coll == nil {
		return Compare(a, b)
	}
	if a.Type == 0 || b.Type == 0 {
		return compareRanks(a, b)
	}
	return bsonx.CompareWith(a, b, coll)
}

// compareRanks orders values by canonical rank alone: enough when one of
// them is missing.
func compareRanks(a, b bsoncore.Value) int {
	ra, rb := rank(a), rank(b)
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	}
	return 0
}

func rank(v bsoncore.Value) int {
	if v.Type == 0 {
		return bsonx.CanonicalType(bsoncore.TypeMinKey)
	}
	return bsonx.CanonicalType(v.Type)
}

// Equal reports whether Compare(a, b) == 0.
func Equal(a, b bsoncore.Value) bool { return Compare(a, b) == 0 }

// EqualWith reports whether CompareWith(a, b, coll) == 0.
func EqualWith(a, b bsoncore.Value, coll Collator) bool { return CompareWith(a, b, coll) == 0 }

// Constructors for the values expressions build.

// Int32 makes an int32 value.
func Int32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

// Int64 makes an int64 value.
func Int64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

// Double makes a double value.
func Double(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// Bool makes a boolean value.
func Bool(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// Null is the null value.
var Null = bsoncore.Value{Type: bsoncore.TypeNull}

// String makes a string value.
func String(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// Date makes a UTC datetime value from milliseconds since the epoch.
func Date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

// Array makes an array of vals. A missing value becomes null, as in an
// aggregation array literal.
func Array(vals []bsoncore.Value) bsoncore.Value {
	idx, buf := bsoncore.AppendArrayStart(nil)
	var key [20]byte
	for i, v := range vals {
		if v.Type == 0 {
			v = Null
		}
		buf = bsoncore.AppendValueElement(buf, string(strconv.AppendInt(key[:0], int64(i), 10)), v)
	}
	buf, _ = bsoncore.AppendArrayEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: buf}
}

// IntOrLong makes an int32 if i fits one, else an int64 (MongoDB's
// Value::createIntOrLong).
func IntOrLong(i int64) bsoncore.Value {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return Int32(int32(i))
	}
	return Int64(i)
}

// TypeName is MongoDB's name for v's type, as error messages and $type
// print it ("missing" for Missing).
func TypeName(v bsoncore.Value) string { return bsonx.TypeName(v.Type) }

// isNumber reports whether v is int32, int64, double or decimal128.
func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// elems iterates over the elements of a framed document or array without
// allocating; a malformed element ends the iteration.
type elems struct{ rest []byte }

func elemsOf(v bsoncore.Value) elems {
	d := v.Data
	if len(d) < 5 {
		return elems{}
	}
	n := int(int32(binary.LittleEndian.Uint32(d)))
	if n < 5 || n > len(d) {
		return elems{}
	}
	return elems{rest: d[4 : n-1]}
}

func (it *elems) next() (key []byte, v bsoncore.Value, ok bool) {
	e, rest, ok := bsoncore.ReadElement(it.rest)
	if !ok {
		it.rest = nil
		return nil, Missing, false
	}
	it.rest = rest
	k := bytes.IndexByte(e[1:], 0)
	return e[1 : 1+k], bsoncore.Value{Type: bsoncore.Type(e[0]), Data: e[2+k:]}, true
}

// field returns the value of the first field named name in document doc.
func field(doc bsoncore.Value, name string) bsoncore.Value {
	it := elemsOf(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return Missing
		}
		if string(k) == name {
			return v
		}
	}
}

// arrayValues returns the values of an array value.
func arrayValues(v bsoncore.Value) []bsoncore.Value {
	var out []bsoncore.Value
	it := elemsOf(v)
	for {
		_, e, ok := it.next()
		if !ok {
			return out
		}
		out = append(out, e)
	}
}
