package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Accumulator operators in expression form: $sum $avg $min $max. With one
// argument that is an array they fold its elements; with several they
// fold the arguments (arrays among them are not expanded). $sum and $avg
// ignore non-numbers ($sum of none is 0, $avg of none null); $min and $max
// ignore null, undefined and missing (null when nothing is left).

func init() {
	register("$sum", parseVariadic("$sum", evalSumAvg(false)))
	register("$avg", parseVariadic("$avg", evalSumAvg(true)))
	register("$min", collated(parseVariadic("$min", nil), evalMinMax(-1)))
	register("$max", collated(parseVariadic("$max", nil), evalMinMax(1)))
}

// operands is the values an accumulator expression folds.
func operands(vals []bsoncore.Value) []bsoncore.Value {
	if len(vals) == 1 && vals[0].Type == bsoncore.TypeArray {
		return arrayValues(vals[0])
	}
	return vals
}

func evalSumAvg(avg bool) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
		var s Summation
		for _, v := range operands(vals) {
			s.Add(v)
		}
		if avg {
			return s.Avg(), nil
		}
		return s.Sum(), nil
	}
}

func evalMinMax(sign int) collatedEval {
	return func(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
		best := Missing
		for _, v := range operands(vals) {
			if IsNullish(v) {
				continue
			}
			if best.Type == 0 || CompareWith(v, best, coll)*sign > 0 {
				best = v
			}
		}
		if best.Type == 0 {
			return Null, nil
		}
		return best, nil
	}
}
