package agg

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$limit", parseLimit) }

// limitStage is $limit: the first n documents.
type limitStage struct{ n int64 }

// nonNegativeLong is MongoDB's parseIntegerElementToNonNegativeLong: a
// number with an exact non-negative integral value that fits an int64.
func nonNegativeLong(v bsoncore.Value) (int64, string) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		if i < 0 {
			return 0, "Expected a non-negative number"
		}
		return int64(i), ""
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		if i < 0 {
			return 0, "Expected a non-negative number"
		}
		return i, ""
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		switch {
		case math.IsNaN(f) || f != math.Trunc(f) || f >= math.MaxInt64 || f < math.MinInt64:
			return 0, "Expected an integer"
		case f < 0:
			return 0, "Expected a non-negative number"
		}
		return int64(f), ""
	case bsoncore.TypeDecimal128:
		// Integral decimals are accepted by MongoDB; converting exactly needs
		// the expr package's decimal support, so go through $toLong.
		n, ok := decimalToInt64(v)
		if !ok {
			return 0, "Expected an integer"
		}
		if n < 0 {
			return 0, "Expected a non-negative number"
		}
		return n, ""
	}
	return 0, "Expected an integer"
}

func parseLimit(arg bsoncore.Value, _ *parseContext) (stage, error) {
	n, why := nonNegativeLong(arg)
	if why != "" {
		return nil, errorf(codeLimitArg, "invalid argument to $limit stage: %s", why)
	}
	if n == 0 {
		return nil, errorf(codeLimitPositive, "the limit must be positive")
	}
	return &limitStage{n}, nil
}

func (l *limitStage) open(_ *runContext, in Source) (Source, error) {
	var seen int64
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if seen >= l.n {
			return nil, nil
		}
		seen++
		return in.Next()
	}}, nil
}
