package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $min and $max: the smallest or largest value in MongoDB's order (strings
// by the pipeline's collation),
// ignoring null, undefined and missing; null when only those were seen.

func init() {
	registerAcc("$min", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &minMaxAcc{sign: -1, coll: coll} }})
	registerAcc("$max", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &minMaxAcc{sign: 1, coll: coll} }})
}

type minMaxAcc struct {
	sign int // -1 keeps the smallest, 1 the largest
	coll expr.Collator
	best bsoncore.Value
}

func (a *minMaxAcc) add(v bsoncore.Value) (int64, error) {
	if expr.IsNullish(v) {
		return 0, nil
	}
	if a.best.Type == 0 || expr.CompareWith(v, a.best, a.coll)*a.sign > 0 {
		grew := int64(len(v.Data) - len(a.best.Data))
		a.best = copyValue(v)
		return grew, nil
	}
	return 0, nil
}

func (a *minMaxAcc) partial() (bsoncore.Value, error) {
	return buildArray([]bsoncore.Value{a.best}), nil
}

func (a *minMaxAcc) merge(p bsoncore.Value) error {
	for _, v := range arrayValues(p) {
		if _, err := a.add(v); err != nil {
			return err
		}
	}
	return nil
}

func (a *minMaxAcc) result() (bsoncore.Value, error) {
	if a.best.Type == 0 {
		return expr.Null, nil
	}
	return a.best, nil
}
