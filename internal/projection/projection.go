// Package projection is the projection tree that find's projection
// (query.Projection) and the $project, $addFields/$set and $unset stages
// (package agg) share, as MongoDB 4.4+ runs both through one projection
// executor. It owns the tree, its path rules (collisions), the inclusion/
// exclusion/computed modes with their error codes, and applying a tree to
// a document. The two dialects parse their specifications into it;
// where MongoDB's two differ, the difference is named:
//
//   - find only: the positional "a.$", $slice and $elemMatch projections
//     (query builds $elemMatch as a Custom node, $slice as an Include
//     node that query slices afterwards, and applies "a.$" after Apply);
//     $meta is refused by both.
//   - $addFields only: numbers and booleans are values, not flags (the
//     Computed mode).
//   - messages: the stages prefix theirs with "Invalid $project :: caused
//     by :: " (Modes.Prefix); the codes are the same.
//
// # Semantics
//
//   - Inclusion ({a: 1, "b.c": 1, d: <expr>}): a first pass keeps the
//     included fields in the input's order, descending into documents and
//     arrays of documents (other array elements are dropped, and a
//     sub-document lacking every named field stays as {}); a second pass
//     sets the computed fields in the projection's order, replacing a
//     field in place or appending it. The dialect adds _id.
//   - Exclusion ({a: 0}, $unset): removes the named fields, keeps
//     everything else in order, scalars in arrays included.
//   - Computed only ($addFields): the second pass alone, over the whole
//     document.
//
// A computed field under a path ("a.b": <expr>) applies to each element of
// an array at a, and replaces a non-document (or missing) a by a document
// holding only the computed fields. A computed value that is missing
// removes the field.
package projection

import (
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Local names for MongoDB's projection codes, for both dialects; the
// numbers and codeNames live in mongoerr's one table.
const (
	codePathCollision    = mongoerr.ProjPathCollision    // "Path collision at a.b remaining portion b"
	codePathCollisionEnd = mongoerr.ProjPathCollisionEnd // "Path collision at a"
	codeExprInExclusion  = mongoerr.ProjExprInExclusion  // an expression other than $meta in an exclusion
	codeIncInExclusion   = mongoerr.ProjIncInExclusion   // "Cannot do inclusion on field a in exclusion projection"
	codeExcInInclusion   = mongoerr.ProjExcInInclusion   // "Cannot do exclusion on field a in inclusion projection"
	codeLiteralExclusion = mongoerr.ProjLiteralExclusion // "Cannot use an expression … in an exclusion projection"
	codeEmptySub         = mongoerr.ProjEmptySub         // "An empty sub-projection is not a valid value"
)

// Kind is what a node of the tree does.
type Kind int

const (
	// Inner is a path component with children.
	Inner Kind = iota
	// Include keeps the field ({a: 1}); an exclusion keeps it too.
	Include
	// Exclude removes the field ({a: 0}).
	Exclude
	// Computed sets the field to Expr's value.
	Computed
	// Custom sets the field to Custom's value over the root document
	// (find's $elemMatch), in the computed pass.
	Custom
)

// CustomValue computes a Custom node's field from the whole input
// document; ok false leaves the field out.
type CustomValue interface {
	Value(root bsoncore.Document) (v bsoncore.Value, ok bool)
}

// Node is a node of a projection tree.
type Node struct {
	Kind   Kind
	Expr   expr.Expr   // Computed
	Custom CustomValue // Custom

	children map[string]*Node
	order    []string // children in projection order
	computed bool     // the subtree holds a computed field (Computed or Custom)
}

// NewInner returns an empty inner node, the root of a tree.
func NewInner() *Node { return &Node{Kind: Inner, children: map[string]*Node{}} }

// Child returns the child named name, nil if none.
func (n *Node) Child(name string) *Node { return n.children[name] }

// Remove drops the child named name.
func (n *Node) Remove(name string) {
	delete(n.children, name)
	for i, k := range n.order {
		if k == name {
			n.order = append(n.order[:i:i], n.order[i+1:]...)
			break
		}
	}
}

// InnerAt returns the inner node at parts below n, creating it. full is
// the whole path being placed, for the collision message.
func (n *Node) InnerAt(parts, full []string) (*Node, error) {
	for i, p := range parts {
		c, ok := n.children[p]
		if !ok {
			c = NewInner()
			n.children[p] = c
			n.order = append(n.order, p)
		} else if c.Kind != Inner {
			return nil, collision(full, full[i+1:])
		}
		n = c
	}
	return n, nil
}

// Add places leaf at parts below n; MongoDB refuses a path that is a
// prefix of another ({a: 1, "a.b": 1}) and a path given twice.
func (n *Node) Add(parts []string, leaf *Node) error {
	p, err := n.InnerAt(parts[:len(parts)-1], parts)
	if err != nil {
		return err
	}
	last := parts[len(parts)-1]
	if _, ok := p.children[last]; ok {
		return collision(parts, nil)
	}
	p.children[last] = leaf
	p.order = append(p.order, last)
	return nil
}

func collision(at, rest []string) error {
	if len(rest) == 0 {
		return mongoerr.New(codePathCollisionEnd, "Path collision at %s", strings.Join(at, "."))
	}
	return mongoerr.New(codePathCollision, "Path collision at %s remaining portion %s", strings.Join(at, "."), strings.Join(rest, "."))
}

// EmptySubProjection is the error for {a: {}} where a sub-projection is
// expected.
func EmptySubProjection(prefix string) error {
	return mongoerr.New(codeEmptySub, "%sAn empty sub-projection is not a valid value. Found empty object at path", prefix)
}

// Mode is a tree's kind.
type Mode int

const (
	// Unknown: no field has decided yet.
	Unknown Mode = iota
	Inclusion
	Exclusion
	// ComputedOnly is $addFields: every field is computed.
	ComputedOnly
)

// Modes decides a projection's mode as its fields are parsed, refusing
// the mixtures MongoDB refuses. Prefix starts every message.
type Modes struct {
	Mode   Mode
	Prefix string
}

// Include records an inclusion of the field full.
func (m *Modes) Include(full string) error {
	if m.Mode == Exclusion {
		return mongoerr.New(codeIncInExclusion, "%sCannot do inclusion on field %s in exclusion projection", m.Prefix, full)
	}
	m.Mode = Inclusion
	return nil
}

// Exclude records an exclusion of the field full.
func (m *Modes) Exclude(full string) error {
	if m.Mode == Inclusion {
		return mongoerr.New(codeExcInInclusion, "%sCannot do exclusion on field %s in inclusion projection", m.Prefix, full)
	}
	m.Mode = Exclusion
	return nil
}

// Compute records a computed field; what names the expression in the
// message of a literal in an exclusion, operator whether it is an
// operator document.
func (m *Modes) Compute(what string, operator bool) error {
	if m.Mode == Exclusion {
		if operator {
			return mongoerr.New(codeExprInExclusion, "%sCannot use expression other than $meta in exclusion projection", m.Prefix)
		}
		return mongoerr.New(codeLiteralExclusion, "%sCannot use an expression %s in an exclusion projection", m.Prefix, what)
	}
	if m.Mode == Unknown {
		m.Mode = Inclusion
	}
	return nil
}

// Tree is a parsed projection.
type Tree struct {
	Root *Node
	Mode Mode // Inclusion, Exclusion or ComputedOnly
}

// New returns the tree of root in mode, ready to apply.
func New(root *Node, mode Mode) *Tree {
	markComputed(root)
	return &Tree{Root: root, Mode: mode}
}

func markComputed(n *Node) bool {
	if n.Kind == Computed || n.Kind == Custom {
		return true
	}
	for _, c := range n.children {
		if markComputed(c) {
			n.computed = true
		}
	}
	return n.computed
}

// Apply projects doc. ctx evaluates computed fields; Apply resets it to
// doc (it may be nil for an exclusion).
func (t *Tree) Apply(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	fs := fieldsOf(docValue(doc))
	if t.Mode == Exclusion {
		return buildDoc(t.Root.exclude(fs)), nil
	}
	ctx.Reset(doc)
	a := applier{ctx: ctx, root: doc}
	var err error
	if t.Mode == Inclusion {
		fs, err = a.inclusion(t.Root, fs)
	} else {
		fs, err = a.compute(t.Root, fs)
	}
	if err != nil {
		return nil, err
	}
	return buildDoc(fs), nil
}

type applier struct {
	ctx  *expr.Context
	root bsoncore.Document
}

// value is a computed node's value.
func (a *applier) value(c *Node) (bsoncore.Value, error) {
	if c.Kind == Custom {
		v, ok := c.Custom.Value(a.root)
		if !ok {
			return expr.Missing, nil
		}
		return v, nil
	}
	return c.Expr.Eval(a.ctx)
}

// inclusion applies an inclusion projection to a document's fields:
// MongoDB's two passes (included fields in input order, then computed
// fields in projection order) fused per subtree. A field of an inner node
// stays at its input position even when only computed fields end up in
// it; array elements that the first pass drops (scalars) are still seen
// by the second, which turns them into documents of the computed fields.
func (a *applier) inclusion(n *Node, fs []field) ([]field, error) {
	var out []field
	var seen map[string]bool
	for _, f := range fs {
		c := n.children[f.Name]
		if c == nil {
			continue
		}
		switch c.Kind {
		case Include:
			out = append(out, f)
		case Inner:
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[f.Name] = true
			v, err := a.inclusionValue(c, f.Value)
			if err != nil {
				return nil, err
			}
			if v.Type != 0 {
				out = append(out, field{f.Name, v})
			}
		}
	}
	for _, name := range n.order {
		c := n.children[name]
		switch {
		case c.Kind == Computed || c.Kind == Custom:
			v, err := a.value(c)
			if err != nil {
				return nil, err
			}
			out = setField(out, name, v)
		case c.Kind == Inner && c.computed && !seen[name]:
			v, err := a.computeValue(c, expr.Missing)
			if err != nil {
				return nil, err
			}
			out = setField(out, name, v)
		}
	}
	return out, nil
}

func (a *applier) inclusionValue(n *Node, v bsoncore.Value) (bsoncore.Value, error) {
	return mapNested(v,
		func(fs []field) ([]field, error) { return a.inclusion(n, fs) },
		func() (bsoncore.Value, error) {
			if n.computed {
				return a.computeValue(n, expr.Missing)
			}
			return expr.Missing, nil
		})
}

// mapNested rewrites v for a projection: a document's fields through
// fields, an array element by element (nested arrays included), and
// anything else through leaf.
func mapNested(v bsoncore.Value, fields func([]field) ([]field, error), leaf func() (bsoncore.Value, error)) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		fs, err := fields(fieldsOf(v))
		if err != nil {
			return expr.Missing, err
		}
		return docValue(buildDoc(fs)), nil
	case bsoncore.TypeArray:
		elems := arrayValues(v)
		for i, e := range elems {
			r, err := mapNested(e, fields, leaf)
			if err != nil {
				return expr.Missing, err
			}
			elems[i] = r
		}
		return buildArray(elems), nil
	}
	return leaf()
}

// compute sets the computed fields in projection order ($addFields, and
// the documents inclusion builds for computed fields under scalars).
func (a *applier) compute(n *Node, fs []field) ([]field, error) {
	for _, name := range n.order {
		c := n.children[name]
		switch {
		case c.Kind == Computed || c.Kind == Custom:
			v, err := a.value(c)
			if err != nil {
				return nil, err
			}
			fs = setField(fs, name, v)
		case c.Kind == Inner && c.computed:
			v, err := a.computeValue(c, getField(fs, name))
			if err != nil {
				return nil, err
			}
			fs = setField(fs, name, v)
		}
	}
	return fs, nil
}

func (a *applier) computeValue(n *Node, v bsoncore.Value) (bsoncore.Value, error) {
	return mapNested(v,
		func(fs []field) ([]field, error) { return a.compute(n, fs) },
		func() (bsoncore.Value, error) {
			fs, err := a.compute(n, nil)
			if err != nil {
				return expr.Missing, err
			}
			return docValue(buildDoc(fs)), nil
		})
}

// exclude applies an exclusion projection.
func (n *Node) exclude(fs []field) []field {
	out := fs[:0]
	for _, f := range fs {
		c := n.children[f.Name]
		switch {
		case c == nil || c.Kind == Include:
			out = append(out, f)
		case c.Kind == Inner:
			out = append(out, field{f.Name, c.excludeValue(f.Value)})
		}
	}
	return out
}

func (n *Node) excludeValue(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return docValue(buildDoc(n.exclude(fieldsOf(v))))
	case bsoncore.TypeArray:
		elems := arrayValues(v)
		for i, e := range elems {
			elems[i] = n.excludeValue(e)
		}
		return buildArray(elems)
	}
	return v
}

// field is one name/value pair of a document being rebuilt (bsonx.Field,
// which also gives the helpers below, shared with package agg).
type field = bsonx.Field

var (
	fieldsOf   = bsonx.FieldsOf
	getField   = bsonx.GetField
	setField   = bsonx.SetField
	buildDoc   = bsonx.BuildDoc
	buildArray = bsonx.BuildArray
)

func docValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

func arrayValues(v bsoncore.Value) []bsoncore.Value {
	vals, _ := bsoncore.Array(v.Data).Values()
	return vals
}
