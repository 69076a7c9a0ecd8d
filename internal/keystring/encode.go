package keystring

import (
	"bytes"
	"encoding/binary"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Append appends the ascending encoding of v to dst: bytes.Compare of two
// encodings has the sign of bsonx.Compare of the values, and an encoding is
// self-delimiting, so encodings concatenate into compound keys that sort as
// tuples.
//
// Append never panics and never fails. A value bsonx.Compare cannot read is
// encoded as null, and a document or array ends at its first unreadable
// element, exactly as bsonx.Compare treats them (see the bsonx package
// comment); containers deeper than bsonx.MaxDepth are encoded as null.
// Appending an int32, int64 or double does not allocate beyond growing dst; a
// decimal128 allocates while its binary expansion is computed.
func Append(dst []byte, v bsoncore.Value) []byte {
	return AppendCollated(dst, v, nil)
}

// Collator makes collation keys (package collation's *Collator): keys that
// compare bytewise as their strings compare under the collation.
type Collator interface {
	AppendKey(dst, s []byte) []byte
}

// AppendCollated is Append for an index with a collation: every string and
// symbol, inside documents and arrays too, is encoded as its collation key
// (MongoDB's collation-aware index keys), so bytes.Compare of two encodings
// has the sign of bsonx.CompareWith under that collation (invariant
// "Collated keys order as the collation"). Such an encoding does not decode
// back to the strings. A nil coll is Append.
func AppendCollated(dst []byte, v bsoncore.Value, coll Collator) []byte {
	n, ok := bsonx.ValueSize(v.Type, v.Data)
	if !ok {
		return append(dst, tagNull)
	}
	return appendValue(dst, v.Type, v.Data[:n], 1, coll)
}

// AppendDescCollated is AppendDesc for an index with a collation.
func AppendDescCollated(dst []byte, v bsoncore.Value, coll Collator) []byte {
	start := len(dst)
	dst = AppendCollated(dst, v, coll)
	invert(dst[start:])
	return dst
}

// AppendDesc appends the descending encoding of v to dst: the complement of
// every byte of the ascending encoding, so bytes.Compare of two descending
// encodings has the sign of -bsonx.Compare. It is self-delimiting as well,
// and mixes with ascending encodings in compound keys (an index
// {a: 1, b: -1} stores Append(a) followed by AppendDesc(b)).
func AppendDesc(dst []byte, v bsoncore.Value) []byte {
	start := len(dst)
	dst = Append(dst, v)
	invert(dst[start:])
	return dst
}

// AppendScalar is Append of a value other than a document, an array or
// code with scope, whose encodings nest (ok false, dst as given): the same
// bytes, from a function that does not recurse, so dst escapes only into
// the result and a key built on the caller's stack stays there (Append's
// recursion makes escape analysis send its dst to the heap).
func AppendScalar(dst []byte, v bsoncore.Value) (out []byte, ok bool) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
		return dst, false
	}
	n, ok := bsonx.ValueSize(v.Type, v.Data)
	if !ok {
		return append(dst, tagNull), true
	}
	return appendScalar(dst, v.Type, v.Data[:n], nil), true
}

// appendValue appends the ascending encoding of the framed value (t, d)
// found at nesting depth depth.
func appendValue(dst []byte, t bsoncore.Type, d []byte, depth int, coll Collator) []byte {
	if depth > bsonx.MaxDepth && isContainer(t) {
		return append(dst, tagNull)
	}
	switch t {
	case bsoncore.TypeEmbeddedDocument:
		return appendFields(append(dst, tagObject), elements(d), depth+1, coll)
	case bsoncore.TypeArray:
		return appendItems(append(dst, tagArray), elements(d), depth+1, coll)
	case bsoncore.TypeCodeWithScope:
		code, scope := splitCodeWithScope(d)
		dst = appendEscaped(append(dst, tagCodeWithScope), code)
		return appendFields(dst, elements(scope), depth+1, nil)
	}
	return appendScalar(dst, t, d, coll)
}

// appendScalar is appendValue of a value whose encoding does not nest.
func appendScalar(dst []byte, t bsoncore.Type, d []byte, coll Collator) []byte {
	switch t {
	case bsoncore.TypeMinKey:
		return append(dst, tagMinKey)
	case bsoncore.TypeUndefined:
		return append(dst, tagUndefined)
	case bsoncore.TypeMaxKey:
		return append(dst, tagMaxKey)
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return appendNumber(dst, t, d)
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		if coll != nil {
			// A copy goes to the collator, so that d (which may live on the
			// caller's stack) does not escape through the interface call.
			str := append([]byte(nil), stringBytes(d)...)
			return appendEscaped(append(dst, tagString), coll.AppendKey(str[:0:0], str))
		}
		return appendEscaped(append(dst, tagString), stringBytes(d))
	case bsoncore.TypeJavaScript:
		return appendEscaped(append(dst, tagCode), stringBytes(d))
	case bsoncore.TypeBinary:
		// Length first, as MongoDB orders binData; then subtype and bytes,
		// whose length is now known.
		dst = appendLength(append(dst, tagBinary), len(d)-5)
		return append(dst, d[4:]...)
	case bsoncore.TypeObjectID:
		return append(append(dst, tagObjectID), d...)
	case bsoncore.TypeBoolean:
		if d[0] == 0 {
			return append(dst, tagFalse)
		}
		return append(dst, tagTrue)
	case bsoncore.TypeDateTime:
		// Signed: flipping the sign bit makes big-endian order numeric order.
		return binary.BigEndian.AppendUint64(append(dst, tagDate), binary.LittleEndian.Uint64(d)^1<<63)
	case bsoncore.TypeTimestamp:
		// Unsigned; seconds in the high word, increment in the low one.
		return binary.BigEndian.AppendUint64(append(dst, tagTimestamp), binary.LittleEndian.Uint64(d))
	case bsoncore.TypeRegex:
		// Pattern and options are C strings: no NUL inside, so a NUL ends
		// each and sorts a prefix first.
		return append(append(dst, tagRegex), d...)
	case bsoncore.TypeDBPointer:
		// MongoDB orders by namespace length first, then bytes.
		ns := stringBytes(d[:len(d)-12])
		dst = appendLength(append(dst, tagDBPointer), len(ns))
		return append(append(dst, ns...), d[len(d)-12:]...)
	}
	return append(dst, tagNull)
}

// appendFields appends a document's elements, each as rank byte, escaped
// field name and value, then tagEnd.
func appendFields(dst []byte, elems []byte, depth int, coll Collator) []byte {
	for {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return append(dst, tagEnd)
		}
		rt := t
		if depth > bsonx.MaxDepth && isContainer(t) {
			rt = bsoncore.TypeNull
		}
		dst = appendEscaped(append(dst, rankByte(rt)), key)
		dst = appendValue(dst, t, val, depth, coll)
		elems = rest
	}
}

// appendItems appends an array's values, then tagEnd; keys are not encoded.
func appendItems(dst []byte, elems []byte, depth int, coll Collator) []byte {
	for {
		t, _, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return append(dst, tagEnd)
		}
		dst = appendValue(dst, t, val, depth, coll)
		elems = rest
	}
}

// appendEscaped appends s with each 0x00 written as 0x00 0xff, then the
// terminator 0x00 0x00. The terminator sorts below every byte and every
// escaped NUL, so a prefix sorts first, and NULs sort below other bytes, as
// in a bytewise comparison of the raw strings.
func appendEscaped(dst []byte, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0)
		if i < 0 {
			return append(append(dst, s...), 0, 0)
		}
		dst = append(append(dst, s[:i]...), 0, 0xff)
		s = s[i+1:]
	}
}

// appendLength appends n (0 <= n < 2^32) so that the order of the bytes is
// the order of the numbers and the first byte tells the length: 0xxxxxxx,
// 10xxxxxx +1 byte, 110xxxxx +2, 1110xxxx +3, 0xf0 +4.
func appendLength(dst []byte, n int) []byte {
	switch {
	case n < 1<<7:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, 0x80|byte(n>>8), byte(n))
	case n < 1<<21:
		return append(dst, 0xc0|byte(n>>16), byte(n>>8), byte(n))
	case n < 1<<28:
		return append(dst, 0xe0|byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xf0), uint32(n))
}

func isContainer(t bsoncore.Type) bool {
	return t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope
}

// stringBytes returns the bytes of a framed BSON string, without its NUL.
func stringBytes(v []byte) []byte {
	return v[4 : len(v)-1]
}

// elements returns what lies between a framed document's length and its
// final NUL.
func elements(doc []byte) []byte {
	return doc[4 : len(doc)-1]
}

// splitCodeWithScope returns the code bytes and the framed scope document
// of a framed code-with-scope value.
func splitCodeWithScope(v []byte) (code, scope []byte) {
	l := int(binary.LittleEndian.Uint32(v[4:]))
	return v[8 : 8+l-1], v[8+l:]
}
