package update

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $min and $max: replace the value only when the argument is smaller
// (larger) in MongoDB's comparison order, across types; an equal value
// (1 against 1.0) is a no-op, so the stored type stays.

func init() {
	register("$min", func(_ path, arg bsoncore.Value) (updNode, error) { return &compareNode{val: arg}, nil })
	register("$max", func(_ path, arg bsoncore.Value) (updNode, error) { return &compareNode{val: arg, max: true}, nil })
}

type compareNode struct {
	val bsoncore.Value
	max bool
}

func (n *compareNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		return s.create(c, newNode(n.val))
	}
	cmp := bsonx.Compare(c.elem.value(), n.val)
	if cmp == 0 || (n.max && cmp > 0) || (!n.max && cmp < 0) {
		return nil
	}
	if err := checkDepth(len(c.taken), n.val); err != nil {
		return err
	}
	c.elem.set(n.val)
	return s.replaced(c)
}
