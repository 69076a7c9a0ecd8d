package update

import (
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $rename: move a field's value to another path. It behaves as a $set of
// the destination followed by an $unset of the source: an existing
// destination is overwritten where it stands, a missing one is appended to
// its document (so a renamed field usually moves to the end). Neither path
// may go through an array. The node sits at the destination path and runs
// in the destination's turn; a placeholder at the source path makes other
// operators on it conflict.

func init() {
	// The parser places $rename's nodes itself (parser.rename): it needs
	// both paths. The entry makes "$rename" a known operator.
	register("$rename", func(path, bsoncore.Value) (updNode, error) { return placeholderNode{}, nil })
}

type renameNode struct {
	from, to path
}

func parseRename(from, to path, arg bsoncore.Value) (updNode, error) {
	spec := from.String() + ": " + arg.String()
	if strings.IndexByte(to.String(), 0) >= 0 {
		return nil, badValue("The 'to' field for $rename cannot contain an embedded null byte")
	}
	if slices.Equal(from, to) {
		return nil, badValue("The source and target field for $rename must differ: %s", spec)
	}
	if isPrefix(from, to) || isPrefix(to, from) {
		return nil, badValue("The source and target field for $rename must not be on the same path: %s", spec)
	}
	if slices.ContainsFunc(from, isDynamic) {
		return nil, badValue("The source field for $rename may not be dynamic: %s", from)
	}
	if slices.ContainsFunc(to, isDynamic) {
		return nil, badValue("The destination field for $rename may not be dynamic: %s", to)
	}
	return &renameNode{from: from, to: to}, nil
}

// isPrefix reports whether a is a strict prefix of b, component-wise.
func isPrefix(a, b path) bool {
	return len(a) < len(b) && slices.Equal(a, b[:len(a)])
}

func (r *renameNode) apply(s *applyState, c cursor) error {
	src, parents, err := r.source(s.root)
	if err != nil || src == nil {
		return err
	}
	for i := 1; i < len(parents); i++ {
		if parents[i].isArray() {
			return badValue("The source field cannot be an array element, '%s' in doc with %s has an array field called '%s'", r.from, s.idString(), r.from[i-1])
		}
	}
	// The destination's existing ancestors (and, when it exists, its
	// container) may not be arrays either.
	upto := len(c.taken)
	if c.complete() {
		upto--
	}
	for i, cur := 0, s.root; i < upto; i++ {
		next, err := cur.child(c.taken[i])
		if err != nil || next == nil {
			break
		}
		if next.isArray() {
			return badValue("The destination field cannot be an array element, '%s' in doc with %s has an array field called '%s'", r.to, s.idString(), c.taken[i])
		}
		cur = next
	}
	moved := *src
	if err := checkDepth(len(r.to), moved.value()); err != nil {
		return err
	}
	if !c.complete() {
		if err := s.create(c, &moved); err != nil {
			return err
		}
	} else if bsonx.Compare(c.elem.value(), moved.value()) != 0 {
		*c.elem = moved
		if err := s.replaced(c); err != nil {
			return err
		}
	}
	parents[len(parents)-1].removeKid(src)
	if r.from[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Unsetting the path '%s' using $rename would modify the immutable field '_id'", r.from)
	}
	s.changed = true
	return nil
}

// source finds the element to rename and the containers on its path (the
// root first). A missing element is (nil, nil, nil); a path that goes
// through a scalar, or into an array by a non-numeric name, is
// PathNotViable, as MongoDB's findLongestPrefix.
func (r *renameNode) source(root *node) (*node, []*node, error) {
	cur := root
	var parents []*node
	for _, part := range r.from {
		var next *node
		switch {
		case cur.isDoc():
			if err := cur.expand(); err != nil {
				return nil, nil, err
			}
			_, next = cur.field(part)
		case cur.isArray():
			idx, ok := isNumeric(part)
			if !ok {
				return nil, nil, r.notViable(part, parents, cur)
			}
			if err := cur.expand(); err != nil {
				return nil, nil, err
			}
			if idx < len(cur.kids) {
				next = cur.kids[idx].n
			}
		default:
			return nil, nil, r.notViable(part, parents, cur)
		}
		if next == nil {
			return nil, nil, nil
		}
		parents = append(parents, cur)
		cur = next
	}
	return cur, parents, nil
}

func (r *renameNode) notViable(part string, parents []*node, at *node) error {
	name := ""
	if len(parents) > 0 {
		name = r.from[len(parents)-1]
	}
	return errorf(codePathNotViable, "cannot use the part (%s of %s) to traverse the element ({%s})", part, r.from, describe(name, at))
}
