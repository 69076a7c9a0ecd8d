package bsonx

import (
	"bytes"
	"cmp"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Canonical type ranks, the values of MongoDB's canonicalizeBSONType. Types
// with equal ranks compare by value; the gaps are MongoDB's.
const (
	rankMinKey          = -1
	rankUndefined       = 0
	rankNull            = 5
	rankNumber          = 10
	rankString          = 15
	rankObject          = 20
	rankArray           = 25
	rankBinary          = 30
	rankObjectID        = 35
	rankBool            = 40
	rankDate            = 45
	rankTimestamp       = 47
	rankRegex           = 50
	rankDBPointer       = 55
	rankCode            = 60
	rankCodeWithScope   = 65
	rankMaxKey          = 127
	rankUnknownAsNull   = rankNull
	numberOfBSONTypeIDs = 256
)

// ranks maps every type byte to its rank; a table because CanonicalType sits
// on every comparison.
var ranks = func() (r [numberOfBSONTypeIDs]int8) {
	for i := range r {
		r[i] = rankUnknownAsNull
	}
	r[bsoncore.TypeMinKey] = rankMinKey
	r[bsoncore.TypeUndefined] = rankUndefined
	r[bsoncore.TypeNull] = rankNull
	r[bsoncore.TypeDouble] = rankNumber
	r[bsoncore.TypeInt32] = rankNumber
	r[bsoncore.TypeInt64] = rankNumber
	r[bsoncore.TypeDecimal128] = rankNumber
	r[bsoncore.TypeString] = rankString
	r[bsoncore.TypeSymbol] = rankString
	r[bsoncore.TypeEmbeddedDocument] = rankObject
	r[bsoncore.TypeArray] = rankArray
	r[bsoncore.TypeBinary] = rankBinary
	r[bsoncore.TypeObjectID] = rankObjectID
	r[bsoncore.TypeBoolean] = rankBool
	r[bsoncore.TypeDateTime] = rankDate
	r[bsoncore.TypeTimestamp] = rankTimestamp
	r[bsoncore.TypeRegex] = rankRegex
	r[bsoncore.TypeDBPointer] = rankDBPointer
	r[bsoncore.TypeJavaScript] = rankCode
	r[bsoncore.TypeCodeWithScope] = rankCodeWithScope
	r[bsoncore.TypeMaxKey] = rankMaxKey
	return r
}()

// CanonicalType returns MongoDB's canonical rank of type t (the numbers of
// canonicalizeBSONType: MinKey -1, Undefined 0, Null 5, numbers 10, String
// and Symbol 15, … MaxKey 127). Values of different ranks order by rank;
// values of equal rank order by value. A byte that is not a BSON type gets
// null's rank, because Compare treats unreadable values as null.
func CanonicalType(t bsoncore.Type) int {
	return int(ranks[t])
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b in
// MongoDB's order over BSON values with the simple collation (see the
// package comment). It is a total order: antisymmetric and transitive over
// all values, malformed ones included.
func Compare(a, b bsoncore.Value) int {
	at, ad := readTop(a)
	bt, bd := readTop(b)
	return compareValues(at, ad, bt, bd, 1, nil)
}

// Collator compares strings by a collation's rules (package collation's
// *Collator); nil is the simple, bytewise collation.
type Collator interface {
	Compare(a, b []byte) int
}

// CompareWith is Compare under a collation: strings and symbols, at any
// depth inside documents and arrays, compare by coll; field names, code and
// every other type compare as in Compare, as MongoDB's collation-aware
// comparison does. A nil coll is Compare.
func CompareWith(a, b bsoncore.Value, coll Collator) int {
	at, ad := readTop(a)
	bt, bd := readTop(b)
	return compareValues(at, ad, bt, bd, 1, coll)
}

// EqualWith is Equal under a collation (CompareWith).
func EqualWith(a, b bsoncore.Value, coll Collator) bool {
	return CompareWith(a, b, coll) == 0
}

// Equal reports whether a and b are equal in MongoDB's sense, which is
// Compare's: int32 1, int64 1, double 1.0 and decimal 1.00 are all equal,
// while documents with the same fields in another order are not.
func Equal(a, b bsoncore.Value) bool {
	return Compare(a, b) == 0
}

// CompareDocuments compares two documents as Compare compares them as
// embedded-document values: element by element (type rank, field name,
// value), a prefix sorting first.
func CompareDocuments(a, b bsoncore.Document) int {
	return Compare(
		bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: a},
		bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b},
	)
}

// readTop frames a top-level value, turning an unreadable one into null.
func readTop(v bsoncore.Value) (bsoncore.Type, []byte) {
	n, ok := ValueSize(v.Type, v.Data)
	if !ok {
		return bsoncore.TypeNull, nil
	}
	return v.Type, v.Data[:n]
}

// effectiveType is t, except that a container deeper than MaxDepth counts as
// null.
func effectiveType(t bsoncore.Type, depth int) bsoncore.Type {
	if depth > MaxDepth && isContainer(t) {
		return bsoncore.TypeNull
	}
	return t
}

// compareValues compares two framed values found at nesting depth depth.
func compareValues(at bsoncore.Type, ad []byte, bt bsoncore.Type, bd []byte, depth int, coll Collator) int {
	at, bt = effectiveType(at, depth), effectiveType(bt, depth)
	ra, rb := ranks[at], ranks[bt]
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch ra {
	case rankNumber:
		return compareNumbers(at, ad, bt, bd)
	case rankString:
		if coll != nil {
			return coll.Compare(stringBytes(ad), stringBytes(bd))
		}
		return bytes.Compare(stringBytes(ad), stringBytes(bd))
	case rankCode:
		return bytes.Compare(stringBytes(ad), stringBytes(bd))
	case rankObject:
		return compareElements(elements(ad), elements(bd), true, depth+1, coll)
	case rankArray:
		return compareElements(elements(ad), elements(bd), false, depth+1, coll)
	case rankBinary:
		// Length first, then subtype and bytes together.
		if c := cmp.Compare(len(ad), len(bd)); c != 0 {
			return c
		}
		return bytes.Compare(ad[4:], bd[4:])
	case rankObjectID:
		return bytes.Compare(ad, bd)
	case rankBool:
		return cmp.Compare(ad[0], bd[0])
	case rankDate:
		return cmp.Compare(int64(binary.LittleEndian.Uint64(ad)), int64(binary.LittleEndian.Uint64(bd)))
	case rankTimestamp:
		// The increment is the low word and the seconds the high word of one
		// little-endian uint64, so comparing it unsigned orders by seconds,
		// then increment.
		return cmp.Compare(binary.LittleEndian.Uint64(ad), binary.LittleEndian.Uint64(bd))
	case rankRegex:
		// Pattern, then options: both are C strings, so comparing the
		// NUL-terminated pattern first and the rest after is the same as
		// MongoDB's two strcmp calls.
		pa, pb := bytes.IndexByte(ad, 0), bytes.IndexByte(bd, 0)
		if c := bytes.Compare(ad[:pa], bd[:pb]); c != 0 {
			return c
		}
		return bytes.Compare(ad[pa+1:], bd[pb+1:])
	case rankDBPointer:
		// MongoDB compares the value's size, which is the namespace's
		// length, before its bytes (length prefix, namespace, NUL, ObjectId).
		if c := cmp.Compare(len(ad), len(bd)); c != 0 {
			return c
		}
		return bytes.Compare(ad, bd)
	case rankCodeWithScope:
		ca, sa := splitCodeWithScope(ad)
		cb, sb := splitCodeWithScope(bd)
		if c := bytes.Compare(ca, cb); c != 0 {
			return c
		}
		return compareElements(elements(sa), elements(sb), true, depth+1, nil)
	}
	// MinKey, Undefined, Null, MaxKey: one value each.
	return 0
}

// splitCodeWithScope returns the code bytes and the framed scope document of
// a framed code-with-scope value.
func splitCodeWithScope(v []byte) (code, scope []byte) {
	s, _ := stringSize(v[4:])
	return stringBytes(v[4 : 4+s]), v[4+s:]
}

// compareElements compares the element lists of two documents (named) or
// arrays whose elements sit at nesting depth depth.
func compareElements(a, b []byte, named bool, depth int, coll Collator) int {
	for {
		at, ak, av, ar, aok := NextElement(a)
		bt, bk, bv, br, bok := NextElement(b)
		switch {
		case !aok && !bok:
			return 0
		case !aok:
			return -1
		case !bok:
			return 1
		}
		// Type rank before field name, as MongoDB's BSONElement::woCompare.
		if c := cmp.Compare(ranks[effectiveType(at, depth)], ranks[effectiveType(bt, depth)]); c != 0 {
			return c
		}
		if named {
			if c := bytes.Compare(ak, bk); c != 0 {
				return c
			}
		}
		if c := compareValues(at, av, bt, bv, depth, coll); c != 0 {
			return c
		}
		a, b = ar, br
	}
}
