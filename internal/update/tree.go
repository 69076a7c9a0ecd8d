package update

import (
	"slices"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// The parsed form of an operator update is a tree with one node per path
// component, like MongoDB's UpdateNode tree: internal nodes for field names
// (objectNode, which also holds the positional "$" child) and for "$[]" /
// "$[id]" components (arrayNode), and one leaf per operator and path. Two
// paths that would touch the same place collide while the tree is built
// (ConflictingUpdateOperators); dynamic components ("$", "$[…]") are
// resolved per document, where leaves that land on the same element are
// merged and may still collide.

// updNode is a node of the update tree, applied at a cursor.
type updNode interface {
	apply(s *applyState, c cursor) error
}

// internalNode is an updNode with named children.
type internalNode interface {
	updNode
	get(name string) updNode
	set(name string, n updNode)
}

// objectNode holds the children of a field path component. Children apply
// in comparePathParts order; the positional child applies at the array
// position the filter matched, merged with a child of the same name.
type objectNode struct {
	children   map[string]updNode
	order      []string
	positional updNode
}

func newObjectNode() *objectNode { return &objectNode{children: map[string]updNode{}} }

func (o *objectNode) get(name string) updNode {
	if isPositional(name) {
		return o.positional
	}
	return o.children[name]
}

func (o *objectNode) set(name string, n updNode) {
	if isPositional(name) {
		o.positional = n
		return
	}
	o.children[name] = n
}

// finish fixes the application order of the subtree.
func (o *objectNode) finish() {
	o.order = sortedChildren(o.children)
	finishChild(o.positional)
}

// arrayNode holds the children of "$[]" (identifier "") and "$[id]"
// components below one array.
type arrayNode struct {
	children map[string]updNode
	order    []string
}

func newArrayNode() *arrayNode { return &arrayNode{children: map[string]updNode{}} }

func (a *arrayNode) get(name string) updNode { return a.children[name] }

func (a *arrayNode) set(name string, n updNode) { a.children[name] = n }

func (a *arrayNode) finish() { a.order = sortedChildren(a.children) }

func sortedChildren(m map[string]updNode) []string {
	order := make([]string, 0, len(m))
	for k, c := range m {
		order = append(order, k)
		finishChild(c)
	}
	slices.SortFunc(order, comparePathParts)
	return order
}

func finishChild(n updNode) {
	switch c := n.(type) {
	case *objectNode:
		c.finish()
	case *arrayNode:
		c.finish()
	}
}

// merge combines two subtrees that a document's dynamic components sent to
// the same element (MongoDB's createUpdateNodeByMerging): internal nodes of
// the same kind merge child by child, anything else collides.
func merge(a, b updNode, at []string) (updNode, error) {
	switch x := a.(type) {
	case *objectNode:
		y, ok := b.(*objectNode)
		if !ok {
			break
		}
		m := newObjectNode()
		if err := mergeChildren(m.children, x.children, y.children, at); err != nil {
			return nil, err
		}
		switch {
		case x.positional != nil && y.positional != nil:
			p, err := merge(x.positional, y.positional, append(slices.Clip(at), "$"))
			if err != nil {
				return nil, err
			}
			m.positional = p
		case x.positional != nil:
			m.positional = x.positional
		default:
			m.positional = y.positional
		}
		m.order = sortedChildren(m.children)
		return m, nil
	case *arrayNode:
		y, ok := b.(*arrayNode)
		if !ok {
			break
		}
		m := newArrayNode()
		if err := mergeChildren(m.children, x.children, y.children, at); err != nil {
			return nil, err
		}
		m.order = sortedChildren(m.children)
		return m, nil
	}
	return nil, mongoerr.New(mongoerr.ConflictingUpdateOps, "Update created a conflict at '%s'", joinPath(at))
}

func mergeChildren(dst, x, y map[string]updNode, at []string) error {
	for k, c := range x {
		dst[k] = c
	}
	for k, c := range y {
		if prev, ok := dst[k]; ok {
			m, err := merge(prev, c, append(slices.Clip(at), k))
			if err != nil {
				return err
			}
			dst[k] = m
			continue
		}
		dst[k] = c
	}
	return nil
}

// cursor is where a node of the update tree applies: elem is the deepest
// existing element on the node's path, taken the path to it from the root,
// and create the components below elem that do not exist (yet). When create
// is empty, elem is the node's own element and parent its container.
type cursor struct {
	parent *node
	elem   *node
	taken  []string
	create []string
}

// complete reports whether the cursor's element exists.
func (c cursor) complete() bool { return len(c.create) == 0 }

// fullPath is taken and create joined, for messages.
func (c cursor) fullPath() string { return joinPath(c.taken, c.create) }

// name is the field name (or array index) of the cursor's element.
func (c cursor) name() string {
	if len(c.taken) == 0 {
		return ""
	}
	return c.taken[len(c.taken)-1]
}

// resolve advances the cursor over components an earlier sibling has
// created since the cursor was made.
func (c cursor) resolve() (cursor, error) {
	for len(c.create) > 0 {
		k, err := c.elem.child(c.create[0])
		if err != nil {
			return c, err
		}
		if k == nil {
			break
		}
		c.parent, c.elem = c.elem, k
		c.taken = append(slices.Clip(c.taken), c.create[0])
		c.create = c.create[1:]
	}
	return c, nil
}

// descend moves the cursor to the child field of its element.
func (c cursor) descend(field string) (cursor, error) {
	if !c.complete() {
		c.create = append(slices.Clip(c.create), field)
		return c, nil
	}
	k, err := c.elem.child(field)
	if err != nil {
		return c, err
	}
	if k != nil {
		return cursor{parent: c.elem, elem: k, taken: append(slices.Clip(c.taken), field)}, nil
	}
	c.create = []string{field}
	return c, nil
}

func (o *objectNode) apply(s *applyState, c cursor) error {
	pending := o.positional != nil
	if pending && s.matched == "" {
		return badValue("The positional operator did not find the match needed from the query.")
	}
	applyAt := func(n updNode, field string) error {
		rc, err := c.resolve()
		if err != nil {
			return err
		}
		cc, err := rc.descend(field)
		if err != nil {
			return err
		}
		return n.apply(s, cc)
	}
	for _, name := range o.order {
		child := o.children[name]
		if pending && name == s.matched {
			merged, err := merge(o.positional, child, append(slices.Clip(c.taken), append(slices.Clip(c.create), name)...))
			if err != nil {
				return err
			}
			pending = false
			if err := applyAt(merged, name); err != nil {
				return err
			}
			continue
		}
		// MongoDB slots the positional child in by plain string order.
		if pending && s.matched < name {
			pending = false
			if err := applyAt(o.positional, s.matched); err != nil {
				return err
			}
		}
		if err := applyAt(child, name); err != nil {
			return err
		}
	}
	if pending {
		return applyAt(o.positional, s.matched)
	}
	return nil
}

func (a *arrayNode) apply(s *applyState, c cursor) error {
	c, err := c.resolve()
	if err != nil {
		return err
	}
	if !c.complete() {
		return badValue("The path '%s' must exist in the document in order to apply array updates.", c.fullPath())
	}
	if !c.elem.isArray() {
		return badValue("Cannot apply array updates to non-array element %s", describe(c.name(), c.elem))
	}
	if err := c.elem.expand(); err != nil {
		return err
	}
	// Decide which children apply to which element before changing any.
	matches := make([][]updNode, len(c.elem.kids))
	for i, k := range c.elem.kids {
		for _, id := range a.order {
			if id != "" {
				ok, err := s.u.filters[id].matches(s, k.n.value())
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			matches[i] = append(matches[i], a.children[id])
		}
	}
	elems := slices.Clone(c.elem.kids)
	for i, m := range matches {
		if len(m) == 0 {
			continue
		}
		at := append(slices.Clip(c.taken), itoa(i))
		n := m[0]
		for _, other := range m[1:] {
			if n, err = merge(n, other, at); err != nil {
				return err
			}
		}
		if err := n.apply(s, cursor{parent: c.elem, elem: elems[i].n, taken: at}); err != nil {
			return err
		}
	}
	return nil
}

// placeholderNode sits at a $rename's source path so that other operators
// on that path conflict; the rename itself does the work.
type placeholderNode struct{}

func (placeholderNode) apply(*applyState, cursor) error { return nil }
