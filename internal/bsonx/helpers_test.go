package bsonx_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Value constructors that keep test tables short.

func i32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func i64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func dbl(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// dec parses a decimal128 literal; it panics on a typo, which only a test
// table can contain.
func dec(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(fmt.Sprintf("bad decimal literal %q: %v", s, err))
	}
	hi, lo := d.GetBytes()
	return decBits(hi, lo)
}

func decBits(hi, lo uint64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

func str(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func sym(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendString(nil, s)}
}

func code(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendString(nil, s)}
}

func bin(sub byte, b string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, sub, []byte(b))}
}

func oid(last byte) bsoncore.Value {
	o := [12]byte{0x65, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, last}
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: o[:]}
}

func boolean(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

func date(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

func ts(t, i uint32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

func regex(pattern, options string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, pattern, options)}
}

func dbptr(ns string, last byte) bsoncore.Value {
	o := oid(last)
	return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: append(bsoncore.AppendString(nil, ns), o.Data...)}
}

func cws(c string, scope bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, c, scope.Data)}
}

var (
	minKey    = bsoncore.Value{Type: bsoncore.TypeMinKey}
	maxKey    = bsoncore.Value{Type: bsoncore.TypeMaxKey}
	null      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefined = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// doc builds a document from alternating field names and values.
func doc(kv ...any) bsoncore.Value {
	b := bsoncore.NewDocumentBuilder()
	for i := 0; i < len(kv); i += 2 {
		b.AppendValue(kv[i].(string), kv[i+1].(bsoncore.Value))
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.Build()}
}

func arr(vs ...bsoncore.Value) bsoncore.Value {
	b := bsoncore.NewArrayBuilder()
	for _, v := range vs {
		b.AppendValue(v)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b.Build()}
}

// nested wraps v in depth documents {a: {a: … v}}.
func nested(depth int, v bsoncore.Value) bsoncore.Value {
	for range depth {
		v = doc("a", v)
	}
	return v
}

// raw makes a value from a type byte and arbitrary bytes, for malformed input.
func raw(t byte, data ...byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(t), Data: data}
}

// rawDoc frames arbitrary element bytes as a document.
func rawDoc(elems ...byte) bsoncore.Value {
	d := binary.LittleEndian.AppendUint32(nil, uint32(len(elems)+5))
	d = append(append(d, elems...), 0)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

func show(v bsoncore.Value) string {
	if v.Type == bsoncore.TypeDecimal128 && len(v.Data) == 16 {
		return "decimal(" + bson.NewDecimal128(binary.LittleEndian.Uint64(v.Data[8:]), binary.LittleEndian.Uint64(v.Data)).String() + ")"
	}
	if v.Type == bsoncore.TypeDouble && len(v.Data) == 8 {
		return "double(" + strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v.Data)), 'g', -1, 64) + ")"
	}
	if _, _, ok := bsoncore.ReadValue(v.Data, v.Type); !ok {
		return fmt.Sprintf("raw(%#x, % x)", byte(v.Type), v.Data)
	}
	return v.String()
}
