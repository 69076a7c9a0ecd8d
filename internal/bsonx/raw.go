package bsonx

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MaxDepth is the deepest nesting of containers (documents, arrays,
// code-with-scope) that Compare looks into; a top-level value is at depth 1.
// A container deeper than this compares as null. It equals MongoDB's
// BSONDepth::kDefaultMaxAllowableDepth, so no document MongoDB accepts is
// affected, and it bounds the recursion of every walk over untrusted bytes.
const MaxDepth = 200

// ValueSize reports how many bytes the value of type t at the start of data
// occupies, read as Compare reads values. ok is false when the bytes cannot
// be such a value (unknown type, too short, inconsistent lengths, a boolean
// byte other than 0 or 1); Compare treats such a value as null (see
// "Malformed values"). Bytes after the value are ignored. Documents and
// arrays are only framed here (length and final NUL), their elements are read
// lazily with NextElement.
//
// Package keystring reads values with this function and NextElement, so that
// its encoding and Compare agree on malformed input too.
func ValueSize(t bsoncore.Type, data []byte) (n int, ok bool) {
	switch t {
	case bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return 0, true
	case bsoncore.TypeBoolean:
		if len(data) < 1 || data[0] > 1 {
			return 0, false
		}
		return 1, true
	case bsoncore.TypeInt32:
		return fixedSize(data, 4)
	case bsoncore.TypeDouble, bsoncore.TypeInt64, bsoncore.TypeDateTime, bsoncore.TypeTimestamp:
		return fixedSize(data, 8)
	case bsoncore.TypeObjectID:
		return fixedSize(data, 12)
	case bsoncore.TypeDecimal128:
		return fixedSize(data, 16)
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		return stringSize(data)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return documentSize(data)
	case bsoncore.TypeBinary:
		l, ok := int32At(data)
		if !ok || l < 0 || int(l) > len(data)-5 {
			return 0, false
		}
		return 5 + int(l), true
	case bsoncore.TypeRegex:
		p := bytes.IndexByte(data, 0)
		if p < 0 {
			return 0, false
		}
		o := bytes.IndexByte(data[p+1:], 0)
		if o < 0 {
			return 0, false
		}
		return p + 1 + o + 1, true
	case bsoncore.TypeDBPointer:
		s, ok := stringSize(data)
		if !ok || len(data)-s < 12 {
			return 0, false
		}
		return s + 12, true
	case bsoncore.TypeCodeWithScope:
		// int32 total length, then a string, then a document, filling the
		// total exactly.
		l, ok := int32At(data)
		if !ok || l < 4 || int(l) > len(data) {
			return 0, false
		}
		body := data[4:l]
		s, ok := stringSize(body)
		if !ok {
			return 0, false
		}
		d, ok := documentSize(body[s:])
		if !ok || 4+s+d != int(l) {
			return 0, false
		}
		return int(l), true
	}
	return 0, false
}

func fixedSize(data []byte, n int) (int, bool) {
	if len(data) < n {
		return 0, false
	}
	return n, true
}

// stringSize frames a BSON string: int32 length (counting the terminating
// NUL), the bytes, a NUL.
func stringSize(data []byte) (int, bool) {
	l, ok := int32At(data)
	if !ok || l < 1 || int(l) > len(data)-4 || data[3+int(l)] != 0 {
		return 0, false
	}
	return 4 + int(l), true
}

// documentSize frames a BSON document: int32 length (counting itself and the
// terminating NUL), the elements, a NUL. The elements are read lazily.
func documentSize(data []byte) (int, bool) {
	l, ok := int32At(data)
	if !ok || l < 5 || int(l) > len(data) || data[l-1] != 0 {
		return 0, false
	}
	return int(l), true
}

func int32At(data []byte) (int32, bool) {
	if len(data) < 4 {
		return 0, false
	}
	return int32(binary.LittleEndian.Uint32(data)), true
}

// stringBytes returns the bytes of a framed string, without its NUL.
func stringBytes(v []byte) []byte {
	return v[4 : len(v)-1]
}

// elements returns the element bytes of a framed document: what lies between
// its length and its terminating NUL.
func elements(doc []byte) []byte {
	return doc[4 : len(doc)-1]
}

// NextElement splits the first element off elems, the bytes of a document
// or array between its length and its final NUL. ok is false at the end of
// elems and at an element that cannot be read: a malformed element ends its
// document, for Compare as for package keystring.
func NextElement(elems []byte) (t bsoncore.Type, key, val, rest []byte, ok bool) {
	if len(elems) == 0 {
		return 0, nil, nil, nil, false
	}
	t = bsoncore.Type(elems[0])
	k := bytes.IndexByte(elems[1:], 0)
	if k < 0 {
		return 0, nil, nil, nil, false
	}
	key = elems[1 : 1+k]
	data := elems[2+k:]
	n, ok := ValueSize(t, data)
	if !ok {
		return 0, nil, nil, nil, false
	}
	return t, key, data[:n], data[n:], true
}

// isContainer reports whether values of type t hold other values, and so
// count toward MaxDepth.
func isContainer(t bsoncore.Type) bool {
	return t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope
}
