package agg

import (
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $push and $addToSet: every value, or every distinct value, as an array;
// missing values are skipped. $addToSet keeps first occurrences in input
// order (MongoDB leaves the order unspecified); values are distinct by
// MongoDB's comparison, so 1 and 1.0 are one value.

func init() {
	registerAcc("$push", accKind{unary: true, make: func() accumulator { return &pushAcc{} }})
	registerAcc("$addToSet", accKind{unary: true, make: func() accumulator { return &pushAcc{set: map[string]bool{}} }})
}

type pushAcc struct {
	vals []bsoncore.Value
	set  map[string]bool // non-nil for $addToSet: keystrings seen
}

func (a *pushAcc) add(v bsoncore.Value) (int64, error) {
	if v.Type == 0 {
		return 0, nil
	}
	grew := int64(len(v.Data) + 24)
	if a.set != nil {
		k := string(keystring.Append(nil, v))
		if a.set[k] {
			return 0, nil
		}
		a.set[k] = true
		grew += int64(len(k) + 16)
	}
	a.vals = append(a.vals, copyValue(v))
	return grew, nil
}

func (a *pushAcc) result() (bsoncore.Value, error) { return buildArray(a.vals), nil }

func (a *pushAcc) partial() (bsoncore.Value, error) { return buildArray(a.vals), nil }

func (a *pushAcc) merge(p bsoncore.Value) error {
	for _, v := range arrayValues(p) {
		if _, err := a.add(v); err != nil {
			return err
		}
	}
	return nil
}
