package bsonx_test

import (
	"math"
	"testing"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// typeOrder lists one value of each canonical type rank, in MongoDB's order.
var typeOrder = []bsoncore.Value{
	minKey, undefined, null, i32(0), str(""), doc(), arr(), bin(0, ""), oid(0), boolean(false),
	date(0), ts(0, 0), regex("", ""), dbptr("", 0), code(""), cws("", doc()), maxKey,
}

func TestTypeOrder(t *testing.T) {
	for i, a := range typeOrder {
		for j, b := range typeOrder {
			want := cmpInt(i, j)
			if got := bsonx.Compare(a, b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", show(a), show(b), got, want)
			}
		}
	}
}

func TestCanonicalType(t *testing.T) {
	for _, tc := range []struct {
		t    bsoncore.Type
		want int
	}{
		{bsoncore.TypeMinKey, -1}, {bsoncore.TypeUndefined, 0}, {bsoncore.TypeNull, 5},
		{bsoncore.TypeInt32, 10}, {bsoncore.TypeInt64, 10}, {bsoncore.TypeDouble, 10}, {bsoncore.TypeDecimal128, 10},
		{bsoncore.TypeString, 15}, {bsoncore.TypeSymbol, 15}, {bsoncore.TypeEmbeddedDocument, 20},
		{bsoncore.TypeArray, 25}, {bsoncore.TypeBinary, 30}, {bsoncore.TypeObjectID, 35},
		{bsoncore.TypeBoolean, 40}, {bsoncore.TypeDateTime, 45}, {bsoncore.TypeTimestamp, 47},
		{bsoncore.TypeRegex, 50}, {bsoncore.TypeDBPointer, 55}, {bsoncore.TypeJavaScript, 60},
		{bsoncore.TypeCodeWithScope, 65}, {bsoncore.TypeMaxKey, 127},
		{0x00, 5}, {0x14, 5}, {0x80, 5}, // not types: ranked as null, as Compare treats them
	} {
		if got := bsonx.CanonicalType(tc.t); got != tc.want {
			t.Errorf("CanonicalType(%#x) = %d, want %d", byte(tc.t), got, tc.want)
		}
	}
}

// compareCases: a, b and the sign of Compare(a, b). Every case is also
// checked reversed.
var compareCases = []struct {
	name string
	a, b bsoncore.Value
	want int
}{
	// Numbers across types: exact value decides.
	{"int32 1 = int64 1", i32(1), i64(1), 0},
	{"int32 1 = double 1", i32(1), dbl(1), 0},
	{"int64 1 = decimal 1.0", i64(1), dec("1.0"), 0},
	{"double 1 = decimal 100E-2", dbl(1), dec("100E-2"), 0},
	{"int32 -1 < double -0.5", i32(-1), dbl(-0.5), -1},
	{"int32 max < int64 max+1", i32(math.MaxInt32), i64(math.MaxInt32 + 1), -1},
	{"int64 2^53 = double 2^53", i64(1 << 53), dbl(1 << 53), 0},
	{"int64 2^53+1 > double 2^53", i64(1<<53 + 1), dbl(1 << 53), 1},
	{"int64 2^53+1 < double 2^53+2", i64(1<<53 + 1), dbl(1<<53 + 2), -1},
	{"int64 -2^53-1 < double -2^53", i64(-(1 << 53) - 1), dbl(-(1 << 53)), -1},
	{"int64 max < double 2^63", i64(math.MaxInt64), dbl(0x1p63), -1},
	{"int64 min = double -2^63", i64(math.MinInt64), dbl(-0x1p63), 0},
	{"int64 min > double below -2^63", i64(math.MinInt64), dbl(math.Nextafter(-0x1p63, math.Inf(-1))), 1},
	{"int64 max-1 > double below 2^63", i64(math.MaxInt64 - 1), dbl(math.Nextafter(0x1p63, 0)), 1},
	{"int64 3 > double 2.5", i64(3), dbl(2.5), 1},
	{"int64 big > double fraction", i64(1<<60 + 1), dbl(1.5), 1},
	{"int64 max < +Inf", i64(math.MaxInt64), dbl(math.Inf(1)), -1},
	{"int64 min > -Inf", i64(math.MinInt64), dbl(math.Inf(-1)), 1},
	{"int64 min > NaN", i64(math.MinInt64), dbl(math.NaN()), 1},

	// NaN, zeros, infinities.
	{"NaN = NaN", dbl(math.NaN()), dbl(math.NaN()), 0},
	{"NaN payloads equal", dbl(math.NaN()), dbl(math.Float64frombits(0xfff0000000000001)), 0},
	{"NaN < -Inf", dbl(math.NaN()), dbl(math.Inf(-1)), -1},
	{"NaN < int32 min", dbl(math.NaN()), i32(math.MinInt32), -1},
	{"decimal NaN = double NaN", dec("NaN"), dbl(math.NaN()), 0},
	{"decimal -NaN = NaN", dec("-NaN"), dbl(math.NaN()), 0},
	{"decimal NaN < decimal -Inf", dec("NaN"), dec("-Infinity"), -1},
	{"decimal NaN < int32 0", dec("NaN"), i32(0), -1},
	{"-0 = 0", dbl(math.Copysign(0, -1)), dbl(0), 0},
	{"-0 = int32 0", dbl(math.Copysign(0, -1)), i32(0), 0},
	{"decimal -0 = int64 0", dec("-0"), i64(0), 0},
	{"decimal 0E+100 = 0", dec("0E+100"), dbl(0), 0},
	{"decimal -0E-6176 = -0", dec("-0E-6176"), dbl(math.Copysign(0, -1)), 0},
	{"+Inf > max double", dbl(math.Inf(1)), dbl(math.MaxFloat64), 1},
	{"decimal Inf = double Inf", dec("Infinity"), dbl(math.Inf(1)), 0},
	{"decimal -Inf = double -Inf", dec("-Infinity"), dbl(math.Inf(-1)), 0},
	{"decimal max < +Inf", dec("9.999999999999999999999999999999999E+6144"), dbl(math.Inf(1)), -1},
	{"decimal max > max double", dec("9.999999999999999999999999999999999E+6144"), dbl(math.MaxFloat64), 1},
	{"decimal -max > -Inf", dec("-9.999999999999999999999999999999999E+6144"), dbl(math.Inf(-1)), 1},

	// Decimals against doubles: exact, no rounding of either side.
	{"decimal 0.1 < double 0.1", dec("0.1"), dbl(0.1), -1},
	{"decimal 0.1 (34 digits) < double 0.1", dec("0.1000000000000000055511151231257827"), dbl(0.1), -1},
	{"decimal above double 0.1", dec("0.1000000000000000055511151231257828"), dbl(0.1), 1},
	{"decimal 0.5 = double 0.5", dec("0.5"), dbl(0.5), 0},
	{"decimal -0.5 = double -0.5", dec("-0.50"), dbl(-0.5), 0},
	{"decimal 1E+23 > double 1e23", dec("1E+23"), dbl(1e23), 1}, // 1e23 is 99999999999999991611392
	{"decimal = double 1e23 exactly", dec("99999999999999991611392"), dbl(1e23), 0},
	{"decimal 2^63 = double 2^63", dec("9223372036854775808"), dbl(0x1p63), 0},
	{"decimal 1E-400 > 0", dec("1E-400"), dbl(0), 1},
	{"decimal 1E-400 < smallest double", dec("1E-400"), dbl(math.SmallestNonzeroFloat64), -1},
	{"decimal -1E-400 > -smallest double", dec("-1E-400"), dbl(-math.SmallestNonzeroFloat64), 1},
	{"decimal 1E+400 > max double", dec("1E+400"), dbl(math.MaxFloat64), 1},
	// The smallest double is 4.9406564584124654417656879286822137236…E-324.
	{"decimal just below smallest double", dec("4.940656458412465441765687928682213E-324"), dbl(math.SmallestNonzeroFloat64), -1},
	{"decimal just above smallest double", dec("4.940656458412465441765687928682214E-324"), dbl(math.SmallestNonzeroFloat64), 1},
	{"decimal 1/3 vs double 1/3", dec("0.3333333333333333333333333333333333"), dbl(1.0 / 3), 1},
	{"decimal 1.5 = double 1.5", dec("1.5"), dbl(1.5), 0},
	{"decimal vs double far apart", dec("1E+10"), dbl(3), 1},

	// Decimals against integers and decimals.
	{"decimal 2^63 > int64 max", dec("9223372036854775808"), i64(math.MaxInt64), 1},
	{"decimal -2^63 = int64 min", dec("-9223372036854775808"), i64(math.MinInt64), 0},
	{"decimal just below int64 max", dec("9223372036854775806.5"), i64(math.MaxInt64), -1},
	{"decimal 7.0 = int32 7", dec("7.000"), i32(7), 0},
	{"decimal 7.01 > int32 7", dec("7.01"), i32(7), 1},
	{"decimal -7.01 < int32 -7", dec("-7.01"), i32(-7), -1},
	{"decimal 1.0 = 1.00", dec("1.0"), dec("1.00"), 0},
	{"decimal 10 = 1E+1", dec("10"), dec("1E+1"), 0},
	{"decimal 0.99 < 1", dec("0.99"), dec("1"), -1},
	{"decimal 1E+6144 > 9.99E+6143", dec("1E+6144"), dec("9.999999999999999999999999999999999E+6143"), 1},
	{"decimal -1 < -0.1", dec("-1"), dec("-0.1"), -1},
	{"decimal 123 > 1.23E+2 - tiny", dec("123"), dec("122.9999999999999999999999999999999"), 1},
	// Non-canonical coefficients (>= 10^34) are zero.
	{"decimal non-canonical = 0", decBits(0x3040_0000_0000_0000|0x1ed09bead87c0, 0x378d8e6400000000), i32(0), 0},
	{"decimal 11-form = 0", decBits(0x6000_0000_0000_0000, 1), dbl(0), 0},
	{"decimal max canonical > 0", decBits(0x3040_0000_0000_0000|0x1ed09bead87c0, 0x378d8e63ffffffff), i32(0), 1},

	// Strings: bytewise, embedded NULs count, symbols are strings.
	{"empty < a", str(""), str("a"), -1},
	{"a < ab", str("a"), str("ab"), -1},
	{"a < a\\0", str("a"), str("a\x00"), -1},
	{"a\\0 < a\\1", str("a\x00"), str("a\x01"), -1},
	{"a\\0b < a\\0c", str("a\x00b"), str("a\x00c"), -1},
	{"a\\0 < a\\0\\0", str("a\x00"), str("a\x00\x00"), -1},
	{"a\\0z < ab", str("a\x00z"), str("ab"), -1},
	{"bytes unsigned", str("\xff"), str("a"), 1},
	{"B < a (simple collation)", str("B"), str("a"), -1},
	{"symbol = string", sym("abc"), str("abc"), 0},
	{"symbol b > string a", sym("b"), str("a"), 1},
	{"code > string", code("a"), str("b"), 1},
	{"code a < code b", code("a"), code("b"), -1},
	{"code with NUL", code("a\x00"), code("a"), 1},

	// Documents: element by element (rank, name, value), prefix first.
	{"{} < {a:1}", doc(), doc("a", i32(1)), -1},
	{"{a:1} < {a:1,b:1}", doc("a", i32(1)), doc("a", i32(1), "b", i32(1)), -1},
	{"field order matters", doc("a", i32(1), "b", i32(2)), doc("b", i32(2), "a", i32(1)), -1},
	{"{a:2} < {b:1}: name first", doc("a", i32(2)), doc("b", i32(1)), -1},
	{"{b:1} < {a:'x'}: rank before name", doc("b", i32(1)), doc("a", str("x")), -1},
	{"{a:1} = {a:1.0}", doc("a", i32(1)), doc("a", dbl(1)), 0},
	{"{a:1} = {a:1L, …} no", doc("a", i32(1)), doc("a", i64(1), "b", null), -1},
	{"{a:null} > {a:minKey}", doc("a", null), doc("a", minKey), 1},
	{"{'':1} < {a:1}", doc("", i32(1)), doc("a", i32(1)), -1},
	{"{a:1} < {ab:1}", doc("a", i32(1)), doc("ab", i32(1)), -1},
	{"nested equal", doc("a", doc("b", dec("2.0"))), doc("a", doc("b", i64(2))), 0},
	{"nested differ", doc("a", doc("b", i32(2))), doc("a", doc("b", i32(3))), -1},
	{"nested prefix", doc("a", doc("b", i32(2))), doc("a", doc("b", i32(2), "c", i32(0))), -1},
	{"doc < array", doc("a", i32(9)), arr(), -1},

	// Arrays: element by element.
	{"[] < [1]", arr(), arr(i32(1)), -1},
	{"[1] < [1,2]", arr(i32(1)), arr(i32(1), i32(2)), -1},
	{"[1,2] < [2]", arr(i32(1), i32(2)), arr(i32(2)), -1},
	{"[1,'a'] > [1,2]", arr(i32(1), str("a")), arr(i32(1), i32(2)), 1},
	{"[[1]] > [1]", arr(arr(i32(1))), arr(i32(1)), 1},
	{"[1, 2.0] = [1L, 2]", arr(i32(1), dbl(2)), arr(i64(1), dec("2")), 0},
	{"[null] > []", arr(null), arr(), 1},

	// binData: length, then subtype, then bytes.
	{"bin shorter first", bin(0x80, "a"), bin(0, "ab"), -1},
	{"bin subtype second", bin(0, "b"), bin(1, "a"), -1},
	{"bin bytes last", bin(4, "ab"), bin(4, "ac"), -1},
	{"bin equal", bin(4, "ab"), bin(4, "ab"), 0},
	{"bin empty", bin(0, ""), bin(0, "\x00"), -1},

	// The rest.
	{"oid bytes", oid(1), oid(2), -1},
	{"false < true", boolean(false), boolean(true), -1},
	{"date signed", date(-1), date(0), -1},
	{"date min < max", date(math.MinInt64), date(math.MaxInt64), -1},
	{"timestamp seconds first", ts(1, 0), ts(0, math.MaxUint32), 1},
	{"timestamp unsigned", ts(1<<31, 0), ts(1, 0), 1},
	{"timestamp increment", ts(5, 1), ts(5, 2), -1},
	{"regex pattern first", regex("a", "i"), regex("ab", ""), -1},
	{"regex options", regex("a", "i"), regex("a", "m"), -1},
	{"regex options prefix", regex("a", "i"), regex("a", "im"), -1},
	{"dbpointer length first", dbptr("b", 0), dbptr("aa", 0), -1},
	{"dbpointer namespace", dbptr("ab", 9), dbptr("ac", 0), -1},
	{"dbpointer oid", dbptr("ab", 1), dbptr("ab", 2), -1},
	{"cws code first", cws("a", doc("z", i32(1))), cws("b", doc()), -1},
	{"cws scope", cws("a", doc("x", i32(1))), cws("a", doc("x", i32(2))), -1},
	{"cws scope equal numbers", cws("a", doc("x", i32(1))), cws("a", doc("x", dbl(1))), 0},
	{"minKey = minKey", minKey, minKey, 0},
	{"undefined = undefined", undefined, undefined, 0},
	{"null = null", null, null, 0},
	{"maxKey = maxKey", maxKey, maxKey, 0},

	// Malformed values compare as null; a malformed element ends its document.
	{"truncated int32 = null", raw(0x10, 1, 2), null, 0},
	{"unknown type = null", raw(0x14, 1, 2, 3, 4), null, 0},
	{"EOO type = null", raw(0x00), null, 0},
	{"bad bool = null", raw(0x08, 2), null, 0},
	{"string without NUL = null", raw(0x02, 2, 0, 0, 0, 'a', 'b'), null, 0},
	{"string length 0 = null", raw(0x02, 0, 0, 0, 0), null, 0},
	{"string too long = null", raw(0x02, 9, 0, 0, 0, 'a', 0), null, 0},
	{"doc too short = null", raw(0x03, 4, 0, 0, 0), null, 0},
	{"doc without NUL = null", raw(0x03, 5, 0, 0, 0, 1), null, 0},
	{"malformed (null) > minKey", raw(0x10), minKey, 1},
	{"binary negative length = null", raw(0x05, 0xff, 0xff, 0xff, 0xff, 0), null, 0},
	{"cws inconsistent = null", raw(0x0f, 14, 0, 0, 0, 2, 0, 0, 0, 'a', 0, 5, 0, 0, 0, 0, 0), null, 0},
	{"bad element ends doc", rawDoc(0x10, 'a', 0, 1, 0, 0, 0, 0x10, 'b', 0, 1), doc("a", i32(1)), 0},
	{"unknown element type ends doc", rawDoc(0x10, 'a', 0, 1, 0, 0, 0, 0x33, 'b', 0), doc("a", i32(1)), 0},
	{"key without NUL ends doc", rawDoc(0x10, 'a', 'b'), doc(), 0},
	{"trailing bytes ignored", bsoncore.Value{Type: bsoncore.TypeInt32, Data: []byte{1, 0, 0, 0, 9, 9}}, i32(1), 0},

	// Containers beyond MaxDepth compare as null.
	{"deep equal at limit", nested(bsonx.MaxDepth-1, i32(1)), nested(bsonx.MaxDepth-1, i32(1)), 0},
	{"deep differs at limit", nested(bsonx.MaxDepth-1, i32(1)), nested(bsonx.MaxDepth-1, i32(2)), -1},
	{"deep differs in container at limit", nested(bsonx.MaxDepth-1, doc("x", i32(1))), nested(bsonx.MaxDepth-1, doc("x", i32(2))), -1},
	{"beyond limit is null", nested(bsonx.MaxDepth, doc("x", i32(1))), nested(bsonx.MaxDepth, doc("x", i32(2))), 0},
	{"beyond limit = null", nested(bsonx.MaxDepth, arr()), nested(bsonx.MaxDepth, null), 0},
}

func TestCompare(t *testing.T) {
	if err := bsonxtest.LiteralError(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range compareCases {
		if got := bsonx.Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Compare(%s, %s) = %d, want %d", tc.name, show(tc.a), show(tc.b), got, tc.want)
		}
		if got := bsonx.Compare(tc.b, tc.a); got != -tc.want {
			t.Errorf("%s (reversed): Compare(%s, %s) = %d, want %d", tc.name, show(tc.b), show(tc.a), got, -tc.want)
		}
		if got := bsonx.Equal(tc.a, tc.b); got != (tc.want == 0) {
			t.Errorf("%s: Equal = %v", tc.name, got)
		}
	}
}

func TestCompareDocuments(t *testing.T) {
	for _, tc := range compareCases {
		if tc.a.Type != bsoncore.TypeEmbeddedDocument || tc.b.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		if got := bsonx.CompareDocuments(tc.a.Data, tc.b.Data); got != tc.want {
			t.Errorf("%s: CompareDocuments = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := bsonx.CompareDocuments([]byte{1, 2}, doc().Data); got != -1 {
		t.Errorf("malformed document vs {}: %d, want -1 (null sorts before documents)", got)
	}
}

// TestCompareAllocs pins the promise that comparing does not allocate, the
// slow path of decimal against fractional double included.
func TestCompareAllocs(t *testing.T) {
	pairs := [][2]bsoncore.Value{
		{i32(1), dbl(1)},
		{doc("a", i32(1), "b", str("x"), "c", arr(i64(3), dbl(2.5))), doc("a", i32(1), "b", str("x"), "c", arr(i64(3), dbl(2.5)))},
		{dec("0.1"), dbl(0.1)},
		{dec("12345678901234567890.5"), i64(math.MaxInt64)},
		{dec("1.5"), dec("1.50")},
	}
	for _, p := range pairs {
		if n := testing.AllocsPerRun(100, func() { bsonx.Compare(p[0], p[1]) }); n != 0 {
			t.Errorf("Compare(%s, %s) allocates %v times", show(p[0]), show(p[1]), n)
		}
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func BenchmarkCompare(b *testing.B) {
	for _, bc := range []struct {
		name string
		a, b bsoncore.Value
	}{
		{"int32", i32(1), i32(2)},
		{"int64-double", i64(1 << 60), dbl(0x1p60)},
		{"string", str("hello world"), str("hello there")},
		{"document", doc("a", i32(1), "b", str("x"), "c", arr(i64(3))), doc("a", i32(1), "b", str("x"), "c", arr(i64(4)))},
		{"decimal-double", dec("0.1"), dbl(0.1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bsonx.Compare(bc.a, bc.b)
			}
		})
	}
}
