package agg

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Numeric accumulators: $sum, $avg, $count, $stdDevPop, $stdDevSamp. They
// ignore non-numeric values. $sum's result type is the widest type added
// (int32 widening to int64 when the total does not fit, an integer total
// past int64 a double), 0 when nothing was added; $avg is a double (a
// decimal128 if any input was one), null when nothing was added. Totals are
// kept as MongoDB keeps them (see expr.Summation).

func init() {
	registerAcc("$sum", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &sumAcc{} }})
	registerAcc("$avg", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &sumAcc{avg: true} }})
	registerAcc("$count", accKind{noArg: true, make: func(coll expr.Collator) accumulator { return &sumAcc{count: true} }})
	registerAcc("$stdDevPop", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &stdDevAcc{} }})
	registerAcc("$stdDevSamp", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &stdDevAcc{sample: true} }})
}

// numSum is $sum's and $avg's running total: expr.Summation, which the
// expression forms share, so that {$sum: "$x"} in $group and {$sum: [..]}
// in $project answer alike (MongoDB's AccumulatorSum/AccumulatorAvg).
type numSum struct{ expr.Summation }

func (s *numSum) add(v bsoncore.Value) error {
	s.Add(v)
	return nil
}

func (s *numSum) total() bsoncore.Value { return s.Sum() }

// numSum's state as a document, for spilling: {t, s, a, x, n, d}.
func (s *numSum) partial() bsoncore.Value {
	st := s.State()
	fs := []field{
		{"t", expr.Int32(int32(st.Type))}, {"s", expr.Double(st.Sum)}, {"a", expr.Double(st.Addend)},
		{"x", expr.Double(st.Special)}, {"n", expr.Int64(st.N)},
	}
	if st.Decimal.Type != 0 {
		fs = append(fs, field{"d", st.Decimal})
	}
	return docValue(buildDoc(fs))
}

// merge folds another sum's partial in.
func (s *numSum) merge(p bsoncore.Value) error {
	fs := fieldsOf(p)
	st := expr.SummationState{Decimal: getField(fs, "d")}
	if t, ok := getField(fs, "t").Int32OK(); ok {
		st.Type = bsoncore.Type(t)
	}
	st.Sum, _ = getField(fs, "s").DoubleOK()
	st.Addend, _ = getField(fs, "a").DoubleOK()
	st.Special, _ = getField(fs, "x").DoubleOK()
	st.N, _ = getField(fs, "n").Int64OK()
	s.Merge(st)
	return nil
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
	if a.avg {
		return a.sum.Avg(), nil
	}
	return a.sum.total(), nil
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
