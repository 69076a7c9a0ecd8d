package keystring

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Every number is encoded by its mathematical value alone (the invariant
// "Numeric identity"). A finite nonzero |x| is written in binary scientific
// form 1.f × 2^e, where f is cut to fracBits bits: int64 magnitudes (at most
// 2^63) and doubles (53-bit significands) always fit, so for them the form is
// exact; only a decimal128 can be inexact, and then a tail carrying its exact
// decimal digits follows (see appendFinite).
const fracBits = 62

// binaryForm is a finite nonzero magnitude (1 + frac/2^62) × 2^e, truncated
// toward zero when inexact is set.
type binaryForm struct {
	e       int
	frac    uint64 // the 62 bits after the leading 1, in bits 61..0
	inexact bool   // the magnitude lies strictly above this form, below the next one
}

// magClass is a range of binary exponents [lo, lo+2^bits) sharing one tag;
// the offset e-lo is the first bits of the chunk stream. Narrow classes cost
// tags, wide ones cost offset bits, so the classes are narrow where numbers
// are common (integers up to 2^64), and wide enough elsewhere to keep every
// double within bits+52 <= 63 stream bits, i.e. nine chunks.
type magClass struct {
	lo   int
	bits uint
}

const numClasses = 36

var magClasses = func() (c [numClasses]magClass) {
	c[0] = magClass{lo: -2048 - 1<<16, bits: 16} // below every double: decimals only
	c[1] = magClass{lo: -2048, bits: 11}         // (0, 1): the doubles' fractions
	for k := range 32 {
		c[2+k] = magClass{lo: 2 * k, bits: 1} // [1, 2^64): integers
	}
	c[34] = magClass{lo: 64, bits: 10}   // [2^64, 2^1088): large doubles
	c[35] = magClass{lo: 1088, bits: 16} // above every double: decimals only
	return c
}()

// classOf returns the class of binary exponent e, which must lie in
// minBinaryExp..maxBinaryExp.
func classOf(e int) int {
	switch {
	case e < -2048:
		return 0
	case e < 0:
		return 1
	case e < 64:
		return 2 + e/2
	case e < 1088:
		return 34
	}
	return 35
}

// maxChunks is the number of 7-bit chunks of a class's longest stream, that
// of an inexact decimal.
func (c magClass) maxChunks() int {
	return (int(c.bits) + fracBits + 6) / 7
}

// The binary exponents of decimal128 magnitudes, from 10^-6176 to just under
// 10^6145; those of doubles lie well inside.
const (
	minBinaryExp = -20517
	maxBinaryExp = 20414
)

// appendNumber appends the encoding of a framed int32, int64, double or
// decimal128.
func appendNumber(dst []byte, t bsoncore.Type, d []byte) []byte {
	switch t {
	case bsoncore.TypeInt32:
		return appendInt(dst, int64(int32(binary.LittleEndian.Uint32(d))))
	case bsoncore.TypeInt64:
		return appendInt(dst, int64(binary.LittleEndian.Uint64(d)))
	case bsoncore.TypeDouble:
		return appendDouble(dst, math.Float64frombits(binary.LittleEndian.Uint64(d)))
	}
	return appendDecimal(dst, d)
}

func appendInt(dst []byte, i int64) []byte {
	if i == 0 {
		return append(dst, tagZero)
	}
	u := uint64(i)
	if i < 0 {
		u = -u // right for math.MinInt64 too
	}
	return appendFinite(dst, i < 0, uintBinary(u), 0, nil)
}

func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, tagNaN)
	case math.IsInf(f, 1):
		return append(dst, tagPosInf)
	case math.IsInf(f, -1):
		return append(dst, tagNegInf)
	case f == 0:
		return append(dst, tagZero) // -0 too
	}
	return appendFinite(dst, f < 0, doubleBinary(f), 0, nil)
}

func appendDecimal(dst []byte, d []byte) []byte {
	dec := readDecimal(d)
	switch dec.class {
	case classNaN:
		return append(dst, tagNaN)
	case classPosInf:
		return append(dst, tagPosInf)
	case classNegInf:
		return append(dst, tagNegInf)
	case classZero:
		return append(dst, tagZero)
	}
	b := decimalBinary(dec.hi, dec.lo, dec.exp)
	if !b.inexact {
		return appendFinite(dst, dec.class == classNeg, b, 0, nil)
	}
	var buf [40]byte
	coef := appendUint128(buf[:0], dec.hi, dec.lo)
	return appendFinite(dst, dec.class == classNeg, b, len(coef)-1+dec.exp, bytes.TrimRight(coef, "0"))
}

// appendFinite appends a finite nonzero number: the tag of its sign and
// magnitude class, then the magnitude as chunks, then for an inexact decimal
// the tail. Negative numbers complement everything after the tag, so that a
// larger magnitude sorts first.
//
// Chunks: the stream (offset e-lo in the class's bits, then the fraction with
// its trailing zero bits dropped) is cut into 7-bit groups, each written as
// group<<1 | more, more being 1 on every chunk but the last. A shorter
// stream thus sorts before any longer one it is a prefix of, which is right
// because the longer one has more nonzero fraction bits.
//
// Inexact decimals write all maxChunks chunks with more=1, which sorts them
// after the exact value they truncate to (whose last chunk has more=0) and
// before the next exact value (larger bits). Between themselves they order
// by the tail: the decimal's adjusted exponent (+6176, two bytes) and its
// significant digits in pairs (1+10a+b per pair, a trailing odd digit taken
// as a pair with 0), then 0x00. All decimals in one bucket share a sign, so
// comparing (adjusted exponent, digits) is comparing values.
func appendFinite(dst []byte, neg bool, b binaryForm, adj int, digits []byte) []byte {
	c := classOf(b.e)
	tag := byte(tagPosFirst + c)
	if neg {
		tag = byte(tagNegFirst + numClasses - 1 - c)
	}
	dst = append(dst, tag)
	start := len(dst)
	dst = appendChunks(dst, magClasses[c], b)
	if b.inexact {
		a := uint16(adj + decimalBias)
		dst = append(dst, byte(a>>8), byte(a))
		for i := 0; i < len(digits); i += 2 {
			pair := (digits[i] - '0') * 10
			if i+1 < len(digits) {
				pair += digits[i+1] - '0'
			}
			dst = append(dst, 1+pair)
		}
		dst = append(dst, 0)
	}
	if neg {
		invert(dst[start:])
	}
	return dst
}

func appendChunks(dst []byte, c magClass, b binaryForm) []byte {
	s := c.bits
	// The stream, left-aligned in hi:lo: s offset bits, then 62 fraction bits.
	hi := uint64(b.e-c.lo)<<(64-s) | b.frac<<2>>s
	lo := b.frac << 2 << (64 - s)
	var n uint
	switch {
	case b.inexact:
		n = s + fracBits
	case b.frac == 0:
		n = s
	default:
		n = s + fracBits - uint(bits.TrailingZeros64(b.frac))
	}
	chunks := int(n+6) / 7
	for i := range chunks {
		chunk := byte(hi>>57) << 1
		hi = hi<<7 | lo>>57
		lo <<= 7
		if i+1 < chunks || b.inexact {
			chunk |= 1
		}
		dst = append(dst, chunk)
	}
	return dst
}

// uintBinary is the binary form of u > 0. Only a decimal coefficient can
// have 64 significant bits and so be inexact.
func uintBinary(u uint64) binaryForm {
	lz := bits.LeadingZeros64(u)
	f := u << lz << 1 // the bits after the leading 1, left-aligned
	return binaryForm{e: 63 - lz, frac: f >> 2, inexact: f&2 != 0}
}

// doubleBinary is the (always exact) binary form of finite nonzero |f|.
func doubleBinary(f float64) binaryForm {
	b := math.Float64bits(f) &^ (1 << 63)
	exp, mant := int(b>>52), b&(1<<52-1)
	if exp == 0 { // subnormal: mant × 2^-1074
		lz := bits.LeadingZeros64(mant)
		return binaryForm{e: 63 - lz - 1074, frac: mant << lz << 1 >> 2}
	}
	return binaryForm{e: exp - 1023, frac: mant << (fracBits - 52)}
}

// decimalBinary is the binary form of coefficient (hi, lo) × 10^exp, a
// positive decimal128 magnitude. It is computed exactly with big integers:
// decimals are rare in keys, and a decimal's exponent may reach ±6176.
func decimalBinary(hi, lo uint64, exp int) binaryForm {
	if hi == 0 && exp == 0 {
		return uintBinary(lo)
	}
	var num, den, t big.Int
	num.SetUint64(hi)
	num.Lsh(&num, 64)
	num.Or(&num, t.SetUint64(lo))
	den.SetUint64(1)
	if exp > 0 {
		num.Mul(&num, pow10(exp))
	} else if exp < 0 {
		den.Set(pow10(-exp))
	}
	// 2^(e-1) < num/den < 2^(e+1); settle which side of 2^e it lies.
	e := num.BitLen() - den.BitLen()
	if e >= 0 {
		if t.Lsh(&den, uint(e)); num.Cmp(&t) < 0 {
			e--
		}
	} else if t.Lsh(&num, uint(-e)); t.Cmp(&den) < 0 {
		e--
	}
	// floor(num/den × 2^(62-e)) has exactly 63 bits: the leading 1 and f.
	if sh := fracBits - e; sh >= 0 {
		num.Lsh(&num, uint(sh))
	} else {
		den.Lsh(&den, uint(-sh))
	}
	var q, r big.Int
	q.QuoRem(&num, &den, &r)
	return binaryForm{e: e, frac: q.Uint64() &^ (1 << fracBits), inexact: r.Sign() != 0}
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Decimal128 (IEEE 754-2008, binary integer decimal) fields.
const (
	decimalBias   = 6176 // value = coefficient × 10^(biased exponent - 6176)
	maxDecimalExp = 6111 // largest exponent of the coefficient's last digit
	decimalDigits = 34
	// 10^34-1, the largest canonical coefficient, as two words.
	maxCoefficientHi = 0x0001ed09bead87c0
	maxCoefficientLo = 0x378d8e63ffffffff
)

type decimalClass int8

const (
	classNaN decimalClass = iota
	classNegInf
	classNeg
	classZero
	classPos
	classPosInf
)

type decimal struct {
	class  decimalClass
	hi, lo uint64 // coefficient of a finite nonzero value
	exp    int
}

// readDecimal reads a BID decimal128. Non-canonical coefficients (above
// 10^34-1) are zero, as IEEE 754-2008 and MongoDB have it.
func readDecimal(d []byte) decimal {
	lo := binary.LittleEndian.Uint64(d)
	hi := binary.LittleEndian.Uint64(d[8:])
	neg := hi>>63 == 1
	switch {
	case hi>>58&0x1f == 0x1f:
		return decimal{class: classNaN}
	case hi>>58&0x1f == 0x1e:
		if neg {
			return decimal{class: classNegInf}
		}
		return decimal{class: classPosInf}
	case hi>>61&3 == 3: // implies a coefficient >= 2^113
		return decimal{class: classZero}
	}
	exp := int(hi>>49&0x3fff) - decimalBias
	hi &= 1<<49 - 1
	if hi == 0 && lo == 0 || hi > maxCoefficientHi || hi == maxCoefficientHi && lo > maxCoefficientLo {
		return decimal{class: classZero}
	}
	if neg {
		return decimal{class: classNeg, hi: hi, lo: lo, exp: exp}
	}
	return decimal{class: classPos, hi: hi, lo: lo, exp: exp}
}

// appendUint128 appends the decimal digits of hi·2^64+lo, hi < 2^49.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	q, r := bits.Div64(hi, lo, 1e19) // q < 2^113/10^19 fits a word
	dst = strconv.AppendUint(dst, q, 10)
	var low [20]byte
	digits := strconv.AppendUint(low[:0], r, 10)
	for range 19 - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// appendBSON appends m as the narrowest BSON number that holds it exactly:
// int32, int64, double, or else decimal128.
func (m finite) appendBSON(dst []byte) (bsoncore.Type, []byte, error) {
	if m.inexact {
		var buf [decimalDigits]byte
		digits := buf[:0]
		for _, p := range m.pairs[:m.npairs] {
			digits = append(digits, '0'+(p-1)/10, '0'+(p-1)%10)
		}
		digits = bytes.TrimRight(digits, "0") // the pad of an odd digit count
		return appendDecimal128(dst, m.neg, digits, m.adj-(len(digits)-1))
	}
	if m.e < minBinaryExp || m.e > maxBinaryExp {
		return 0, dst, errNumber
	}
	mant := 1<<fracBits | m.frac // |x| = mant × 2^(e-62)
	tz := bits.TrailingZeros64(mant)
	odd := mant >> tz
	low := m.e - fracBits + tz // |x| = odd × 2^low
	if low >= 0 && m.e <= 63 {
		u := odd << low
		switch {
		case !m.neg && u <= math.MaxInt32:
			return bsoncore.TypeInt32, bsoncore.AppendInt32(dst, int32(u)), nil
		case !m.neg && u <= math.MaxInt64:
			return bsoncore.TypeInt64, bsoncore.AppendInt64(dst, int64(u)), nil
		case m.neg && u <= 1<<31:
			return bsoncore.TypeInt32, bsoncore.AppendInt32(dst, int32(-int64(u))), nil
		case m.neg && u <= 1<<63:
			return bsoncore.TypeInt64, bsoncore.AppendInt64(dst, int64(-u)), nil
		}
	}
	if m.e <= 1023 && low >= -1074 && m.e-low <= 52 {
		f := math.Ldexp(float64(odd), low)
		if m.neg {
			f = -f
		}
		return bsoncore.TypeDouble, bsoncore.AppendDouble(dst, f), nil
	}
	// Only a decimal holds it. odd is odd, so odd × 5^k has no trailing
	// zero and needs more than 34 digits once k > 48; odd × 2^low sheds at
	// most 27 trailing zeros (5^27 < 2^63) and needs more than 34 digits
	// well before low reaches 300. Those bounds keep fuzzed input cheap.
	var n big.Int
	n.SetUint64(odd)
	q := 0
	switch {
	case low > 300 || low < -48:
		return 0, dst, errNumber
	case low >= 0:
		n.Lsh(&n, uint(low))
	default:
		n.Mul(&n, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-low)), nil))
		q = low
	}
	var buf [100]byte
	digits := n.Append(buf[:0], 10)
	trimmed := bytes.TrimRight(digits, "0")
	q += len(digits) - len(trimmed)
	return appendDecimal128(dst, m.neg, trimmed, q)
}

// appendDecimal128 appends the decimal128 with the given sign, coefficient
// digits (ASCII, at most 34) and exponent, when one exists.
func appendDecimal128(dst []byte, neg bool, digits []byte, q int) (bsoncore.Type, []byte, error) {
	if len(digits) == 0 || len(digits) > decimalDigits {
		return 0, dst, errNumber
	}
	// An exponent above the largest is fine while zeros fit the coefficient.
	var buf [decimalDigits]byte
	if q > maxDecimalExp && len(digits)+q-maxDecimalExp <= decimalDigits {
		digits = append(append(buf[:0], digits...), bytes.Repeat([]byte{'0'}, q-maxDecimalExp)...)
		q = maxDecimalExp
	}
	if q > maxDecimalExp || q < -decimalBias {
		return 0, dst, errNumber
	}
	var hi, lo uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, dst, errNumber
		}
		h, l := bits.Mul64(lo, 10)
		var carry uint64
		lo, carry = bits.Add64(l, uint64(c-'0'), 0)
		hi = hi*10 + h + carry
	}
	high := uint64(q+decimalBias)<<49 | hi
	if neg {
		high |= 1 << 63
	}
	return bsoncore.TypeDecimal128, bsoncore.AppendDecimal128(dst, high, lo), nil
}
