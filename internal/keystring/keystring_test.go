package keystring_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var (
	i32  = bsonxtest.Int32
	i64  = bsonxtest.Int64
	dbl  = bsonxtest.Double
	dec  = bsonxtest.Decimal
	str  = bsonxtest.String
	doc  = bsonxtest.Doc
	arr  = bsonxtest.Array
	null = bsonxtest.Null
)

// TestGolden pins the on-disk layout: a change here means every stored key
// must be rewritten.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		v    bsoncore.Value
		asc  string
		desc string
	}{
		{bsonxtest.MinKey, "01", "fe"},
		{bsonxtest.Undefined, "02", "fd"},
		{null, "03", "fc"},
		{dbl(math.NaN()), "08", "f7"},
		{dbl(math.Inf(-1)), "09", "f6"},
		{i32(0), "2e", "d1"},
		{dbl(math.Copysign(0, -1)), "2e", "d1"},
		{i32(1), "3100", "ceff"},
		{i64(1), "3100", "ceff"},
		{dbl(1), "3100", "ceff"},
		{dec("1.00"), "3100", "ceff"},
		{i32(-1), "2bff", "d400"},
		{i32(2), "3180", "ce7f"},
		{i32(3), "31c0", "ce3f"},
		{i32(127), "347e", "cb81"},
		{i32(128), "3480", "cb7f"},
		{i32(1000), "35fa", "ca05"},
		{i64(math.MaxInt64), "507ffffffffffffffffe", ""},
		{i64(math.MinInt64), "0c7f", ""},
		{dbl(0.5), "30fff0", "cf000f"},
		{dbl(0.1), "30ffc9cd673399cd6734", ""},
		{dec("0.1"), "30ffc9cd673399cd673399c1" + "181f" + "0b" + "00", ""},
		{dbl(math.Inf(1)), "53", "ac"},
		{str(""), "600000", "9fffff"},
		{str("a\x00"), "606100ff0000", ""},
		{bsonxtest.Symbol("a"), "60610000", ""},
		{doc(), "6400", "9bff"},
		{doc("a", i32(1)), "640861000031000" + "0", ""},
		{arr(), "6800", ""},
		{arr(i32(1), str("")), "6831006000000" + "0", ""},
		{bsonxtest.Binary(0, "ab"), "6c02006162", ""},
		{bsonxtest.ObjectID(7), "70" + "650102030405060708090a07", ""},
		{bsonxtest.Bool(false), "74", "8b"},
		{bsonxtest.Bool(true), "75", "8a"},
		{bsonxtest.Date(0), "788000000000000000", ""},
		{bsonxtest.Date(-1), "787fffffffffffffff", ""},
		{bsonxtest.Timestamp(1, 2), "7a0000000100000002", ""},
		{bsonxtest.Regex("a", "i"), "7b61006900", ""},
		{bsonxtest.DBPointer("ab", 7), "7c" + "02" + "6162" + "650102030405060708090a07", ""},
		{bsonxtest.Code("x"), "7d780000", ""},
		{bsonxtest.CodeWithScope("x", doc()), "7e78000000", ""},
		{bsonxtest.MaxKey, "7f", "80"},
	} {
		want := strings.ReplaceAll(tc.asc, " ", "")
		if got := hex.EncodeToString(keystring.Append(nil, tc.v)); got != want {
			t.Errorf("Append(%s) = %s, want %s", show(tc.v), got, want)
		}
		if tc.desc == "" {
			continue
		}
		if got := hex.EncodeToString(keystring.AppendDesc(nil, tc.v)); got != tc.desc {
			t.Errorf("AppendDesc(%s) = %s, want %s", show(tc.v), got, tc.desc)
		}
	}
	if err := bsonxtest.LiteralError(); err != nil {
		t.Fatal(err)
	}
}

// TestInterestingPairs checks every invariant on every pair of hand-picked
// edge values.
func TestInterestingPairs(t *testing.T) {
	vals := bsonxtest.Interesting()
	if err := bsonxtest.LiteralError(); err != nil {
		t.Fatal(err)
	}
	enc := make([]keys, len(vals))
	for i, v := range vals {
		enc[i] = checkValue(t, v)
	}
	for i, a := range vals {
		for j, b := range vals {
			checkOrder(t, a, b, enc[i], enc[j])
			if (i+j)%17 == 0 {
				checkTuple(t, a, b, vals[(i*7+j)%len(vals)], vals[(i+j*3)%len(vals)])
			}
		}
	}
	t.Logf("%d values, %d pairs", len(vals), len(vals)*len(vals))
}

// TestSizes checks the promised compactness: small integers in a few bytes,
// any int64 or double in at most ten.
func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		below int64
		max   int
	}{{1 << 7, 2}, {1 << 14, 3}, {1 << 21, 4}} {
		for _, n := range []int64{tc.below - 1, -(tc.below - 1), tc.below / 3} {
			if got := len(keystring.Append(nil, i64(n))); got > tc.max {
				t.Errorf("%d takes %d bytes, want at most %d", n, got, tc.max)
			}
		}
	}
	r := newRand(t)
	for range 20000 {
		bits := r.Uint64()
		for _, v := range []bsoncore.Value{i64(int64(bits)), i64(int64(bits) >> r.IntN(64)), dbl(math.Float64frombits(bits))} {
			if n := len(keystring.Append(nil, v)); n > 10 {
				t.Fatalf("%s takes %d bytes", show(v), n)
			}
		}
	}
}

// TestDecodeTypes pins which numeric type Decode returns.
func TestDecodeTypes(t *testing.T) {
	for _, tc := range []struct {
		in   bsoncore.Value
		want bsoncore.Type
	}{
		{i64(5), bsoncore.TypeInt32},
		{dbl(-5), bsoncore.TypeInt32},
		{dec("5.00"), bsoncore.TypeInt32},
		{i32(math.MinInt32), bsoncore.TypeInt32},
		{i64(math.MaxInt32 + 1), bsoncore.TypeInt64},
		{i64(math.MinInt64), bsoncore.TypeInt64},
		{dbl(0x1p62), bsoncore.TypeInt64},
		{dbl(0x1p63), bsoncore.TypeDouble},
		{dbl(0.5), bsoncore.TypeDouble},
		{dbl(math.NaN()), bsoncore.TypeDouble},
		{dec("NaN"), bsoncore.TypeDouble},
		{dec("-Infinity"), bsoncore.TypeDouble},
		{dbl(math.SmallestNonzeroFloat64), bsoncore.TypeDouble},
		{dec("0.1"), bsoncore.TypeDecimal128},
		{dec("1E+400"), bsoncore.TypeDecimal128},
		{dec("18446744073709551617"), bsoncore.TypeDecimal128},
		{dec("0E+10"), bsoncore.TypeInt32},
		{bsonxtest.Symbol("s"), bsoncore.TypeString},
		{bsonxtest.Undefined, bsoncore.TypeUndefined},
	} {
		v, _, err := keystring.Decode(keystring.Append(nil, tc.in))
		if err != nil || v.Type != tc.want || bsonx.Compare(v, tc.in) != 0 {
			t.Errorf("Decode(Append(%s)) = %s (%v), %v; want an equal %v", show(tc.in), show(v), v.Type, err, tc.want)
		}
	}
}

// TestCorrupt feeds Len and Decode bytes Append never writes.
func TestCorrupt(t *testing.T) {
	deep := bytes.Repeat([]byte{0x68}, bsonx.MaxDepth+1) // arrays nested once too deep
	deep = append(append(deep, 0x03), bytes.Repeat([]byte{0}, bsonx.MaxDepth+1)...)
	for _, tc := range []struct {
		name   string
		in     string
		lenOK  bool // Len checks structure only
		wantOK bool
	}{
		{"empty", "", false, false},
		{"zero first byte", "00", false, false},
		{"0xff first byte", "ff", false, false},
		{"unknown tag", "05", false, false},
		{"truncated number", "3101", false, false},
		{"trailing zero chunk", "310100", true, false},
		{"truncated string", "6061", false, false},
		{"bad escape", "60610001", false, false},
		{"rank mismatch", "6460610000310000", true, false},
		{"NUL in field name", "640861" + "00ff" + "0000" + "2e00", true, false},
		{"long length form", "6c800100", false, false},
		{"bad length byte", "6cf1", false, false},
		{"truncated binary", "6c0500", false, false},
		{"truncated object", "6408", false, false},
		{"unterminated array", "6831", false, false},
		{"bad digit pair", "31ffffffffffffffffff" + "1820" + "ff00", false, false},
		{"desc of valid", "ceff", true, true},
		{"valid", "3100", true, true},
		{"too deep", hex.EncodeToString(deep), false, false},
	} {
		in := unhex(t, tc.in)
		n, err := keystring.Len(in)
		if (err == nil) != tc.lenOK || err != nil && !errors.Is(err, keystring.ErrCorrupt) {
			t.Errorf("%s: Len(%s) = %d, %v", tc.name, tc.in, n, err)
		}
		_, _, err = keystring.Decode(in)
		if (err == nil) != tc.wantOK || err != nil && !errors.Is(err, keystring.ErrCorrupt) {
			t.Errorf("%s: Decode(%s) error %v", tc.name, tc.in, err)
		}
	}
}

// TestAppendAllocs pins that encoding the common types does not allocate.
func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	for _, v := range []bsoncore.Value{
		i32(7), i64(1 << 60), dbl(0.1), str("hello\x00world"), bsonxtest.ObjectID(3),
		doc("a", i32(1), "b", str("x"), "c", arr(i64(3), dbl(2.5))),
	} {
		if n := testing.AllocsPerRun(100, func() { keystring.Append(buf[:0], v) }); n != 0 {
			t.Errorf("Append(%s) allocates %v times", show(v), n)
		}
		k := keystring.Append(nil, v)
		if n := testing.AllocsPerRun(100, func() { _, _ = keystring.Len(k) }); n != 0 {
			t.Errorf("Len(Append(%s)) allocates %v times", show(v), n)
		}
	}
}
