package agg

import (
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $push and $addToSet: every value, or every distinct value, as an array;
// missing values are skipped. $addToSet keeps first occurrences in input
// order (MongoDB leaves the order unspecified); values are distinct by
// MongoDB's comparison, so 1 and 1.0 are one value.
//
// Each accumulator holds at most maxPushBytes (MongoDB's
// internalQueryMaxPushBytes and internalQueryMaxAddToSetBytes); past it
// the stage fails with ExceededMemoryLimit (146) even with allowDiskUse, as
// in MongoDB: one array cannot be spilled. This bounds the stages that hold
// accumulator states outside their budget ($bucketAuto's buckets, a
// spilled $group's merged groups, window functions).

func init() {
	registerAcc("$push", accKind{unary: true, make: func() accumulator { return &pushAcc{op: "$push", limit: maxPushBytes} }})
	registerAcc("$addToSet", accKind{unary: true, make: func() accumulator {
		return &pushAcc{op: "$addToSet", limit: maxPushBytes, set: map[string]bool{}}
	}})
}

const (
	maxPushBytes       = 100 << 20
	codeExceededMemory = mongoerr.Code(146) // ExceededMemoryLimit
)

type pushAcc struct {
	op    string
	vals  []bsoncore.Value
	set   map[string]bool // non-nil for $addToSet: keystrings seen
	bytes int64           // what vals and set hold
	limit int64
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
	if a.bytes += grew; a.bytes > a.limit {
		return 0, errorf(codeExceededMemory, "%s used too much memory and cannot spill to disk. Memory limit: %d bytes", a.op, a.limit)
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
