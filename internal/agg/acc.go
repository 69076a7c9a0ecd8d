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
	// partial is the accumulator's state as a value, and merge folds such
	// a state in: a $group over its memory budget spills partial states
	// to disk and merges them back (MongoDB's getValue(toBeMerged) and
	// process(merging)). Merging states in the order they were spilled
	// keeps $first, $last, $push and ties of $top in input order.
	partial() (bsoncore.Value, error)
	merge(p bsoncore.Value) error
}

// accKind describes one accumulator operator.
type accKind struct {
	// unary operators refuse an array argument (code 40237) since an
	// array literal would be one value, which is never what was meant.
	unary bool
	// noArg marks $count, whose argument must be {} and is not evaluated.
	noArg bool
	// make builds a group's accumulator; coll is the pipeline's collation
	// (nil: simple), for those that compare values.
	make func(coll expr.Collator) accumulator
	// parse, when set, parses the argument itself (the n-accumulators of
	// acc_n.go, whose argument is a specification object).
	parse func(op string, arg bsoncore.Value, pc *parseContext) (nAccArgs, error)
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
	coll expr.Collator // the pipeline's collation (nil: simple)
	arg  expr.Expr
	// n and makeN are set for the n-accumulators: n is evaluated once per
	// group (nil means 1) and makeN builds the group's accumulator.
	n     expr.Expr
	makeN func(n int64) accumulator
}

// newAcc returns a fresh accumulator for a group whose _id is id.
func (a *accSpec) newAcc(id bsoncore.Value, ctx *expr.Context) (accumulator, error) {
	if a.makeN == nil {
		return a.kind.make(a.coll), nil
	}
	if a.n == nil {
		return a.makeN(1), nil
	}
	root := emptyDoc
	if id.Type == bsoncore.TypeEmbeddedDocument {
		root = id.Data
	}
	ctx.Reset(root)
	n, err := evalN(a.n, ctx)
	if err != nil {
		return nil, err
	}
	return a.makeN(n), nil
}

// accOverhead approximates the bytes of an accumulator's fixed state.
const accOverhead = 32
