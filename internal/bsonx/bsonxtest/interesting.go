package bsonxtest

import (
	"math"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Interesting returns hand-picked values at the edges of the order: one of
// each type, numbers at every type and encoding boundary in every numeric
// type, strings with NULs, documents differing in field order, type or
// name, deep nesting, and malformed values. Tests compare all pairs.
func Interesting() []bsoncore.Value {
	vs := []bsoncore.Value{
		MinKey, Undefined, Null, MaxKey,
		String(""), String("a"), String("a\x00"), String("a\x00\x00"), String("a\x00b"), String("a\x01"),
		String("ab"), String("b"), String("\xff"), String("\x00"), Symbol("a"), Symbol("a\x00"), Symbol(""),
		Code(""), Code("a"), Code("a\x00"),
		Doc(), Doc("a", Int32(1)), Doc("a", Double(1)), Doc("a", Int32(1), "b", Int32(2)),
		Doc("b", Int32(2), "a", Int32(1)), Doc("a", Int32(2)), Doc("b", Int32(1)), Doc("a", String("x")),
		Doc("", Null), Doc("a", Null), Doc("a", MinKey), Doc("a", Doc()), Doc("a", Array()),
		Doc("a", Bool(false)), Doc("a", Bool(true)), Doc("b", Bool(false)), Doc("ab", Int32(1)),
		Doc("a", Doc("b", Decimal("2.0"))), Doc("a", Doc("b", Int64(2))), Doc("a", Doc("b", Int32(3))),
		Array(), Array(Int32(1)), Array(Int32(1), Int32(2)), Array(Int32(2)), Array(Int32(1), String("a")),
		Array(Array(Int32(1))), Array(Null), Array(MinKey), Array(Doc()), Array(Double(1), Decimal("2")),
		Binary(0, ""), Binary(0, "\x00"), Binary(0x80, "a"), Binary(0, "ab"), Binary(0, "b"), Binary(1, "a"),
		Binary(4, "ab"), Binary(4, "ac"), Binary(2, "\x02\x00\x00\x00ab"), Binary(0, strings.Repeat("x", 200)),
		ObjectID(0), ObjectID(1), ObjectID(0xff), Bool(false), Bool(true),
		Date(math.MinInt64), Date(-1), Date(0), Date(1), Date(math.MaxInt64),
		Timestamp(0, 0), Timestamp(0, math.MaxUint32), Timestamp(1, 0), Timestamp(1<<31, 0), Timestamp(math.MaxUint32, math.MaxUint32),
		Regex("", ""), Regex("a", ""), Regex("a", "i"), Regex("a", "im"), Regex("a", "m"), Regex("ab", ""),
		DBPointer("", 0), DBPointer("b", 0), DBPointer("aa", 0), DBPointer("ab", 1), DBPointer("ab", 2), DBPointer("a\x00", 2),
		CodeWithScope("", Doc()), CodeWithScope("a", Doc("x", Int32(1))), CodeWithScope("a", Doc("x", Double(1))),
		CodeWithScope("a", Doc("x", Int32(2))), CodeWithScope("b", Doc()),
		Nested(bsonx.MaxDepth-1, Int32(1)), Nested(bsonx.MaxDepth-1, Doc("x", Int32(1))),
		Nested(bsonx.MaxDepth, Doc("x", Int32(1))), Nested(bsonx.MaxDepth, Null), Nested(bsonx.MaxDepth+5, Array()),
		Raw(0x10, 1, 2), Raw(0x14, 1, 2, 3, 4), Raw(0x00), Raw(0x08, 2), Raw(0x02, 2, 0, 0, 0, 'a', 'b'),
		Raw(0x03, 4, 0, 0, 0), Raw(0x03, 5, 0, 0, 0, 1), Raw(0x05, 0xff, 0xff, 0xff, 0xff, 0),
		RawDoc(0x10, 'a', 0, 1, 0, 0, 0, 0x10, 'b', 0, 1), RawDoc(0x10, 'a', 0, 1, 0, 0, 0, 0x33, 'b', 0), RawDoc(0x10, 'a', 'b'),
		bsoncore.Value{Type: bsoncore.TypeInt32, Data: []byte{1, 0, 0, 0, 9, 9}},
	}
	for _, i := range specialInt64s {
		for _, j := range []int64{i - 1, i, i + 1} {
			vs = append(vs, Int64(j), Double(float64(j)))
			if int64(int32(j)) == j {
				vs = append(vs, Int32(int32(j)))
			}
		}
	}
	for _, f := range specialFloats {
		vs = append(vs, Double(f), Double(-f), Double(math.Nextafter(f, math.Inf(1))), Double(math.Nextafter(f, math.Inf(-1))))
		if s, ok := exactDecimal(f); ok {
			vs = append(vs, Decimal(s))
		}
	}
	for _, s := range specialDecimals {
		vs = append(vs, Decimal(s))
	}
	vs = append(vs,
		DecimalBits(0x3040_0000_0000_0000|maxCoefficientHi, maxCoefficientLo+1), // non-canonical: zero
		DecimalBits(0x3040_0000_0000_0000|maxCoefficientHi, maxCoefficientLo),
		DecimalBits(0x6000_0000_0000_0000, 1), // "11" form: zero
		DecimalBits(0x7e00_0000_0000_0000, 0), // sNaN
		DecimalBits(0xfc00_0000_0000_0000, 7), // -NaN with payload
	)
	return vs
}

// The largest canonical decimal128 coefficient, 10^34-1, as two words.
const (
	maxCoefficientHi = 0x0001ed09bead87c0
	maxCoefficientLo = 0x378d8e63ffffffff
)
