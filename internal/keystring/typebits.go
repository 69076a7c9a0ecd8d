package keystring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Type bits: what an encoding loses of a value, kept beside the key so that
// the value comes back exactly, BSON type included (MongoDB's KeyString
// keeps its TypeBits in the index entry's value for the same reason: the
// key must compare by value, so it cannot hold the type).
//
// The bits follow the values in the order Append visits them (depth first,
// documents' values in field order, arrays' items, a code-with-scope's
// scope values). Per value:
//
//   - a number: one bit, set when the number is not of the type Decode
//     gives it (the narrowest exact type); then two bits of its type
//     (1 int64, 2 double, 3 decimal128); a double zero adds one bit, its
//     sign; a decimal128 adds its 128 bits (low word, then high), since
//     Decode loses its exponent (1.0 and 1.00) and its zero's sign.
//   - a string or symbol: one bit, set for a symbol.
//   - a null at the top level of a key part: one bit, set when it stands for
//     a missing field (TypeBitsWriter.Missing).
//   - everything else: nothing (the key holds it exactly).
//
// The bits are packed least significant first and trailing zero bytes are
// dropped, so a key whose values are all int32s, fractional doubles, large
// int64s, strings and present fields has empty type bits: entries written
// before type bits existed read as exactly that.
//
// Invariant "Exact round trip": for every value v a document can store,
// Retype(Decode(Append(v)), bits written for v) is v, byte for byte
// (TestTypeBitsRoundTrip). Containers nested beyond bsonx.MaxDepth encode
// as null and are not restored.

// TypeBitsWriter accumulates the type bits of one key, part by part.
type TypeBitsWriter struct {
	b []byte
	n int // bits written
}

// Reset starts a new key, reusing dst's storage.
func (w *TypeBitsWriter) Reset(dst []byte) { w.b, w.n = dst[:0], 0 }

// Bytes is the packed bits, trailing zero bytes dropped: empty when every
// bit is zero (bytes exist only up to the last set bit).
func (w *TypeBitsWriter) Bytes() []byte { return w.b }

// bit writes one bit. Zero bits only advance the count: bytes are added
// when a set bit needs them, so a key that loses nothing allocates nothing.
func (w *TypeBitsWriter) bit(on bool) {
	if on {
		for len(w.b) <= w.n/8 {
			w.b = append(w.b, 0)
		}
		w.b[w.n/8] |= 1 << (w.n % 8)
	}
	w.n++
}

// bits writes the n low bits of x, lowest first, a byte's worth at a time.
func (w *TypeBitsWriter) bits(x uint64, n int) {
	for n > 0 {
		off := w.n % 8
		take := min(8-off, n)
		if chunk := byte(x & (1<<take - 1)); chunk != 0 {
			for len(w.b) <= w.n/8 {
				w.b = append(w.b, 0)
			}
			w.b[w.n/8] |= chunk << off
		}
		x >>= take
		n -= take
		w.n += take
	}
}

// Missing records a key part that is null because the field is missing.
func (w *TypeBitsWriter) Missing() { w.bit(true) }

// Value records the type bits of one key part, encoded by Append or
// AppendDesc (the bits do not depend on the direction).
func (w *TypeBitsWriter) Value(v bsoncore.Value) {
	n, ok := bsonx.ValueSize(v.Type, v.Data)
	if !ok {
		return
	}
	if v.Type == bsoncore.TypeNull {
		w.bit(false)
		return
	}
	w.value(v.Type, v.Data[:n], 1)
}

// Number types in the type bits.
const (
	tbInt64   = 1
	tbDouble  = 2
	tbDecimal = 3
)

func (w *TypeBitsWriter) value(t bsoncore.Type, d []byte, depth int) {
	if depth > bsonx.MaxDepth && isContainer(t) {
		return
	}
	switch t {
	case bsoncore.TypeInt32:
		w.bit(false)
	case bsoncore.TypeInt64:
		x := int64(binary.LittleEndian.Uint64(d))
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			w.bit(true)
			w.bits(tbInt64, 2)
			return
		}
		w.bit(false)
	case bsoncore.TypeDouble:
		f := math.Float64frombits(binary.LittleEndian.Uint64(d))
		switch {
		case f == 0:
			w.bit(true)
			w.bits(tbDouble, 2)
			w.bit(math.Signbit(f))
		case f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63:
			// Integral and within int64: Decode gives an int32 or int64.
			w.bit(true)
			w.bits(tbDouble, 2)
		default:
			w.bit(false)
		}
	case bsoncore.TypeDecimal128:
		w.bit(true)
		w.bits(tbDecimal, 2)
		w.bits(binary.LittleEndian.Uint64(d), 64)
		w.bits(binary.LittleEndian.Uint64(d[8:]), 64)
	case bsoncore.TypeString:
		w.bit(false)
	case bsoncore.TypeSymbol:
		w.bit(true)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		w.elements(elements(d), depth+1)
	case bsoncore.TypeCodeWithScope:
		_, scope := splitCodeWithScope(d)
		w.elements(elements(scope), depth+1)
	}
}

func (w *TypeBitsWriter) elements(elems []byte, depth int) {
	for {
		t, _, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return
		}
		w.value(t, val, depth)
		elems = rest
	}
}

// ErrTypeBits is wrapped by Retype's errors: the bits do not describe the
// value.
var ErrTypeBits = errors.New("keystring: type bits do not match the key")

// TypeBitsReader reads type bits written by a TypeBitsWriter, part by part,
// in the same order.
type TypeBitsReader struct {
	b []byte
	n int // bits read
}

// NewTypeBitsReader reads the packed bits b (Bytes of a writer).
func NewTypeBitsReader(b []byte) TypeBitsReader { return TypeBitsReader{b: b} }

func (r *TypeBitsReader) bit() bool {
	i := r.n / 8
	r.n++
	return i < len(r.b) && r.b[i]&(1<<((r.n-1)%8)) != 0
}

// bits reads n bits, lowest first, a byte's worth at a time.
func (r *TypeBitsReader) bits(n int) uint64 {
	var x uint64
	for got := 0; got < n; {
		off := r.n % 8
		take := min(8-off, n-got)
		var c byte
		if i := r.n / 8; i < len(r.b) {
			c = r.b[i]
		}
		x |= uint64(c>>off&(1<<take-1)) << got
		got += take
		r.n += take
	}
	return x
}

// done reports that every bit left is zero: nothing more changes.
func (r *TypeBitsReader) done() bool { return r.n >= 8*len(r.b) }

// Retype gives the value that v, a key part decoded by Decode, stood for
// before encoding: its number types, symbols and, for a top-level null, a
// missing field (returned as the zero Value, Type 0). v's bytes may be
// reused in the result.
func (r *TypeBitsReader) Retype(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeNull {
		if r.bit() {
			return bsoncore.Value{}, nil
		}
		return v, nil
	}
	if r.done() {
		return v, nil // no bit left set: nothing to change
	}
	t, d, err := r.retype(nil, v.Type, v.Data, 1)
	return bsoncore.Value{Type: t, Data: d}, err
}

// retype appends the retyped value (t, d) to dst.
func (r *TypeBitsReader) retype(dst []byte, t bsoncore.Type, d []byte, depth int) (bsoncore.Type, []byte, error) {
	if depth > bsonx.MaxDepth && isContainer(t) {
		return t, append(dst, d...), nil
	}
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		if !r.bit() {
			return t, append(dst, d...), nil
		}
		return r.number(dst, t, d)
	case bsoncore.TypeString:
		if r.bit() {
			return bsoncore.TypeSymbol, append(dst, d...), nil
		}
		return t, append(dst, d...), nil
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if r.done() {
			return t, append(dst, d...), nil
		}
		dst, err := r.document(dst, d, depth+1)
		return t, dst, err
	case bsoncore.TypeCodeWithScope:
		if r.done() {
			return t, append(dst, d...), nil
		}
		code, scope := splitCodeWithScope(d)
		start := len(dst)
		dst = binary.LittleEndian.AppendUint32(dst, 0)
		dst = bsoncore.AppendString(dst, string(code))
		dst, err := r.document(dst, scope, depth+1)
		binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		return t, dst, err
	}
	return t, append(dst, d...), nil
}

// document appends the framed document d with its values retyped.
func (r *TypeBitsReader) document(dst []byte, d []byte, depth int) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	elems := elements(d)
	for {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = rest
		at := len(dst)
		dst = append(append(append(dst, byte(t)), key...), 0)
		nt, out, err := r.retype(dst, t, val, depth)
		if err != nil {
			return out, err
		}
		out[at] = byte(nt) // a number's or string's type may have changed
		dst = out
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// number converts the decoded number (t, d) to the type the bits name.
func (r *TypeBitsReader) number(dst []byte, t bsoncore.Type, d []byte) (bsoncore.Type, []byte, error) {
	var i int64
	isInt := true
	switch t {
	case bsoncore.TypeInt32:
		i = int64(int32(binary.LittleEndian.Uint32(d)))
	case bsoncore.TypeInt64:
		i = int64(binary.LittleEndian.Uint64(d))
	default:
		isInt = false
	}
	switch r.bits(2) {
	case tbInt64:
		if !isInt {
			return t, dst, fmt.Errorf("%w: int64 from %s", ErrTypeBits, t)
		}
		return bsoncore.TypeInt64, bsoncore.AppendInt64(dst, i), nil
	case tbDouble:
		if !isInt {
			return t, dst, fmt.Errorf("%w: double from %s", ErrTypeBits, t)
		}
		f := float64(i)
		if i == 0 && r.bit() {
			f = math.Copysign(0, -1)
		}
		return bsoncore.TypeDouble, bsoncore.AppendDouble(dst, f), nil
	case tbDecimal:
		lo, hi := r.bits(64), r.bits(64)
		return bsoncore.TypeDecimal128, bsoncore.AppendDecimal128(dst, hi, lo), nil
	}
	return t, dst, fmt.Errorf("%w: number retyped as int32", ErrTypeBits)
}
