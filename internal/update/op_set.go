package update

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $set, $setOnInsert and $unset: write a value at a path, or remove it.

func init() {
	register("$set", func(_ path, arg bsoncore.Value) (updNode, error) { return &setNode{val: arg}, nil })
	register("$setOnInsert", func(_ path, arg bsoncore.Value) (updNode, error) {
		return &setNode{val: arg, onInsert: true}, nil
	})
	register("$unset", func(path, bsoncore.Value) (updNode, error) { return unsetNode{}, nil })
}

// setNode is $set (and $setOnInsert, which applies only while an upsert
// inserts). Setting a value byte-identical to the existing one, type
// included, is a no-op; 1 over 1.0 is a change.
type setNode struct {
	val      bsoncore.Value
	onInsert bool
}

func (n *setNode) apply(s *applyState, c cursor) error {
	if n.onInsert && !s.insert {
		return nil
	}
	if !c.complete() {
		return s.create(c, newNode(n.val))
	}
	if sameBytes(c.elem.value(), n.val) {
		return nil
	}
	if err := checkDepth(len(c.taken), n.val); err != nil {
		return err
	}
	c.elem.set(n.val)
	return s.replaced(c)
}

// unsetNode is $unset: the field is removed from its document; an array
// element becomes null instead, so the array keeps its length. A missing
// path, even one that could not exist (through a scalar), is a no-op.
type unsetNode struct{}

func (unsetNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		return nil
	}
	if c.parent.isArray() {
		c.elem.set(bsoncore.Value{Type: bsoncore.TypeNull})
	} else {
		c.parent.removeKid(c.elem)
	}
	return s.replaced(c)
}
