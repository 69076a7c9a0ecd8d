package update

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $addToSet: append a value (or each of $each's) unless the array already
// holds an equal one. Equality is MongoDB's comparison: 1 equals 1.0, and
// documents are equal only with the same fields in the same order.

func init() { register("$addToSet", parseAddToSet) }

type addToSetNode struct{ values []bsoncore.Value }

func parseAddToSet(_ path, arg bsoncore.Value) (updNode, error) {
	var vals []bsoncore.Value
	if arg.Type == bsoncore.TypeEmbeddedDocument && len(arg.Data) > 5 {
		t, key, val, rest, ok := bsonx.NextElement(arg.Data[4 : len(arg.Data)-1])
		if ok && string(key) == "$each" {
			if t != bsoncore.TypeArray {
				return nil, typeMismatch("The argument to $each in $addToSet must be an array but it was of type %s", typeName(t))
			}
			if len(rest) > 0 {
				return nil, badValue("Found unexpected fields after $each in $addToSet: %s", arg.String())
			}
			vals = arrayValues(bsoncore.Value{Type: t, Data: val})
		}
	}
	if vals == nil && !isEach(arg) {
		vals = []bsoncore.Value{arg}
	}
	// Deduplicate, keeping the first of equal values.
	n := &addToSetNode{}
	for _, v := range vals {
		if !containsValue(n.values, v) {
			n.values = append(n.values, v)
		}
	}
	return n, nil
}

func isEach(arg bsoncore.Value) bool {
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(arg.Data) <= 5 {
		return false
	}
	_, key, _, _, ok := bsonx.NextElement(arg.Data[4 : len(arg.Data)-1])
	return ok && string(key) == "$each"
}

func containsValue(vals []bsoncore.Value, v bsoncore.Value) bool {
	for _, x := range vals {
		if bsonx.Compare(x, v) == 0 {
			return true
		}
	}
	return false
}

func (n *addToSetNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		arr := emptyArrayNode()
		for _, v := range n.values {
			arr.kids = append(arr.kids, kid{n: newNode(v)})
		}
		return s.create(c, arr)
	}
	if !c.elem.isArray() {
		return badValue("Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", c.name(), typeName(c.elem.t))
	}
	if !c.elem.open {
		if _, ok := c.elem.arrayLen(); !ok {
			return c.elem.expand() // reports the malformed array
		}
	}
	existing := arrayValues(c.elem.value())
	var add []bsoncore.Value
	for _, v := range n.values {
		if containsValue(existing, v) {
			continue
		}
		if err := checkDepth(len(c.taken)+1, v); err != nil {
			return err
		}
		add = append(add, v)
	}
	if len(add) == 0 {
		return nil
	}
	if !c.elem.open {
		c.elem.appendClosed(len(existing), add)
		return s.replaced(c)
	}
	for _, v := range add {
		c.elem.kids = append(c.elem.kids, kid{n: newNode(v)})
	}
	return s.replaced(c)
}
