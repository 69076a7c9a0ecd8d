package keystring_test

import (
	"bytes"
	"encoding/hex"
	"math"
	"testing"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTypeBitsRoundTrip checks invariant "Exact round trip" on the
// interesting values and on random ones of every type: decoding a key and
// applying the type bits written for its value gives the value's bytes.
func TestTypeBitsRoundTrip(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	values := bsonxtest.Interesting()
	for range *pairsFlag / 4 {
		values = append(values, g.Value(), g.Number())
	}
	var w keystring.TypeBitsWriter
	for _, v := range values {
		for _, desc := range []bool{false, true} {
			k := keystring.Append(nil, v)
			if desc {
				k = keystring.AppendDesc(nil, v)
			}
			w.Reset(nil)
			w.Value(v)
			d, _, err := keystring.Decode(k)
			if err != nil {
				t.Fatalf("Decode(%s): %v", show(v), err)
			}
			if !wellFormed(v) || depth(v) > bsonx.MaxDepth || (v.Type != bsoncore.TypeNull && d.Type == bsoncore.TypeNull) {
				continue // malformed, or deeper than keys hold (null there)
			}
			r := keystring.NewTypeBitsReader(w.Bytes())
			got, err := r.Retype(d)
			if err != nil {
				t.Fatalf("Retype(%s) with bits %x: %v", show(v), w.Bytes(), err)
			}
			if !sameBytes(got, v) {
				t.Fatalf("round trip of %s (bits %x) gave %s", show(v), w.Bytes(), show(got))
			}
		}
	}
}

// sameBytes compares two values byte for byte, except NaNs, at any depth:
// keys keep one NaN per type, not its payload (as MongoDB's do).
func sameBytes(a, b bsoncore.Value) bool {
	if a.Type == bsoncore.TypeDouble && b.Type == bsoncore.TypeDouble && math.IsNaN(a.Double()) && math.IsNaN(b.Double()) {
		return true
	}
	if a.Type == b.Type && (a.Type == bsoncore.TypeEmbeddedDocument || a.Type == bsoncore.TypeArray) {
		ae, err1 := bsoncore.Document(a.Data).Elements()
		be, err2 := bsoncore.Document(b.Data).Elements()
		if err1 == nil && err2 == nil && len(ae) == len(be) {
			for i := range ae {
				if ae[i].Key() != be[i].Key() || !sameBytes(ae[i].Value(), be[i].Value()) {
					return false
				}
			}
			return true
		}
	}
	return a.Type == b.Type && bytes.Equal(a.Data[:mustLen(a)], b.Data[:mustLen(b)])
}

// TestTypeBitsCases pins what each kind of value costs and gets back.
func TestTypeBitsCases(t *testing.T) {
	sym := bsoncore.Value{Type: bsoncore.TypeSymbol, Data: str("x").Data}
	cases := []struct {
		name string
		v    bsoncore.Value
		bits string // packed bytes, hex
	}{
		{"int32", i32(5), ""},
		{"int64 small", i64(5), "03"},
		{"int64 large", i64(1 << 40), ""},
		{"double integral", dbl(5), "05"},
		{"double fraction", dbl(2.5), ""},
		{"double zero", dbl(0), "05"},
		{"double minus zero", dbl(math.Copysign(0, -1)), "0d"},
		{"string", str("x"), ""},
		{"symbol", sym, "01"},
		{"document", doc("a", i32(1), "b", i64(2)), "06"},
		{"array", arr(dbl(1.5), dbl(2)), "0a"},
		{"null", null, ""},
	}
	var w keystring.TypeBitsWriter
	for _, c := range cases {
		w.Reset(nil)
		w.Value(c.v)
		if got := hex.EncodeToString(w.Bytes()); got != c.bits {
			t.Errorf("%s: bits %s, want %s", c.name, got, c.bits)
		}
	}
	w.Reset(nil)
	w.Missing()
	r := keystring.NewTypeBitsReader(w.Bytes())
	if got, err := r.Retype(null); err != nil || got.Type != 0 {
		t.Errorf("missing: Retype(null) = %s, %v; want the zero Value", show(got), err)
	}
}

// depth is how deep containers nest in v (1 for a scalar).
func depth(v bsoncore.Value) int {
	var elems []bsoncore.Element
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		elems, _ = bsoncore.Document(v.Data).Elements()
	case bsoncore.TypeCodeWithScope:
		_, scope, _ := v.CodeWithScopeOK()
		elems, _ = scope.Elements()
	default:
		return 1
	}
	most := 0
	for _, e := range elems {
		most = max(most, depth(e.Value()))
	}
	return most + 1
}

// wellFormed reports a value a document could store (Interesting has
// malformed ones too, which keys hold as null).
func wellFormed(v bsoncore.Value) bool {
	if v.Validate() != nil {
		return false
	}
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Data[0] <= 1
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		elems, err := bsoncore.Document(v.Data).Elements()
		if err != nil {
			return false
		}
		for _, e := range elems {
			if !wellFormed(e.Value()) {
				return false
			}
		}
	}
	return true
}
