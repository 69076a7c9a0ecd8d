package keystring

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Type tags: the first byte of every ascending encoding. They ascend in
// MongoDB's canonical type order and all lie in [0x01, 0x7f], so that the
// first byte of a descending encoding (the complement) lies in [0x80, 0xfe]
// and tells the two apart. 0x00 ends documents and arrays and sorts below
// every tag, which makes a prefix document or array sort first.
const (
	tagEnd       = 0x00
	tagMinKey    = 0x01
	tagUndefined = 0x02
	tagNull      = 0x03

	// Numbers: NaN, -Inf, the negative magnitude classes from the largest
	// magnitudes down, zero, the positive classes from the smallest up, +Inf
	// (see number.go).
	tagNaN      = 0x08
	tagNegInf   = 0x09
	tagNegFirst = 0x0a // negative class numClasses-1 (largest magnitudes)
	tagZero     = tagNegFirst + numClasses
	tagPosFirst = tagZero + 1 // positive class 0 (smallest magnitudes)
	tagPosInf   = tagPosFirst + numClasses

	tagString        = 0x60 // and Symbol, which compares as a string
	tagObject        = 0x64
	tagArray         = 0x68
	tagBinary        = 0x6c
	tagObjectID      = 0x70
	tagFalse         = 0x74
	tagTrue          = 0x75
	tagDate          = 0x78
	tagTimestamp     = 0x7a
	tagRegex         = 0x7b
	tagDBPointer     = 0x7c
	tagCode          = 0x7d
	tagCodeWithScope = 0x7e
	tagMaxKey        = 0x7f

	// descBit is set in the first byte of descending encodings only.
	descBit = 0x80
)

// rankOfTag maps a tag to its type's rank byte: the lowest tag of the type.
// A document element starts with its value's rank byte, so that elements
// compare by type before field name; the value's own tag cannot serve,
// because number tags also order by magnitude and booleans by value.
func rankOfTag(tag byte) byte {
	switch {
	case tag >= tagNaN && tag <= tagPosInf:
		return tagNaN
	case tag == tagTrue:
		return tagFalse
	}
	return tag
}

// rankByte is the rank byte of values of type t.
func rankByte(t bsoncore.Type) byte {
	switch t {
	case bsoncore.TypeMinKey:
		return tagMinKey
	case bsoncore.TypeUndefined:
		return tagUndefined
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return tagNaN
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return tagString
	case bsoncore.TypeEmbeddedDocument:
		return tagObject
	case bsoncore.TypeArray:
		return tagArray
	case bsoncore.TypeBinary:
		return tagBinary
	case bsoncore.TypeObjectID:
		return tagObjectID
	case bsoncore.TypeBoolean:
		return tagFalse
	case bsoncore.TypeDateTime:
		return tagDate
	case bsoncore.TypeTimestamp:
		return tagTimestamp
	case bsoncore.TypeRegex:
		return tagRegex
	case bsoncore.TypeDBPointer:
		return tagDBPointer
	case bsoncore.TypeJavaScript:
		return tagCode
	case bsoncore.TypeCodeWithScope:
		return tagCodeWithScope
	case bsoncore.TypeMaxKey:
		return tagMaxKey
	}
	return tagNull
}
