package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Summation is the running state of MongoDB's $sum and $avg (its
// AccumulatorSum and AccumulatorAvg), shared by the accumulators of $group
// and the expression forms so both answer alike:
//
//   - int32, int64 and double inputs go into one compensated double-double
//     sum (MongoDB's DoubleDoubleSummation: about 107 bits, so sums of
//     integers stay exact well past int64 and sums of doubles lose less
//     than a plain running sum);
//   - decimal128 inputs go into a separate decimal total, rounded to 34
//     digits at each step as Decimal128::add rounds;
//   - the result's type is the widest input type: an int32 total that no
//     longer fits int32 is an int64, an integer total past int64 a double,
//     and with any decimal input the decimal total plus the double-double
//     sum converted with 34 significant digits (not the 15 that $add uses
//     for a double).
type Summation struct {
	typ                  bsoncore.Type // widest numeric type added; 0 before any
	sum, addend, special float64       // DoubleDoubleSummation; special is a plain sum for NaN and infinities
	dec                  decimal       // decimal inputs' total; coef nil before any
	n                    int64         // numbers added
}

// Add adds v when it is a number and reports whether it was.
func (s *Summation) Add(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		if !ok {
			return false
		}
		s.addDouble(float64(i))
	case bsoncore.TypeInt64:
		i, ok := v.Int64OK()
		if !ok {
			return false
		}
		s.addLong(i)
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		if !ok {
			return false
		}
		s.addDouble(f)
	case bsoncore.TypeDecimal128:
		d, ok := decimalOf(v)
		if !ok {
			return false
		}
		s.addDecimal(d)
	default:
		return false
	}
	s.n++
	s.widen(v.Type)
	return true
}

// widen records that a number of type t was added: the result's type is
// the widest, int32 < int64 < double < decimal128.
func (s *Summation) widen(t bsoncore.Type) {
	if numericRank(t) > numericRank(s.typ) {
		s.typ = t
	}
}

func numericRank(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeInt32:
		return 1
	case bsoncore.TypeInt64:
		return 2
	case bsoncore.TypeDouble:
		return 3
	case bsoncore.TypeDecimal128:
		return 4
	}
	return 0
}

func (s *Summation) addDecimal(d decimal) {
	if s.dec.coef == nil && s.dec.special == 0 {
		s.dec = d
		return
	}
	s.dec = s.dec.add(d).rounded()
}

// addLong splits x into two doubles so that the sum stays exact.
func (s *Summation) addLong(x int64) {
	high := x / (1 << 32) * (1 << 32)
	s.addDouble(float64(x - high))
	s.addDouble(float64(high))
}

// addDouble is MongoDB's compensated step: Fast2Sum of x and the addend,
// then 2Sum into the sum, the lowest part kept in the addend.
func (s *Summation) addDouble(x float64) {
	s.special += x
	x, s.addend = fast2Sum(x, s.addend)
	s.sum, x = twoSum(s.sum, x)
	s.addend += x
}

func fast2Sum(a, b float64) (float64, float64) {
	s := a + b
	z := s - a
	return s, b - z
}

func twoSum(a, b float64) (float64, float64) {
	s := a + b
	ap := s - b
	bp := s - ap
	return s, (a - ap) + (b - bp)
}

// Count is how many numbers were added.
func (s *Summation) Count() int64 { return s.n }

// double is the double nearest the non-decimal total.
func (s *Summation) double() float64 {
	if math.IsNaN(s.sum) {
		return s.special
	}
	return s.sum
}

// fitsLong reports whether the non-decimal total rounds to an int64.
func (s *Summation) fitsLong() bool {
	switch {
	case s.sum > -0x1p63 && s.sum < 0x1p63:
		return true
	case s.sum == 0x1p63:
		return s.addend < -0.5
	case s.sum == -0x1p63:
		return s.addend >= -0.5
	}
	return false
}

// long is the non-decimal total rounded to an integer (half away from
// zero); fitsLong must hold.
func (s *Summation) long() int64 {
	if s.sum == 0x1p63 {
		return math.MaxInt64 + int64(math.Round(s.addend+1))
	}
	return int64(math.Round(s.sum)) + int64(math.Round(s.addend))
}

// decimalTotal is the whole total as a decimal.
func (s *Summation) decimalTotal() decimal {
	var nd decimal
	if math.IsInf(s.sum, 0) || math.IsNaN(s.sum) {
		nd = decimalFromDouble34(s.special)
	} else {
		nd = decimalFromDouble34(s.sum).add(decimalFromDouble34(s.addend)).rounded()
	}
	if s.dec.coef == nil && s.dec.special == 0 {
		return nd
	}
	return s.dec.add(nd)
}

// decimalFromDouble34 is Decimal128(double, kRoundTo34Digits): an integral
// double converts exactly, with exponent 0; any other finite double is its
// exact binary value rounded to 34 significant digits.
func decimalFromDouble34(f float64) decimal {
	if f == math.Trunc(f) && math.Abs(f) < 0x1p63 {
		return decimalFromInt(int64(f))
	}
	return decimalFromFloatDigits(f, decimalDigits)
}

// Sum is $sum's result: 0 (int32) when nothing was added.
func (s *Summation) Sum() bsoncore.Value {
	switch s.typ {
	case bsoncore.TypeDecimal128:
		return s.decimalTotal().value()
	case bsoncore.TypeDouble:
		return Double(s.double())
	case bsoncore.TypeInt64:
		if s.fitsLong() {
			return Int64(s.long())
		}
		return Double(s.double())
	}
	if s.fitsLong() {
		return IntOrLong(s.long())
	}
	return Double(s.double())
}

// Avg is $avg's result: null when nothing was added, a decimal when any
// input was one, else a double.
func (s *Summation) Avg() bsoncore.Value {
	switch {
	case s.n == 0:
		return Null
	case s.typ == bsoncore.TypeDecimal128:
		return s.decimalTotal().div(decimalFromInt(s.n)).value()
	}
	return Double(s.double() / float64(s.n))
}

// SummationState is a Summation's state as plain values, for spilling and
// merging partial totals.
type SummationState struct {
	Type                 bsoncore.Type
	Sum, Addend, Special float64
	Decimal              bsoncore.Value // zero Value when no decimal was added
	N                    int64
}

// State returns s as plain values.
func (s *Summation) State() SummationState {
	st := SummationState{Type: s.typ, Sum: s.sum, Addend: s.addend, Special: s.special, N: s.n}
	if s.dec.coef != nil || s.dec.special != 0 {
		st.Decimal = s.dec.value()
	}
	return st
}

// Merge folds another summation's state into s, as MongoDB merges the
// partial totals of shards.
func (s *Summation) Merge(o SummationState) {
	if o.N == 0 {
		return
	}
	s.n += o.N
	s.widen(o.Type)
	special := s.special + o.Special
	s.addDouble(o.Sum)
	s.addDouble(o.Addend)
	s.special = special
	if d, ok := decimalOf(o.Decimal); ok {
		s.addDecimal(d)
	}
}
