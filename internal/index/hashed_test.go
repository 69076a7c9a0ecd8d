package index

import (
	"encoding/hex"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// hashVectors are MongoDB's own published hashes: the hard-coded checks of
// src/mongo/db/hasher_test.cpp ("hard-coded checks to ensure the hash
// function is consistent across platforms and server versions"), the
// $toHashedIndexKey unit tests (expression_to_hashed_index_key_test.cpp)
// and the hashed key generator's golden output
// (src/mongo/db/index/expected_output/key_generator_golden_test/hashed_keys.txt).
// hasher_test.cpp also claims that a Date and a Timestamp with the same 8
// bytes hash alike; that held while both had canonical rank 45 (MongoDB
// 2.4). Timestamps have had rank 47 since, and the modern vector for
// Timestamp(0, 0) below is the $toHashedIndexKey one.
var hashVectors = []struct {
	name string
	v    bsoncore.Value
	want int64
}{
	{"int32 42", i32v(42), -944302157085130861},
	{"double 42.123", f64v(42.123), -944302157085130861},
	{"int64 42", i64v(42), -944302157085130861},
	{"int32 0", i32v(0), 4854801880128277513},
	{"double 0.456", f64v(0.456), 4854801880128277513},
	{"int64 0", i64v(0), 4854801880128277513},
	{"double -0", f64v(math.Copysign(0, -1)), 4854801880128277513},
	{"quiet NaN", f64v(math.NaN()), 4854801880128277513},
	{"signaling NaN", f64v(math.Float64frombits(0x7ff4000000000000)), 4854801880128277513},
	{"int32 1", i32v(1), 5902408780260971510},
	{"double 1.987", f64v(1.987), 5902408780260971510},
	{"int64 1", i64v(1), 5902408780260971510},
	{"int32 -1", i32v(-1), 1140205862565771219},
	{"double -1.789", f64v(-1.789), 1140205862565771219},
	{"int64 -1", i64v(-1), 1140205862565771219},
	{"int32 min", i32v(math.MinInt32), 6165898260261354870},
	{"double int32 min", f64v(math.MinInt32), 6165898260261354870},
	{"int64 int32 min", i64v(math.MinInt32), 6165898260261354870},
	{"int32 max", i32v(math.MaxInt32), 1143184177162245883},
	{"double int32 max", f64v(math.MaxInt32), 1143184177162245883},
	{"int64 int32 max", i64v(math.MaxInt32), 1143184177162245883},
	{"double max", f64v(math.MaxFloat64), 921523596458303250},
	{"int64 max", i64v(math.MaxInt64), 921523596458303250},
	{"double lowest", f64v(-math.MaxFloat64), 4532067210535695462},
	{"int64 min", i64v(math.MinInt64), 4532067210535695462},
	{"double 2^63 (historic overflow to -2^63)", f64v(9223372036854775808.0), 4532067210535695462},
	{"int32 5", i32v(5), 4470791281878691347},
	{"double 5", f64v(5), 4470791281878691347},
	{"decimal 5", decv("5"), 4470791281878691347},
	{"int32 123", i32v(123), -6548868637522515075},
	{"int32 16", i32v(16), 2598032665634823220},
	{"minKey", bsoncore.Value{Type: bsoncore.TypeMinKey}, 7961148599568647290},
	{"maxKey", bsoncore.Value{Type: bsoncore.TypeMaxKey}, 5504842513779440750},
	{"undefined", bsoncore.Value{Type: bsoncore.TypeUndefined}, 40158834000849533},
	{"null", bsoncore.Value{Type: bsoncore.TypeNull}, 2338878944348059895},
	{"string abc", strv("abc"), 8478485326885698097},
	{"symbol abc", bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendString(nil, "abc")}, 8478485326885698097},
	{"empty string", strv(""), 2049396243249673340},
	{"empty symbol", bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendString(nil, "")}, 2049396243249673340},
	{"string hashThisStringLiteral", strv("hashThisStringLiteral"), -5776344739422278694},
	{"string test", strv("test"), -3120687751959783844},
	{"string value", strv("value"), 6628978540110585136},
	{"object {a: abc, b: 123L}", docv(bsoncore.NewDocumentBuilder().AppendString("a", "abc").AppendInt64("b", 123).Build()), 4771603801758380216},
	{"object {b: string}", docv(bsoncore.NewDocumentBuilder().AppendString("b", "string").Build()), -8313607634880231286},
	{"object {b: abc, c: def}", docv(bsoncore.NewDocumentBuilder().AppendString("b", "abc").AppendString("c", "def").Build()), -9172419457489471550},
	{"empty object", docv(bsoncore.NewDocumentBuilder().Build()), 7980500913326740417},
	{"array [bar, baz, qux]", arrv(bsoncore.NewArrayBuilder().AppendString("bar").AppendString("baz").AppendString("qux").Build()), -2938911267422831539},
	{"empty array", arrv(bsoncore.NewArrayBuilder().Build()), 8849948234993459283},
	{"binData 0", binv(0, []byte{0, 1, 2, 3, 4, 6}), 7252465090394235301},
	{"binData 128", binv(128, []byte{0, 1, 2, 3, 4, 6}), 5736670452907618262},
	{"binData 4 (UUID)", binv(4, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}), 6084661258071355978},
	{"ObjectId 0102…", oidv("010203040506070809101112"), -5588663249627035708},
	{"ObjectId zero", oidv("000000000000000000000000"), -4293118519463489418},
	{"ObjectId 47cc…", oidv("47cc67093475061e3d95369d"), 1576265281381834298},
	{"true", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}, 6405873908747105701},
	{"false", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{0}}, 6289544573401934092},
	{"date 0x5566778811223344", datev(0x5566778811223344), 4476222765095560467},
	{"date 0", datev(0), -1178696894582842035},
	{"timestamp 0", bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, 0, 0)}, -7867208682377458672},
	{"regex mongodb", bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, "mongodb", "")}, -7275792090268217043},
	{"regex .* i", bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, ".*", "i")}, 7095855029187981886},
	{"dbPointer c", dbpv("c", "010203040506070809101112"), 940175826736461384},
	{"dbPointer db.c", dbpv("db.c", "010203040506070809101112"), 2426768198104018194},
	{"code", bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, "func f() { return 1; }")}, 6861638109178014270},
	{"code with scope", bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, "func f() { return 1; }", bsoncore.NewDocumentBuilder().AppendBoolean("c", true).Build())}, 501342939894575968},
}

func TestHashVectors(t *testing.T) {
	for _, tc := range hashVectors {
		if got := Hash(tc.v); got != tc.want {
			t.Errorf("%s: Hash = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func i32v(x int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, x)}
}
func i64v(x int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, x)}
}
func f64v(x float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, x)}
}
func strv(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}
func docv(d bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}
func arrv(a bsoncore.Array) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: a}
}
func binv(sub byte, b []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, sub, b)}
}
func datev(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}
func oidv(h string) bsoncore.Value {
	b, err := hex.DecodeString(h)
	if err != nil {
		return bsoncore.Value{} // hashes as null: the vector fails
	}
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: b}
}
func dbpv(ns, h string) bsoncore.Value {
	var oid bson.ObjectID
	copy(oid[:], oidv(h).Data)
	return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: bsoncore.AppendDBPointer(nil, ns, oid)}
}
func decv(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return bsoncore.Value{} // hashes as null: the test fails
	}
	h, l := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

// TestHashNumberConversion checks safeNumberLongForHash's conversions, which
// MongoDB publishes as code and unit tests (bsonelement.h, bson_element_test.cpp)
// rather than as hash vectors: each value must hash as the int64 it converts to.
func TestHashNumberConversion(t *testing.T) {
	for _, tc := range []struct {
		v    bsoncore.Value
		want int64
	}{
		{decv("4.5"), 4}, // Decimal128::toLong rounds half to even
		{decv("5.5"), 6},
		{decv("-4.5"), -4},
		{decv("-5.5"), -6},
		{decv("2.7"), 3},
		{decv("-2.7"), -3},
		{decv("1E+3"), 1000},
		{decv("123456789012345678901234567890"), math.MaxInt64},
		{decv("-123456789012345678901234567890"), math.MinInt64},
		{decv("9223372036854775807.4"), math.MaxInt64},
		{decv("NaN"), 0},
		{decv("Infinity"), math.MaxInt64},
		{decv("-Infinity"), math.MinInt64},
		{decv("1E-50"), 0},
		{f64v(2.9), 2}, // doubles truncate
		{f64v(-2.9), -2},
		{f64v(math.Inf(1)), math.MaxInt64},
		{f64v(math.Inf(-1)), math.MinInt64},
		{f64v(math.Nextafter(9223372036854775808.0, 0)), 0x7ffffffffffffc00},
		{f64v(math.Nextafter(9223372036854775808.0, math.Inf(1))), math.MaxInt64},
		{f64v(-9223372036854775808.0), math.MinInt64},
	} {
		if got, want := Hash(tc.v), Hash(i64v(tc.want)); got != want {
			t.Errorf("Hash(%s) = %d, want Hash(int64 %d) = %d", tc.v, got, tc.want, want)
		}
	}
}
