package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $push and $addToSet: every value, or every distinct value, as an array;
// missing values are skipped. $addToSet keeps first occurrences in input
// order (MongoDB leaves the order unspecified); values are distinct by
// MongoDB's comparison, so 1 and 1.0 are one value, and strings equal
// under the pipeline's collation are one value (the first seen is kept).
//
// Each accumulator that keeps values ($push, $addToSet and the
// n-accumulators of acc_n.go) holds at most maxAccBytes (MongoDB's
// internalQueryMaxPushBytes, internalQueryMaxAddToSetBytes and
// internalQueryTopNAccumulatorBytes); past it the stage fails with
// ExceededMemoryLimit (146) even with allowDiskUse, as in MongoDB: one
// accumulator cannot be spilled. This bounds the stages that hold
// accumulator states outside their budget ($bucketAuto's buckets, a
// spilled $group's merged groups, window functions).

func init() {
	registerAcc("$push", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &pushAcc{accBudget: newAccBudget("$push")} }})
	registerAcc("$addToSet", accKind{unary: true, make: func(coll expr.Collator) accumulator {
		return &pushAcc{accBudget: newAccBudget("$addToSet"), set: map[string]bool{}, coll: coll}
	}})
}

const (
	maxAccBytes        = 100 << 20
	codeExceededMemory = mongoerr.ExceededMemoryLimit // ExceededMemoryLimit
)

// accBudget counts the bytes one accumulator holds against its limit.
type accBudget struct {
	op          string
	used, limit int64
}

func newAccBudget(op string) accBudget { return accBudget{op: op, limit: maxAccBytes} }

// charge adds grew bytes (negative when values were dropped).
func (b *accBudget) charge(grew int64) error {
	if b.used += grew; b.used > b.limit {
		return errorf(codeExceededMemory, "%s used too much memory and cannot spill to disk. Memory limit: %d bytes", b.op, b.limit)
	}
	return nil
}

type pushAcc struct {
	accBudget
	vals []bsoncore.Value
	set  map[string]bool // non-nil for $addToSet: keystrings seen
	coll expr.Collator   // $addToSet's collation: strings equal under it are one value
}

func (a *pushAcc) add(v bsoncore.Value) (int64, error) {
	if v.Type == 0 {
		return 0, nil
	}
	grew := int64(len(v.Data) + 24)
	if a.set != nil {
		k := string(keystring.AppendCollated(nil, v, a.coll))
		if a.set[k] {
			return 0, nil
		}
		a.set[k] = true
		grew += int64(len(k) + 16)
	}
	if err := a.charge(grew); err != nil {
		return 0, err
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
