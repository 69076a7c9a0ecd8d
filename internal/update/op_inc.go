package update

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $inc and $mul: arithmetic on numbers, with MongoDB's SafeNum promotion
// rules: int32 op int32 stays int32 unless it overflows (then int64); an
// int64 result that overflows is an error, not a double; any double makes
// a double; any decimal128 makes a decimal128.

func init() {
	register("$inc", parseArith("$inc", "increment"))
	register("$mul", parseArith("$mul", "multiply"))
}

type arithNode struct {
	op  string // "$inc" or "$mul"
	val bsoncore.Value
}

func parseArith(op, verb string) opParser {
	return func(p path, arg bsoncore.Value) (updNode, error) {
		if !isNumber(arg.Type) {
			return nil, typeMismatch("Cannot %s with non-numeric argument: {%s: %s}", verb, p, arg.String())
		}
		return &arithNode{op: op, val: arg}, nil
	}
}

func isNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

func (n *arithNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		v := n.val
		if n.op == "$mul" {
			// A missing field becomes 0 of the multiplier's type.
			var ok bool
			if v, ok = arith("$mul", n.val, int32Value(0)); !ok {
				return badValue("Failed to apply $mul operations to current value for document {%s}", s.idString())
			}
		}
		return s.create(c, newNode(v))
	}
	old := c.elem.value()
	if !isNumber(old.Type) {
		return typeMismatch("Cannot apply %s to a value of non-numeric type. {%s} has the field '%s' of non-numeric type %s", n.op, s.idString(), c.name(), typeName(old.Type))
	}
	v, ok := arith(n.op, n.val, old)
	if !ok {
		return badValue("Failed to apply %s operations to current value (%s) for document {%s}", n.op, old.String(), s.idString())
	}
	if sameBytes(v, old) {
		return nil
	}
	c.elem.set(v)
	return s.replaced(c)
}

// arith computes a op b ("$inc": a+b, "$mul": a*b); ok is false when the
// result does not fit its type (an int64 overflow).
func arith(op string, a, b bsoncore.Value) (bsoncore.Value, bool) {
	switch {
	case a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128:
		return decimalArith(op, a, b)
	case a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble:
		x, y := toFloat(a), toFloat(b)
		if op == "$inc" {
			return doubleValue(x + y), true
		}
		return doubleValue(x * y), true
	}
	x, y := toInt(a), toInt(b)
	if a.Type == bsoncore.TypeInt32 && b.Type == bsoncore.TypeInt32 {
		// Two int32s never overflow an int64.
		r := x + y
		if op == "$mul" {
			r = x * y
		}
		if r >= math.MinInt32 && r <= math.MaxInt32 {
			return int32Value(int32(r)), true
		}
		return int64Value(r), true
	}
	if op == "$inc" {
		r := x + y
		if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
			return bsoncore.Value{}, false
		}
		return int64Value(r), true
	}
	r, ok := mulInt64(x, y)
	return int64Value(r), ok
}

func mulInt64(x, y int64) (int64, bool) {
	if x == 0 || y == 0 {
		return 0, true
	}
	neg := (x < 0) != (y < 0)
	ux, uy := absU(x), absU(y)
	hi, lo := bits.Mul64(ux, uy)
	if hi != 0 {
		return 0, false
	}
	if neg {
		if lo > 1<<63 {
			return 0, false
		}
		return int64(-lo), true //nolint:gosec // -lo fits: lo <= 2^63
	}
	if lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x) //nolint:gosec // MinInt64 wraps to 2^63, as wanted
	}
	return uint64(x)
}

// decimalArith delegates decimal128 arithmetic to package expr, whose $add
// and $multiply follow MongoDB's decimal rules (a double operand converts
// with 15 significant digits).
func decimalArith(op string, a, b bsoncore.Value) (bsoncore.Value, bool) {
	name := "$add"
	if op == "$mul" {
		name = "$multiply"
	}
	arr := bsoncore.NewArrayBuilder().AppendValue(a).AppendValue(b).Build()
	spec := bsoncore.NewDocumentBuilder().AppendArray(name, arr).Build()
	e, err := expr.Parse(docValue(spec))
	if err != nil {
		return bsoncore.Value{}, false
	}
	v, err := e.Eval(expr.NewContext(bsoncore.Document{5, 0, 0, 0, 0}))
	if err != nil || v.Type != bsoncore.TypeDecimal128 {
		return bsoncore.Value{}, false
	}
	return v, true
}

func toFloat(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(v.Data))
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return float64(toInt(v))
	}
	return 0
}

func toInt(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(v.Data)))
	case bsoncore.TypeInt64:
		return int64(binary.LittleEndian.Uint64(v.Data))
	}
	return 0
}

func int32Value(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: binary.LittleEndian.AppendUint32(nil, uint32(i))}
}

func int64Value(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: binary.LittleEndian.AppendUint64(nil, uint64(i))}
}

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))}
}

// idString renders the document's _id for messages: "_id: 1".
func (s *applyState) idString() string {
	id := idOf(s.root)
	if id.Type == 0 {
		return "no id"
	}
	return "_id: " + id.String()
}
