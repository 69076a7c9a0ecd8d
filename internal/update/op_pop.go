package update

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $pop: remove the last (1) or first (-1) element of an array.

func init() { register("$pop", parsePop) }

type popNode struct{ first bool }

func parsePop(_ path, arg bsoncore.Value) (updNode, error) {
	i, err := integerArg(arg)
	if err != nil {
		return nil, err
	}
	if i != 1 && i != -1 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %d", i)
	}
	return popNode{first: i == -1}, nil
}

func (n popNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		if len(c.taken) == 0 {
			return nil
		}
		return checkViability(c)
	}
	if !c.elem.isArray() {
		return typeMismatch("Path '%s' contains an element of non-array type '%s'", joinPath(c.taken), typeName(c.elem.t))
	}
	if err := c.elem.expand(); err != nil {
		return err
	}
	if len(c.elem.kids) == 0 {
		return nil
	}
	if n.first {
		c.elem.kids = c.elem.kids[1:]
	} else {
		c.elem.kids = c.elem.kids[:len(c.elem.kids)-1]
	}
	return s.replaced(c)
}

// checkViability is what the removing operators ($pop, $pull, $pullAll) do
// on a missing path: nothing, unless the path could not even be created
// (it goes through a scalar, or names an array element by a non-number),
// which is PathNotViable.
func checkViability(c cursor) error {
	if c.elem.isDoc() {
		return nil
	}
	if c.elem.isArray() {
		if _, ok := arrayIndex(c.create[0]); ok {
			return nil
		}
	}
	return errorf(codePathNotViable, "Cannot use the part (%s) of (%s) to traverse the element ({%s})", c.create[0], c.fullPath(), describe(c.name(), c.elem))
}
