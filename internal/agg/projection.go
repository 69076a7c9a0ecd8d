package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// projection is the tree shared by $project, $addFields/$set and $unset
// (MongoDB's ProjectionNode). Its semantics:
//
//   - Inclusion ($project {a: 1, "b.c": 1, d: <expr>}): a first pass keeps
//     the included fields in the input's order, descending into documents
//     and arrays of documents (other array elements are dropped, and a
//     sub-document lacking every named field stays as {}); a second pass
//     sets the computed fields in the projection's order, replacing a field
//     in place or appending it. _id is included unless {_id: 0}.
//   - Exclusion ($project {a: 0}, $unset): removes the named fields, keeps
//     everything else in order, scalars in arrays included.
//   - Computed only ($addFields): the second pass alone, over the whole
//     document.
//
// A computed field under a path ("a.b": <expr>) applies to each element of
// an array at a, and replaces a non-document (or missing) a by a document
// holding only the computed fields.
type projection struct {
	root *projNode
	mode projMode
}

type projMode int

const (
	modeUnknown projMode = iota
	modeInclusion
	modeExclusion
	modeComputed
)

type nodeKind int

const (
	nodeInner nodeKind = iota
	nodeInclude
	nodeExclude
	nodeComputed
)

type projNode struct {
	kind     nodeKind
	expr     expr.Expr
	children map[string]*projNode
	order    []string // children in projection order
	computed bool     // the subtree holds a computed field
}

func newInner() *projNode { return &projNode{kind: nodeInner, children: map[string]*projNode{}} }

// projParser holds the state of parsing one projection specification.
type projParser struct {
	stage      string // "$project" or "$addFields", for messages
	scope      *expr.Scope
	mode       projMode
	idExcluded bool
}

// parseProjectSpec parses $project's argument.
func parseProjectSpec(spec bsoncore.Value, scope *expr.Scope) (*projection, error) {
	pp := &projParser{stage: "$project", scope: scope}
	root := newInner()
	for _, f := range fieldsOf(spec) {
		if err := pp.element(root, "", f.name, f.v); err != nil {
			return nil, err
		}
	}
	if pp.mode == modeUnknown {
		pp.mode = modeInclusion
		if pp.idExcluded {
			pp.mode = modeExclusion
		}
	}
	if pp.mode == modeInclusion {
		if _, ok := root.children["_id"]; !ok {
			root.children["_id"] = &projNode{kind: nodeInclude}
			root.order = append([]string{"_id"}, root.order...)
		}
	}
	markComputed(root)
	return &projection{root: root, mode: pp.mode}, nil
}

// parseAddFieldsSpec parses $addFields' (and $set's) argument.
func parseAddFieldsSpec(spec bsoncore.Value, scope *expr.Scope) (*projection, error) {
	pp := &projParser{stage: "$addFields", scope: scope, mode: modeComputed}
	root := newInner()
	for _, f := range fieldsOf(spec) {
		if err := pp.element(root, "", f.name, f.v); err != nil {
			return nil, err
		}
	}
	markComputed(root)
	return &projection{root: root, mode: modeComputed}, nil
}

// newExclusion is an exclusion projection of paths ($unset).
func newExclusion(paths [][]string) (*projection, error) {
	root := newInner()
	for _, p := range paths {
		if err := addNode(root, p, &projNode{kind: nodeExclude}); err != nil {
			return nil, err
		}
	}
	return &projection{root: root, mode: modeExclusion}, nil
}

func markComputed(n *projNode) bool {
	if n.kind == nodeComputed {
		return true
	}
	for _, c := range n.children {
		if markComputed(c) {
			n.computed = true
		}
	}
	return n.computed
}

// element parses one field of a specification at path prefix.
func (pp *projParser) element(parent *projNode, prefix, name string, v bsoncore.Value) error {
	parts, err := splitPath(name)
	if err != nil {
		return err
	}
	full := name
	if prefix != "" {
		full = prefix + "." + name
	}
	switch {
	case pp.mode == modeComputed && (v.Type == bsoncore.TypeBoolean || isNumber(v)):
		return addNode(parent, parts, &projNode{kind: nodeComputed, expr: constExpr(v)})
	case v.Type == bsoncore.TypeBoolean || isNumber(v):
		include := expr.Truthy(v)
		if prefix == "" && name == "_id" {
			if include {
				return addNode(parent, parts, &projNode{kind: nodeInclude})
			}
			pp.idExcluded = true
			return addNode(parent, parts, &projNode{kind: nodeExclude})
		}
		if include {
			if pp.mode == modeExclusion {
				return errorf(codeProjIncInExclusion, "Invalid %s :: caused by :: Cannot do inclusion on field %s in exclusion projection", pp.stage, full)
			}
			pp.mode = modeInclusion
			return addNode(parent, parts, &projNode{kind: nodeInclude})
		}
		if pp.mode == modeInclusion {
			return errorf(codeProjExcInInclusion, "Invalid %s :: caused by :: Cannot do exclusion on field %s in inclusion projection", pp.stage, full)
		}
		pp.mode = modeExclusion
		return addNode(parent, parts, &projNode{kind: nodeExclude})
	case v.Type == bsoncore.TypeEmbeddedDocument:
		fs := fieldsOf(v)
		if len(fs) == 0 {
			if pp.mode == modeComputed {
				return addNode(parent, parts, &projNode{kind: nodeComputed, expr: constExpr(v)})
			}
			return errorf(codeProjEmptySub, "Invalid %s :: caused by :: An empty sub-projection is not a valid value. Found empty object at path", pp.stage)
		}
		if strings.HasPrefix(fs[0].name, "$") {
			return pp.computed(parent, parts, v, true)
		}
		node, err := innerAt(parent, parts, parts)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if err := pp.element(node, full, f.name, f.v); err != nil {
				return err
			}
		}
		return nil
	}
	return pp.computed(parent, parts, v, false)
}

func (pp *projParser) computed(parent *projNode, parts []string, v bsoncore.Value, isOperator bool) error {
	if pp.mode == modeExclusion {
		if isOperator {
			return errorf(codeProjExprInExclusion, "Invalid %s :: caused by :: Cannot use expression other than $meta in exclusion projection", pp.stage)
		}
		return errorf(codeProjLiteralExclusion, "Invalid %s :: caused by :: Cannot use an expression %s in an exclusion projection", pp.stage, v)
	}
	e, err := expr.ParseIn(v, pp.scope)
	if err != nil {
		return err
	}
	if pp.mode == modeUnknown {
		pp.mode = modeInclusion
	}
	return addNode(parent, parts, &projNode{kind: nodeComputed, expr: e})
}

// constExpr is an expression whose value is v.
func constExpr(v bsoncore.Value) expr.Expr {
	e, err := expr.Parse(literal(v))
	if err != nil {
		return nil
	}
	return e
}

// literal wraps v as {$literal: v}.
func literal(v bsoncore.Value) bsoncore.Value {
	return docValue(bsoncore.NewDocumentBuilder().AppendValue("$literal", v).Build())
}

// innerAt returns the inner node at parts below parent, creating it. full
// is the whole path being placed, for the collision message.
func innerAt(parent *projNode, parts, full []string) (*projNode, error) {
	n := parent
	for i, p := range parts {
		c, ok := n.children[p]
		if !ok {
			c = newInner()
			n.children[p] = c
			n.order = append(n.order, p)
		} else if c.kind != nodeInner {
			return nil, collision(full, full[i+1:])
		}
		n = c
	}
	return n, nil
}

// addNode places leaf at parts below parent; MongoDB refuses a path that
// is a prefix of another ({a: 1, "a.b": 1}).
func addNode(parent *projNode, parts []string, leaf *projNode) error {
	n, err := innerAt(parent, parts[:len(parts)-1], parts)
	if err != nil {
		return err
	}
	last := parts[len(parts)-1]
	if _, ok := n.children[last]; ok {
		return collision(parts, nil)
	}
	n.children[last] = leaf
	n.order = append(n.order, last)
	return nil
}

func collision(at, rest []string) error {
	if len(rest) == 0 {
		return errorf(codeProjPathCollisionEnd, "Path collision at %s", strings.Join(at, "."))
	}
	return errorf(codeProjPathCollision, "Path collision at %s remaining portion %s", strings.Join(at, "."), strings.Join(rest, "."))
}

// apply projects one document.
func (p *projection) apply(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	fs := fieldsOf(docValue(doc))
	switch p.mode {
	case modeExclusion:
		return buildDoc(p.root.exclude(fs)), nil
	case modeInclusion:
		ctx.Reset(doc)
		fs, err := p.root.inclusion(fs, ctx)
		if err != nil {
			return nil, err
		}
		return buildDoc(fs), nil
	}
	ctx.Reset(doc)
	fs, err := p.root.compute(fs, ctx)
	if err != nil {
		return nil, err
	}
	return buildDoc(fs), nil
}

// inclusion applies an inclusion projection to a document's fields:
// MongoDB's two passes (included fields in input order, then computed
// fields in projection order) fused per subtree. A field of an inner node
// stays at its input position even when only computed fields end up in
// it; array elements that the first pass drops (scalars) are still seen
// by the second, which turns them into documents of the computed fields.
func (n *projNode) inclusion(fs []field, ctx *expr.Context) ([]field, error) {
	var out []field
	seen := map[string]bool{}
	for _, f := range fs {
		c := n.children[f.name]
		if c == nil {
			continue
		}
		switch c.kind {
		case nodeInclude:
			out = append(out, f)
		case nodeInner:
			seen[f.name] = true
			v, err := c.inclusionValue(f.v, ctx)
			if err != nil {
				return nil, err
			}
			if v.Type != 0 {
				out = append(out, field{f.name, v})
			}
		}
	}
	for _, name := range n.order {
		c := n.children[name]
		switch {
		case c.kind == nodeComputed:
			v, err := c.expr.Eval(ctx)
			if err != nil {
				return nil, err
			}
			out = setField(out, name, v)
		case c.kind == nodeInner && c.computed && !seen[name]:
			v, err := c.computeValue(expr.Missing, ctx)
			if err != nil {
				return nil, err
			}
			out = setField(out, name, v)
		}
	}
	return out, nil
}

func (n *projNode) inclusionValue(v bsoncore.Value, ctx *expr.Context) (bsoncore.Value, error) {
	return mapNested(v,
		func(fs []field) ([]field, error) { return n.inclusion(fs, ctx) },
		func() (bsoncore.Value, error) {
			if n.computed {
				return n.computeValue(expr.Missing, ctx)
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
func (n *projNode) compute(fs []field, ctx *expr.Context) ([]field, error) {
	for _, name := range n.order {
		c := n.children[name]
		switch {
		case c.kind == nodeComputed:
			v, err := c.expr.Eval(ctx)
			if err != nil {
				return nil, err
			}
			fs = setField(fs, name, v)
		case c.kind == nodeInner && c.computed:
			v, err := c.computeValue(getField(fs, name), ctx)
			if err != nil {
				return nil, err
			}
			fs = setField(fs, name, v)
		}
	}
	return fs, nil
}

func (n *projNode) computeValue(v bsoncore.Value, ctx *expr.Context) (bsoncore.Value, error) {
	return mapNested(v,
		func(fs []field) ([]field, error) { return n.compute(fs, ctx) },
		func() (bsoncore.Value, error) {
			fs, err := n.compute(nil, ctx)
			if err != nil {
				return expr.Missing, err
			}
			return docValue(buildDoc(fs)), nil
		})
}

// exclude applies an exclusion projection.
func (n *projNode) exclude(fs []field) []field {
	out := fs[:0]
	for _, f := range fs {
		c := n.children[f.name]
		switch {
		case c == nil || c.kind == nodeInclude:
			out = append(out, f)
		case c.kind == nodeInner:
			out = append(out, field{f.name, c.excludeValue(f.v)})
		}
	}
	return out
}

func (n *projNode) excludeValue(v bsoncore.Value) bsoncore.Value {
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
