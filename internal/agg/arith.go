package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// arithExprs are {op: ["$$a", "$$b"]} for the arithmetic accumulators need
// beyond int64 and float64 (decimal128), parsed once.
var arithExprs = map[string]expr.Expr{}

func init() {
	scope := expr.NewScope(nil, "a", "b")
	for _, op := range []string{"$add", "$divide"} {
		spec := bsoncore.NewDocumentBuilder().AppendArray(op,
			bsoncore.NewArrayBuilder().AppendString("$$a").AppendString("$$b").Build()).Build()
		e, err := expr.ParseIn(docValue(spec), scope)
		if err == nil {
			arithExprs[op] = e
		}
	}
}

// arith evaluates {op: [a, b]} with expr's arithmetic.
func arith(op string, a, b bsoncore.Value) (bsoncore.Value, error) {
	ctx := expr.NewContext(emptyDoc)
	ctx.SetVar("a", a)
	ctx.SetVar("b", b)
	return arithExprs[op].Eval(ctx)
}
