package bsonxtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var literalErrors []error

// LiteralError reports the literals that constructors could not parse.
func LiteralError() error { return errors.Join(literalErrors...) }

// Value constructors that keep test tables short.

// Int32 is an int32 value.
func Int32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

// Int64 is an int64 value.
func Int64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

// Double is a double value.
func Double(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// Decimal parses a decimal128 literal. A typo yields null and is reported
// by LiteralError, which table tests check.
func Decimal(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		literalErrors = append(literalErrors, fmt.Errorf("bad decimal literal %q: %w", s, err))
		return Null
	}
	hi, lo := d.GetBytes()
	return DecimalBits(hi, lo)
}

// DecimalBits is the decimal128 with the given BID words, canonical or not.
func DecimalBits(hi, lo uint64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

// String is a string value.
func String(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// Symbol is a (deprecated) symbol value.
func Symbol(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendString(nil, s)}
}

// Code is a JavaScript code value.
func Code(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendString(nil, s)}
}

// Binary is a binData value of the given subtype.
func Binary(sub byte, b string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, sub, []byte(b))}
}

// ObjectID is a fixed ObjectId whose last byte is last.
func ObjectID(last byte) bsoncore.Value {
	o := [12]byte{0x65, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, last}
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: o[:]}
}

// Bool is a boolean value.
func Bool(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// Date is a UTC datetime, in milliseconds since the epoch.
func Date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

// Timestamp is a timestamp of seconds t and increment i.
func Timestamp(t, i uint32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

// Regex is a regular expression value.
func Regex(pattern, options string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, pattern, options)}
}

// DBPointer is a (deprecated) DBPointer to namespace ns and ObjectID(last).
func DBPointer(ns string, last byte) bsoncore.Value {
	o := ObjectID(last)
	return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: append(bsoncore.AppendString(nil, ns), o.Data...)}
}

// CodeWithScope is code c with the scope document scope.
func CodeWithScope(c string, scope bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, c, scope.Data)}
}

var (
	// MinKey, MaxKey, Null and Undefined are the values of those types.
	MinKey    = bsoncore.Value{Type: bsoncore.TypeMinKey}
	MaxKey    = bsoncore.Value{Type: bsoncore.TypeMaxKey}
	Null      = bsoncore.Value{Type: bsoncore.TypeNull}
	Undefined = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// Doc builds a document from alternating field names and values.
func Doc(kv ...any) bsoncore.Value {
	b := bsoncore.NewDocumentBuilder()
	for i := 0; i < len(kv); i += 2 {
		b.AppendValue(kv[i].(string), kv[i+1].(bsoncore.Value))
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.Build()}
}

// Array is an array of vs.
func Array(vs ...bsoncore.Value) bsoncore.Value {
	b := bsoncore.NewArrayBuilder()
	for _, v := range vs {
		b.AppendValue(v)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b.Build()}
}

// Nested wraps v in depth documents {a: {a: … v}}.
func Nested(depth int, v bsoncore.Value) bsoncore.Value {
	for range depth {
		v = Doc("a", v)
	}
	return v
}

// Raw makes a value from a type byte and arbitrary bytes, for malformed input.
func Raw(t byte, data ...byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(t), Data: data}
}

// RawDoc frames arbitrary element bytes as a document.
func RawDoc(elems ...byte) bsoncore.Value {
	d := binary.LittleEndian.AppendUint32(nil, uint32(len(elems)+5))
	d = append(append(d, elems...), 0)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// Show renders v for failure messages, malformed values included.
func Show(v bsoncore.Value) string {
	if v.Type == bsoncore.TypeDecimal128 && len(v.Data) == 16 {
		return "decimal(" + bson.NewDecimal128(binary.LittleEndian.Uint64(v.Data[8:]), binary.LittleEndian.Uint64(v.Data)).String() + ")"
	}
	if v.Type == bsoncore.TypeDouble && len(v.Data) == 8 {
		return "double(" + strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v.Data)), 'g', -1, 64) + ")"
	}
	if _, _, ok := bsoncore.ReadValue(v.Data, v.Type); !ok {
		return fmt.Sprintf("Raw(%#x, % x)", byte(v.Type), v.Data)
	}
	return v.String()
}
