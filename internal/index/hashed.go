package index

import (
	"crypto/md5"
	"encoding/binary"
	"hash"
	"math"
	"math/big"
	"sync"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Hash is MongoDB's hash of a BSON value for hashed indexes and hashed shard
// keys (BSONElementHasher::hash64 with seed 0, hash version 0), so that
// Cairn's hashed keys, $toHashedIndexKey and chunk ranges agree with
// MongoDB's bit for bit.
//
// The function, as MongoDB publishes it (src/mongo/db/hasher.cpp): an MD5
// digest of the little-endian int32 seed (0), then the value, whose first
// eight bytes, read little-endian, are the int64 hash. A value is written as
// its canonical type rank (bsonx.CanonicalType) as a little-endian int32,
// then
//
//   - numbers of every type: the value converted to int64 as
//     BSONElement::safeNumberLongForHash does it (doubles truncate toward
//     zero, NaN is 0, values beyond the int64 range clamp to its ends except
//     that the double 2^63 gives -2^63, decimals round half to even), as
//     little-endian int64 — so 2, 2.3 and 2.9 hash alike, as the MongoDB
//     manual warns;
//   - documents and arrays: each element as a value preceded by its field
//     name and a NUL, then an end marker: the rank 0 alone (MongoDB hashes
//     the terminating EOO element, whose field name has size 0);
//   - code with scope: the code's bytes with their NUL, then the scope as a
//     document;
//   - anything else: the value's BSON bytes as stored (a string with its
//     length prefix and NUL).
//
// The test vectors of MongoDB's hasher_test.cpp and $toHashedIndexKey tests
// are checked in hashed_test.go. A value the bsonx rules cannot read hashes
// as null.
func Hash(v bsoncore.Value) int64 {
	h := hasherPool.Get().(*hasher)
	h.md.Reset()
	h.write(h.buf[:0], 0, 4) // the seed
	h.element(v.Type, nil, false, v.Data, 1)
	sum := h.md.Sum(h.sum[:0])
	hasherPool.Put(h)
	return int64(binary.LittleEndian.Uint64(sum))
}

// hasher is the scratch state of one Hash: MD5 allocates its state, and the
// hash runs on every insert into a hashed index.
type hasher struct {
	md  hash.Hash
	buf [8]byte
	sum [md5.Size]byte
}

var hasherPool = sync.Pool{New: func() any { return &hasher{md: md5.New()} }}

// write writes the n low bytes of x, little-endian.
func (h *hasher) write(b []byte, x uint64, n int) {
	b = binary.LittleEndian.AppendUint64(b, x)
	h.md.Write(b[:n])
}

// element hashes a value of type t whose bytes start data, preceded by its
// field name when withName (values inside documents and arrays).
func (h *hasher) element(t bsoncore.Type, name []byte, withName bool, data []byte, depth int) {
	n, ok := bsonx.ValueSize(t, data)
	if !ok || (depth > bsonx.MaxDepth && isContainer(t)) {
		t, data, n = bsoncore.TypeNull, nil, 0
	}
	data = data[:n]
	h.write(h.buf[:0], uint64(uint32(int32(bsonx.CanonicalType(t)))), 4)
	if withName {
		h.md.Write(name)
		h.md.Write(nul[:])
	}
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		h.write(h.buf[:0], uint64(hashNumber(t, data)), 8)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		h.elements(data, depth)
	case bsoncore.TypeCodeWithScope:
		// int32 total, then the code as a BSON string (int32 length counting
		// the NUL, the bytes, the NUL), then the scope document.
		if len(data) < 8 {
			h.elements(nil, depth)
			return
		}
		l := int(int32(binary.LittleEndian.Uint32(data[4:])))
		if l < 1 || 8+l > len(data) {
			h.elements(nil, depth)
			return
		}
		h.md.Write(data[8 : 8+l])
		h.elements(data[8+l:], depth)
	default:
		h.md.Write(data)
	}
}

// elements hashes the elements of a framed document or array, each with its
// field name, and the end marker MongoDB's iterator yields last: an EOO
// element, of rank 0, whose field name has size 0 and so adds nothing. (The
// published vectors for {} and [] decide this: writing a NUL for it fails
// them.)
func (h *hasher) elements(doc []byte, depth int) {
	var elems []byte
	if len(doc) >= 5 {
		elems = doc[4 : len(doc)-1]
	}
	for {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = rest
		h.element(t, key, true, val, depth+1)
	}
	h.write(h.buf[:0], 0, 4)
}

var nul = [1]byte{0}

// isContainer reports whether values of type t hold other values and so
// count toward bsonx.MaxDepth.
func isContainer(t bsoncore.Type) bool {
	return t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray || t == bsoncore.TypeCodeWithScope
}

// hashNumber is BSONElement::safeNumberLongForHash.
func hashNumber(t bsoncore.Type, d []byte) int64 {
	switch t {
	case bsoncore.TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(d)))
	case bsoncore.TypeInt64:
		return int64(binary.LittleEndian.Uint64(d))
	case bsoncore.TypeDouble:
		return doubleForHash(math.Float64frombits(binary.LittleEndian.Uint64(d)))
	}
	lo := binary.LittleEndian.Uint64(d)
	hi := binary.LittleEndian.Uint64(d[8:])
	return decimalForHash(bson.NewDecimal128(hi, lo))
}

// doubleForHash converts a double as safeNumberLongForHash does. The double
// 2^63 gives -2^63: older servers cast it with an overflowing C cast, and
// MongoDB keeps that result so that hashes on disk stay valid.
func doubleForHash(f float64) int64 {
	const twoTo63 = 9223372036854775808.0
	switch {
	case math.IsNaN(f):
		return 0
	case f == twoTo63:
		return math.MinInt64
	case f > twoTo63:
		return math.MaxInt64
	case f < -twoTo63:
		return math.MinInt64
	}
	return int64(f) // truncation toward zero
}

var (
	bigMaxInt64 = big.NewInt(math.MaxInt64)
	bigMinInt64 = big.NewInt(math.MinInt64)
	bigTen      = big.NewInt(10)
	// maxCoefficient is 10^34-1: a decimal128 coefficient above it is not
	// canonical and the value is zero (IEEE 754-2008, as bsonx reads it).
	maxCoefficient = new(big.Int).Sub(new(big.Int).Exp(bigTen, big.NewInt(34), nil), big.NewInt(1))
)

// decimalForHash converts a decimal as safeNumberLong does: NaN is 0, values
// beyond the int64 range (infinities included) clamp to its ends, and the
// rest round to the nearest integer, ties to even (Decimal128::toLong's
// default rounding mode).
func decimalForHash(d bson.Decimal128) int64 {
	if d.IsNaN() {
		return 0
	}
	switch d.IsInf() {
	case 1:
		return math.MaxInt64
	case -1:
		return math.MinInt64
	}
	c, exp, err := d.BigInt()
	if err != nil || c.CmpAbs(maxCoefficient) > 0 || c.Sign() == 0 {
		return 0
	}
	if exp >= 0 {
		if exp > 20 { // |c| >= 1, so |value| >= 10^21 > 2^63
			if c.Sign() > 0 {
				return math.MaxInt64
			}
			return math.MinInt64
		}
		v := new(big.Int).Mul(c, new(big.Int).Exp(bigTen, big.NewInt(int64(exp)), nil))
		return clampInt64(v)
	}
	if exp < -40 { // |value| < 10^34 × 10^-41 < 0.5
		return 0
	}
	div := new(big.Int).Exp(bigTen, big.NewInt(int64(-exp)), nil)
	q, r := new(big.Int).QuoRem(c, div, new(big.Int)) // truncated toward zero
	// Round half to even on the magnitude.
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if cmp := r2.Cmp(div); cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		if c.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		} else {
			q.Sub(q, big.NewInt(1))
		}
	}
	return clampInt64(q)
}

func clampInt64(v *big.Int) int64 {
	switch {
	case v.Cmp(bigMaxInt64) > 0:
		return math.MaxInt64
	case v.Cmp(bigMinInt64) < 0:
		return math.MinInt64
	}
	return v.Int64()
}
