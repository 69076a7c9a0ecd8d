package agg

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Numeric accumulators: $sum, $avg, $count, $stdDevPop, $stdDevSamp. They
// ignore non-numeric values. $sum's result type is the widest type added
// (int32 widening to int64 when the total does not fit, int64 to double
// when it overflows), 0 when nothing was added; $avg is a double (a
// decimal128 if any input was one), null when nothing was added.

func init() {
	registerAcc("$sum", accKind{unary: true, make: func() accumulator { return &sumAcc{} }})
	registerAcc("$avg", accKind{unary: true, make: func() accumulator { return &sumAcc{avg: true} }})
	registerAcc("$count", accKind{noArg: true, make: func() accumulator { return &sumAcc{count: true} }})
	registerAcc("$stdDevPop", accKind{unary: true, make: func() accumulator { return &stdDevAcc{} }})
	registerAcc("$stdDevSamp", accKind{unary: true, make: func() accumulator { return &stdDevAcc{sample: true} }})
}

// numSum is an exact-as-possible running sum of numbers.
type numSum struct {
	typ     bsoncore.Type // widest type added (0 when none)
	i       int64         // integer total while no double/decimal and no overflow
	f       float64       // double total
	overflw bool          // the integer total overflowed: f holds it
	dec     bsoncore.Value
	n       int64
}

func (s *numSum) add(v bsoncore.Value) error {
	if !isNumber(v) {
		return nil
	}
	if s.dec.Type != 0 || v.Type == bsoncore.TypeDecimal128 {
		// Decimal totals use expr's $add, which implements decimal128.
		prev := s.dec
		if prev.Type == 0 {
			prev = decimalZero
			if s.n > 0 {
				prev = s.nonDecimal()
			}
		}
		d, err := arith("$add", prev, v)
		if err != nil {
			return err
		}
		s.dec, s.typ = d, bsoncore.TypeDecimal128
		s.n++
		return nil
	}
	s.n++
	if v.Type == bsoncore.TypeDouble {
		f, _ := v.DoubleOK()
		s.typ = bsoncore.TypeDouble
		s.f += f
		return nil
	}
	var i int64
	if v.Type == bsoncore.TypeInt32 {
		i32, _ := v.Int32OK()
		i = int64(i32)
	} else {
		i, _ = v.Int64OK()
	}
	if s.typ == 0 || s.typ == bsoncore.TypeInt32 && v.Type == bsoncore.TypeInt64 {
		s.typ = v.Type
	}
	s.f += float64(i)
	if !s.overflw {
		r := s.i + i
		if (r > s.i) != (i > 0) {
			s.overflw = true
		} else {
			s.i = r
		}
	}
	return nil
}

// nonDecimal is the total of the non-decimal values so far.
func (s *numSum) nonDecimal() bsoncore.Value {
	switch {
	case s.typ == bsoncore.TypeDouble || s.overflw:
		return expr.Double(s.f)
	case s.typ == bsoncore.TypeInt32:
		return expr.IntOrLong(s.i)
	}
	return expr.Int64(s.i)
}

func (s *numSum) total() bsoncore.Value {
	switch {
	case s.typ == 0:
		return expr.Int32(0)
	case s.dec.Type != 0:
		return s.dec
	}
	return s.nonDecimal()
}

// numSum's state as a document, for spilling: {t, i, f, o, d, n}.
func (s *numSum) partial() bsoncore.Value {
	fs := []field{
		{"t", expr.Int32(int32(s.typ))}, {"i", expr.Int64(s.i)}, {"f", expr.Double(s.f)},
		{"o", expr.Bool(s.overflw)}, {"n", expr.Int64(s.n)},
	}
	if s.dec.Type != 0 {
		fs = append(fs, field{"d", s.dec})
	}
	return docValue(buildDoc(fs))
}

// mergeSum folds another sum's partial in.
func (s *numSum) merge(p bsoncore.Value) error {
	fs := fieldsOf(p)
	o := numSum{dec: getField(fs, "d")}
	if t, ok := getField(fs, "t").Int32OK(); ok {
		o.typ = bsoncore.Type(t)
	}
	o.i, _ = getField(fs, "i").Int64OK()
	o.f, _ = getField(fs, "f").DoubleOK()
	o.overflw, _ = getField(fs, "o").BooleanOK()
	o.n, _ = getField(fs, "n").Int64OK()
	if o.n == 0 {
		return nil
	}
	if s.dec.Type != 0 || o.dec.Type != 0 {
		a, b := s.total(), o.total()
		if s.n == 0 {
			a = decimalZero
		}
		d, err := arith("$add", a, b)
		if err != nil {
			return err
		}
		s.dec, s.typ, s.n = d, bsoncore.TypeDecimal128, s.n+o.n
		return nil
	}
	s.f += o.f
	s.n += o.n
	if typeRank(o.typ) > typeRank(s.typ) {
		s.typ = o.typ
	}
	if o.overflw {
		s.overflw = true
	}
	if !s.overflw {
		r := s.i + o.i
		if (r > s.i) != (o.i > 0) && o.i != 0 {
			s.overflw = true
		} else {
			s.i = r
		}
	}
	return nil
}

// typeRank orders the numeric types a sum widens through.
func typeRank(t bsoncore.Type) int {
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

type sumAcc struct {
	sum        numSum
	avg, count bool
}

func (a *sumAcc) add(v bsoncore.Value) (int64, error) {
	if a.count {
		v = expr.Int32(1)
	}
	return 0, a.sum.add(v)
}

func (a *sumAcc) partial() (bsoncore.Value, error) { return a.sum.partial(), nil }

func (a *sumAcc) merge(p bsoncore.Value) error { return a.sum.merge(p) }

func (a *sumAcc) result() (bsoncore.Value, error) {
	if !a.avg {
		return a.sum.total(), nil
	}
	if a.sum.n == 0 {
		return expr.Null, nil
	}
	if a.sum.dec.Type != 0 {
		return arith("$divide", a.sum.dec, expr.Int64(a.sum.n))
	}
	if a.sum.typ != bsoncore.TypeDouble && !a.sum.overflw {
		return expr.Double(float64(a.sum.i) / float64(a.sum.n)), nil
	}
	return expr.Double(a.sum.f / float64(a.sum.n)), nil
}

// stdDevAcc is Welford's running variance over the numbers as doubles.
type stdDevAcc struct {
	sample   bool
	n        int64
	mean, m2 float64
}

func (a *stdDevAcc) add(v bsoncore.Value) (int64, error) {
	if !isNumber(v) {
		return 0, nil
	}
	f, _ := bsonx.AsFloat64(v)
	a.n++
	d := f - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (f - a.mean)
	return 0, nil
}

func (a *stdDevAcc) partial() (bsoncore.Value, error) {
	return docValue(buildDoc([]field{{"n", expr.Int64(a.n)}, {"m", expr.Double(a.mean)}, {"s", expr.Double(a.m2)}})), nil
}

// merge combines two running variances (Chan et al.'s parallel form).
func (a *stdDevAcc) merge(p bsoncore.Value) error {
	fs := fieldsOf(p)
	n, _ := getField(fs, "n").Int64OK()
	mean, _ := getField(fs, "m").DoubleOK()
	m2, _ := getField(fs, "s").DoubleOK()
	if n == 0 {
		return nil
	}
	total := a.n + n
	delta := mean - a.mean
	a.m2 += m2 + delta*delta*float64(a.n)*float64(n)/float64(total)
	a.mean += delta * float64(n) / float64(total)
	a.n = total
	return nil
}

func (a *stdDevAcc) result() (bsoncore.Value, error) {
	n := a.n
	if a.sample {
		n--
	}
	if n <= 0 {
		return expr.Null, nil
	}
	return expr.Double(math.Sqrt(a.m2 / float64(n))), nil
}
