package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// accumulator folds the values of one output field of one group.
type accumulator interface {
	// add folds v (possibly Missing) in and reports how many bytes the
	// accumulator's state grew by, for the stage's memory accounting. v
	// is only valid during the call.
	add(v bsoncore.Value) (grew int64, err error)
	// result is the accumulated value.
	result() (bsoncore.Value, error)
}

// accKind describes one accumulator operator.
type accKind struct {
	// unary operators refuse an array argument (code 40237) since an
	// array literal would be one value, which is never what was meant.
	unary bool
	// noArg marks $count, whose argument must be {} and is not evaluated.
	noArg bool
	make  func() accumulator
}

// accumulators is the registry of $group accumulators; acc_*.go files fill
// it in init.
var accumulators = map[string]accKind{}

func registerAcc(name string, k accKind) { accumulators[name] = k }

// accSpec is one parsed output field of $group: name: {op: arg}.
type accSpec struct {
	name string
	op   string
	kind accKind
	arg  expr.Expr
}

// accOverhead approximates the bytes of an accumulator's fixed state.
const accOverhead = 32
