// Package keystring encodes BSON values as byte strings whose bytewise order
// is MongoDB's order of the values, so that Pebble's key order is index
// order. Storage keys are concatenations: d/<coll>/enc(_id) for documents,
// i/<index>/enc(k1)…enc(kn)/enc(_id) for index entries.
//
// # Invariants
//
// Order: for all values a and b, bytes.Compare(Append(nil, a),
// Append(nil, b)) has the sign of bsonx.Compare(a, b), and
// bytes.Compare(AppendDesc(nil, a), AppendDesc(nil, b)) the opposite sign.
// This holds for malformed values too, because Append reads values with
// bsonx's own rules (an unreadable value is null; an unreadable element ends
// its document; containers beyond bsonx.MaxDepth are null).
//
// Equality: Append(nil, a) and Append(nil, b) are the same bytes exactly when
// bsonx.Compare(a, b) == 0. In particular (Numeric identity) numbers that
// compare equal encode identically whatever their types: int32 1, int64 1,
// double 1.0 and decimal 1.00 are all 31 00. Symbols encode as strings.
//
// Self-delimiting: no encoding, ascending or descending, is a proper prefix
// of another. So enc(k1)‖enc(k2)‖… sorts as the tuple (k1, k2, …), whatever
// mix of ascending and descending parts it has, and Len finds each part's end.
//
// Collated keys order as the collation: AppendCollated and
// AppendDescCollated (an index with a collation) encode every string and
// symbol, at any depth, as its collation key (package collation), so
// bytes.Compare of two such encodings has the sign of bsonx.CompareWith
// under that collation (TestCollatedOrder). Such encodings keep the other
// invariants but Round trip: a collation key does not decode to its string.
//
// Direction: the first byte of an ascending encoding lies in [0x01, 0x7f],
// that of a descending one in [0x80, 0xfe]; Len and Decode tell them apart by
// it. Descending encodings are the byte-wise complement of ascending ones.
//
// Round trip: Decode(Append(nil, v)) returns a value v' with
// bsonx.Compare(v, v') == 0 and Append(nil, v') equal to Append(nil, v).
// Numbers come back in the narrowest exact type (int32, int64, double,
// decimal128), symbols as strings, arrays with keys "0", "1", …; everything
// else exactly.
//
// Exact round trip (typebits.go): what an encoding loses of a value (number
// types, a decimal's exponent, a negative zero, symbols) is written apart,
// as type bits, by a TypeBitsWriter; TypeBitsReader.Retype of the decoded
// value with those bits is the value, byte for byte. Index entries keep the
// bits in their values, as MongoDB's KeyString keeps its TypeBits beside
// the key: the key itself must compare by value alone.
//
// Canonical: Decode accepts only bytes that Append or AppendDesc produce
// (the fuzz target FuzzDecode checks that whatever Decode accepts re-encodes
// to the same bytes). Len checks structure only. Neither panics on any input.
//
// # Byte layout (ascending)
//
// Each value starts with a tag that orders the types:
//
//	0x01 MinKey      0x02 Undefined     0x03 Null
//	0x08 NaN         0x09 -Infinity
//	0x0a…0x2d negative finite numbers, by magnitude class, largest first
//	0x2e zero (and -0)
//	0x2f…0x52 positive finite numbers, by magnitude class, smallest first
//	0x53 +Infinity
//	0x60 String, Symbol   0x64 Object     0x68 Array       0x6c BinData
//	0x70 ObjectId         0x74 false      0x75 true        0x78 Date
//	0x7a Timestamp        0x7b Regex      0x7c DBPointer   0x7d JavaScript
//	0x7e JavaScript with scope            0x7f MaxKey
//
// What follows the tag:
//
//   - MinKey, Undefined, Null, MaxKey, booleans, NaN, ±Infinity, zero:
//     nothing.
//   - Finite nonzero numbers: |x| = 1.f × 2^e. The tag's magnitude class
//     fixes a range of e: [-67584, -2049] (decimals only) with 16 offset
//     bits; [-2048, -1] with 11; [0, 63] in 32 classes of two exponents with
//     1 offset bit; [64, 1087] with 10; [1088, 66623] (decimals only) with 16.
//     The stream (offset e-lo, then the 62 bits of f with trailing zero bits
//     dropped) follows in 7-bit chunks, each shifted left by one with the
//     low bit set on all chunks but the last. Integers below 2^7 take 2
//     bytes, below 2^14 3 bytes, below 2^21 4; every int64 and every double
//     takes at most 10. A decimal128 whose value is not exactly 1.f × 2^e with 62 bits of
//     f writes all chunks with the low bit set (max 12), then a tail:
//     adjusted exponent + 6176 (2 bytes, big-endian), significant digits in
//     pairs as 1+10a+b (an odd last digit paired with 0), 0x00. Negative
//     numbers complement every byte after the tag.
//   - String, Symbol, JavaScript: the bytes with 0x00 written 0x00 0xff,
//     then 0x00 0x00.
//   - Object: per element a rank byte (the lowest tag of the value's type:
//     0x08 for every number, 0x74 for booleans), the escaped field name as
//     for strings, the value's encoding; then 0x00.
//   - Array: the elements' encodings, then 0x00. Keys are not encoded.
//   - BinData: length (see below), subtype byte, the bytes.
//   - ObjectId: its 12 bytes.
//   - Date: int64 milliseconds with the sign bit flipped, big-endian.
//   - Timestamp: seconds then increment, 4 bytes each, big-endian.
//   - Regex: pattern, 0x00, options, 0x00 (C strings hold no NUL).
//   - DBPointer: namespace length (see below), namespace bytes, ObjectId.
//   - JavaScript with scope: code as a string, then the scope as Object's
//     elements and 0x00.
//
// Lengths are order-preserving varints: 0xxxxxxx; 10xxxxxx + 1 byte;
// 110xxxxx + 2; 1110xxxx + 3; 0xf0 + 4 bytes big-endian; always the shortest.
//
// The layout is on disk: changing it means rewriting every key. Golden
// encodings in the tests pin it.
package keystring
