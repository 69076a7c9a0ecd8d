package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $first and $last: the value for the group's first or last document in
// input order (a preceding $sort defines it); a missing value counts, and
// comes out as null.

func init() {
	registerAcc("$first", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &firstLastAcc{} }})
	registerAcc("$last", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &firstLastAcc{last: true} }})
}

type firstLastAcc struct {
	last bool
	seen bool
	v    bsoncore.Value
}

func (a *firstLastAcc) add(v bsoncore.Value) (int64, error) {
	if a.seen && !a.last {
		return 0, nil
	}
	grew := int64(len(v.Data) - len(a.v.Data))
	a.seen = true
	a.v = copyValue(v)
	return grew, nil
}

// partial is [] before any value, else [{v: value}] ({} when the value
// was missing, which still counts as seen).
func (a *firstLastAcc) partial() (bsoncore.Value, error) {
	if !a.seen {
		return buildArray(nil), nil
	}
	if a.v.Type == 0 {
		return buildArray([]bsoncore.Value{docValue(emptyDoc)}), nil
	}
	return buildArray([]bsoncore.Value{docValue(buildDoc([]field{{"v", a.v}}))}), nil
}

func (a *firstLastAcc) merge(p bsoncore.Value) error {
	vals := arrayValues(p)
	if len(vals) == 0 {
		return nil
	}
	_, err := a.add(lookupPath(vals[0], []string{"v"}))
	return err
}

func (a *firstLastAcc) result() (bsoncore.Value, error) {
	if a.v.Type == 0 {
		return expr.Null, nil
	}
	return a.v, nil
}
