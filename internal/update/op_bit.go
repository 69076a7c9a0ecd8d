package update

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $bit: bitwise and/or/xor on int32 and int64 fields, applied in the order
// given. int32 with int32 stays int32; an int64 on either side makes int64.

func init() { register("$bit", parseBit) }

type bitOp struct {
	op      string // "and", "or", "xor"
	operand bsoncore.Value
}

type bitNode struct{ ops []bitOp }

func parseBit(_ path, arg bsoncore.Value) (updNode, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", typeName(arg.Type))
	}
	n := &bitNode{}
	elems := arg.Data[4 : len(arg.Data)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = rest
		v := bsoncore.Value{Type: t, Data: val}
		switch string(key) {
		case "and", "or", "xor":
		default:
			return nil, badValue("The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: {%s: %s}", key, key, v.String())
		}
		if t != bsoncore.TypeInt32 && t != bsoncore.TypeInt64 {
			return nil, badValue("The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: {%s: %s}", typeName(t), key, v.String())
		}
		n.ops = append(n.ops, bitOp{op: string(key), operand: v})
	}
	if len(n.ops) == 0 {
		return nil, badValue("You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
	}
	return n, nil
}

func (n *bitNode) run(v bsoncore.Value) bsoncore.Value {
	for _, o := range n.ops {
		x, y := toInt(v), toInt(o.operand)
		var r int64
		switch o.op {
		case "and":
			r = x & y
		case "or":
			r = x | y
		default:
			r = x ^ y
		}
		if v.Type == bsoncore.TypeInt32 && o.operand.Type == bsoncore.TypeInt32 {
			v = int32Value(int32(r))
		} else {
			v = int64Value(r)
		}
	}
	return v
}

func (n *bitNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		return s.create(c, newNode(n.run(int32Value(0))))
	}
	old := c.elem.value()
	if old.Type != bsoncore.TypeInt32 && old.Type != bsoncore.TypeInt64 {
		return badValue("Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s", s.idString(), c.name(), typeName(old.Type))
	}
	v := n.run(old)
	if sameBytes(v, old) {
		return nil
	}
	c.elem.set(v)
	return s.replaced(c)
}
