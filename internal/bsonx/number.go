package bsonx

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// numClass splits the numbers into classes that order among themselves
// before any magnitude is looked at: NaN < -Inf < negatives < zeros <
// positives < +Inf.
type numClass int8

const (
	classNaN numClass = iota - 3
	classNegInf
	classNeg
	classZero
	classPos
	classPosInf
)

// The largest canonical decimal128 coefficient, 10^34-1, as two words.
const (
	maxCoefficientHi = 0x0001ed09bead87c0
	maxCoefficientLo = 0x378d8e63ffffffff
)

// compareNumbers compares two framed numeric values of any numeric types.
func compareNumbers(at bsoncore.Type, ad []byte, bt bsoncore.Type, bd []byte) int {
	if at == bsoncore.TypeDecimal128 || bt == bsoncore.TypeDecimal128 {
		return compareWithDecimal(at, ad, bt, bd)
	}
	aDouble, bDouble := at == bsoncore.TypeDouble, bt == bsoncore.TypeDouble
	switch {
	case !aDouble && !bDouble:
		return cmp.Compare(intOf(at, ad), intOf(bt, bd))
	case aDouble && bDouble:
		// cmp.Compare on floats is MongoDB's compareDoubles: NaN equals NaN
		// and sorts first, -0 equals 0.
		return cmp.Compare(doubleOf(ad), doubleOf(bd))
	case aDouble:
		return -compareIntToDouble(intOf(bt, bd), doubleOf(ad))
	default:
		return compareIntToDouble(intOf(at, ad), doubleOf(bd))
	}
}

func intOf(t bsoncore.Type, d []byte) int64 {
	if t == bsoncore.TypeInt32 {
		return int64(int32(binary.LittleEndian.Uint32(d)))
	}
	return int64(binary.LittleEndian.Uint64(d))
}

func doubleOf(d []byte) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(d))
}

// compareIntToDouble compares exactly; converting i to float64 would round
// above 2^53 and make int64 2^53+1 equal double 2^53.
func compareIntToDouble(i int64, f float64) int {
	if math.IsNaN(f) {
		return 1
	}
	// Integers of magnitude up to 2^53 convert to float64 exactly.
	const precise = 1 << 53
	if -precise <= i && i <= precise {
		return cmp.Compare(float64(i), f)
	}
	// Outside [-2^63, 2^63) f (or ±Inf) is beyond every int64.
	if f >= 0x1p63 {
		return -1
	}
	if f < -0x1p63 {
		return 1
	}
	// |i| > 2^53 here, so truncating f cannot turn an inequality into an
	// equality: either f is an integer (|f| >= 2^53) or it is far from i.
	return cmp.Compare(i, int64(f))
}

// compareWithDecimal compares two numbers at least one of which is a
// decimal128, exactly.
func compareWithDecimal(at bsoncore.Type, ad []byte, bt bsoncore.Type, bd []byte) int {
	ca, cb := classify(at, ad), classify(bt, bd)
	if ca != cb {
		return cmp.Compare(ca, cb)
	}
	switch ca {
	case classPos:
		return compareMagnitudes(at, ad, bt, bd)
	case classNeg:
		return -compareMagnitudes(at, ad, bt, bd)
	}
	return 0
}

func classify(t bsoncore.Type, d []byte) numClass {
	switch t {
	case bsoncore.TypeDecimal128:
		c, _, _, _ := readDecimal(d)
		return c
	case bsoncore.TypeDouble:
		f := doubleOf(d)
		switch {
		case math.IsNaN(f):
			return classNaN
		case math.IsInf(f, -1):
			return classNegInf
		case math.IsInf(f, 1):
			return classPosInf
		}
		return signClass(cmp.Compare(f, 0))
	}
	return signClass(cmp.Compare(intOf(t, d), 0))
}

func signClass(sign int) numClass {
	return numClass(sign) // classNeg, classZero and classPos are -1, 0, 1
}

// readDecimal reads a BID-encoded decimal128: its class, and for finite
// nonzero values the coefficient (hi, lo) and exponent, value = coefficient
// × 10^exp.
func readDecimal(d []byte) (c numClass, hi, lo uint64, exp int) {
	lo = binary.LittleEndian.Uint64(d)
	hi = binary.LittleEndian.Uint64(d[8:])
	neg := hi>>63 == 1
	switch {
	case hi>>58&0x1f == 0x1f:
		return classNaN, 0, 0, 0
	case hi>>58&0x1f == 0x1e:
		if neg {
			return classNegInf, 0, 0, 0
		}
		return classPosInf, 0, 0, 0
	case hi>>61&3 == 3:
		// The "11" combination field implies a coefficient of at least
		// 2^113 > 10^34-1: non-canonical, hence zero.
		return classZero, 0, 0, 0
	}
	exp = int(hi>>49&0x3fff) - 6176
	hi &= 1<<49 - 1
	if hi == 0 && lo == 0 || hi > maxCoefficientHi || hi == maxCoefficientHi && lo > maxCoefficientLo {
		return classZero, 0, 0, 0
	}
	if neg {
		return classNeg, hi, lo, exp
	}
	return classPos, hi, lo, exp
}

// magnitude is a finite nonzero absolute value in decimal scientific form,
// d1.d2…dn × 10^adj with d1 and dn not '0', so that two magnitudes compare by
// adj and then by their digit strings, bytewise.
type magnitude struct {
	adj    int
	digits []byte
}

func (m magnitude) compare(o magnitude) int {
	if m.adj != o.adj {
		return cmp.Compare(m.adj, o.adj)
	}
	return bytes.Compare(m.digits, o.digits)
}

// newMagnitude makes the magnitude of coef × 10^exp, coef being the decimal
// digits of a positive integer without leading zeros.
func newMagnitude(coef []byte, exp int) magnitude {
	adj := len(coef) - 1 + exp
	return magnitude{adj: adj, digits: bytes.TrimRight(coef, "0")}
}

// compareMagnitudes compares |a| and |b|, both finite and nonzero, one of
// them a decimal128. Buffers live on the stack: no allocation.
func compareMagnitudes(at bsoncore.Type, ad []byte, bt bsoncore.Type, bd []byte) int {
	var bufA, bufB [40]byte
	switch {
	case at == bsoncore.TypeDouble:
		return -compareDecimalToDouble(decimalMagnitude(bd, bufB[:0]), doubleOf(ad))
	case bt == bsoncore.TypeDouble:
		return compareDecimalToDouble(decimalMagnitude(ad, bufA[:0]), doubleOf(bd))
	}
	return numberMagnitude(at, ad, bufA[:0]).compare(numberMagnitude(bt, bd, bufB[:0]))
}

// numberMagnitude is the magnitude of a finite nonzero int32, int64 or
// decimal128.
func numberMagnitude(t bsoncore.Type, d []byte, buf []byte) magnitude {
	if t == bsoncore.TypeDecimal128 {
		return decimalMagnitude(d, buf)
	}
	i := intOf(t, d)
	u := uint64(i)
	if i < 0 {
		u = -u // also right for math.MinInt64
	}
	return newMagnitude(strconv.AppendUint(buf, u, 10), 0)
}

func decimalMagnitude(d []byte, buf []byte) magnitude {
	_, hi, lo, exp := readDecimal(d)
	return newMagnitude(appendUint128(buf, hi, lo), exp)
}

// appendUint128 appends the decimal digits of hi·2^64+lo, hi < 2^49.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	// Split at 10^19: the quotient is below 2^113/10^19 and fits a word.
	q, r := bits.Div64(hi, lo, 1e19)
	dst = strconv.AppendUint(dst, q, 10)
	var low [20]byte
	digits := strconv.AppendUint(low[:0], r, 10)
	for range 19 - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

// compareDecimalToDouble compares the magnitude of a decimal with |f|, f
// finite and nonzero. A binary fraction has an exact decimal expansion, but
// a long one (up to 767 significant digits), so it is only produced when the
// decimal exponents of the two numbers are too close to decide.
func compareDecimalToDouble(dec magnitude, f float64) int {
	f = math.Abs(f)
	// 2^(e-1) <= f < 2^e bounds f's decimal exponent; widen the bounds by
	// one against rounding in the logarithm.
	_, e := math.Frexp(f)
	if dec.adj > int(math.Floor(float64(e)*log10of2))+1 {
		return 1
	}
	if dec.adj < int(math.Floor(float64(e-1)*log10of2))-1 {
		return -1
	}
	if f < 0x1p63 && f == math.Trunc(f) {
		var buf [20]byte
		return dec.compare(newMagnitude(strconv.AppendUint(buf[:0], uint64(f), 10), 0))
	}
	var buf [800]byte
	return dec.compare(exactDoubleMagnitude(f, buf[:0]))
}

// exactDoubleMagnitude expands positive finite f exactly. strconv prints the
// exact binary value when asked for more digits than it has; 767 fractional
// digits in 'e' form cover every double.
func exactDoubleMagnitude(f float64, buf []byte) magnitude {
	s := strconv.AppendFloat(buf, f, 'e', 767, 64) // d.ddd…e±XX
	e := bytes.IndexByte(s, 'e')
	exp := 0
	for _, c := range s[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if s[e+1] == '-' {
		exp = -exp
	}
	// Drop the decimal point: move the leading digit next to the others.
	s[1] = s[0]
	coef := s[1:e]
	return newMagnitude(coef, exp-(len(coef)-1))
}

// log10of2 converts binary exponents to decimal ones.
const log10of2 = math.Ln2 / math.Ln10
