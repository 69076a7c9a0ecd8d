package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Projection is a parsed find projection. It is immutable and safe for
// concurrent use; Apply appends one projected document to a buffer.
//
// Semantics (MongoDB 4.4+ find projections):
//
//   - An inclusion projection keeps the included fields in the input
//     document's order, then adds computed fields ({x: "$a"}, {x:
//     {$literal: 1}}, $elemMatch) in the projection's order. Dotted paths
//     descend into documents and into arrays of documents; scalars inside
//     arrays are dropped, and a path into a document that lacks the field
//     leaves an empty document.
//   - An exclusion projection removes the named fields and keeps the rest,
//     in order, scalars in arrays included.
//   - _id is included unless excluded, in both kinds.
//   - $slice and the positional "a.$" rewrite the named array in place
//     after the main projection; $elemMatch is a computed field, so it comes
//     after the included fields (as MongoDB documents).
type Projection struct {
	root      *projNode
	inclusion bool
	empty     bool
	// positional is the path of "a.b.$" without ".$", or nil.
	positional []string
	slices     []sliceSpec
}

type nodeKind int

const (
	nodePath      nodeKind = iota // an inner node with children
	nodeInclude                   // {a: 1}
	nodeExclude                   // {a: 0}
	nodeComputed                  // {a: <expression>}
	nodeElemMatch                 // {a: {$elemMatch: …}}
	nodeSlice                     // {a: {$slice: …}}: included (inclusion) or kept (exclusion), sliced afterwards
)

type projNode struct {
	kind     nodeKind
	children map[string]*projNode
	order    []string // children in projection order
	expr     expr.Expr
	elem     matcher // nodeElemMatch: {name: {$elemMatch: …}}
	// Summaries of the subtree, for nodePath.
	hasInclude  bool
	hasComputed bool
}

func newPathNode() *projNode { return &projNode{kind: nodePath, children: map[string]*projNode{}} }

type sliceSpec struct {
	parts   []string
	skip    int
	hasSkip bool
	limit   int
}

// projParser holds MongoDB's ParseContext.
type projParser struct {
	filter       *Filter
	typ          int // 0 unknown, 1 inclusion, 2 exclusion
	idSpecified  bool
	idIncluded   bool
	idExcluded   bool
	hasFindSlice bool
	hasElemMatch bool
	proj         *Projection
}

const (
	typeUnknown = iota
	typeInclusion
	typeExclusion
)

// ParseProjection parses a find projection. filter is the query's filter,
// needed only by positional projections ("a.$"); it may be nil otherwise.
// Errors carry MongoDB's codes (31253/31254 for mixing inclusion and
// exclusion, 31249/31250 for path collisions, …).
func ParseProjection(spec bsoncore.Document, filter *Filter) (*Projection, error) {
	p := &Projection{root: newPathNode()}
	if len(spec) == 0 {
		p.empty = true
		return p, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "projection is not a valid BSON document: %v", err)
	}
	pp := &projParser{filter: filter, proj: p}
	it := elemsOfBytes(spec)
	n := 0
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		n++
		name := string(k)
		if name == "_id" || strings.HasPrefix(name, "_id.") {
			pp.idSpecified = true
		}
		if err := pp.element(name, nil, v, p.root); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		p.empty = true
		return p, nil
	}
	if pp.typ == typeUnknown {
		pp.typ = pp.defaultType()
	}
	p.inclusion = pp.typ == typeInclusion
	if p.inclusion && !pp.idSpecified {
		p.root.children["_id"] = &projNode{kind: nodeInclude}
		p.root.order = append(p.root.order, "_id")
	}
	if !p.inclusion && pp.idIncluded {
		delete(p.root.children, "_id")
	}
	summarize(p.root)
	return p, nil
}

// defaultType is MongoDB's computeProjectionType for projections that
// named no field other than _id and no expression.
func (pp *projParser) defaultType() int {
	switch {
	case pp.hasFindSlice:
		if pp.idIncluded {
			return typeInclusion
		}
		return typeExclusion
	case pp.hasElemMatch:
		return typeInclusion
	case pp.idIncluded:
		return typeInclusion
	}
	return typeExclusion
}

func summarize(n *projNode) (include, computed bool) {
	for _, c := range n.children {
		switch c.kind {
		case nodeInclude, nodeSlice:
			include = true
		case nodeComputed, nodeElemMatch:
			computed = true
		case nodePath:
			i, cp := summarize(c)
			include = include || i
			computed = computed || cp
		}
	}
	n.hasInclude, n.hasComputed = include, computed
	return include, computed
}

// positionalAt finds the first positional "$" component of a projection
// key: ".$." inside it, ".$" at its end, or the key "$" itself.
func positionalAt(key string) (begin, end int, ok bool) {
	if i := strings.Index(key, ".$."); i >= 0 {
		return i, i + 3, true
	}
	if strings.HasSuffix(key, ".$") {
		return len(key) - 2, len(key), true
	}
	if key == "$" {
		return 0, 1, true
	}
	return 0, 0, false
}

// splitFieldPath validates a projection key as MongoDB's FieldPath does.
func splitFieldPath(key string) ([]string, error) {
	switch {
	case key == "":
		return nil, mongoerr.New(mongoerr.FieldPathEmptyString, "FieldPath cannot be constructed with empty string")
	case strings.HasSuffix(key, "."):
		return nil, mongoerr.New(mongoerr.FieldPathTrailingDot, "FieldPath must not end with a '.'.")
	}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return nil, errorf(codeFieldPathEmpty, "FieldPath field names may not be empty strings.")
		}
		if p[0] == '$' {
			return nil, errorf(codeFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// element parses one projection element (MongoDB's parseElement). prefix is
// the path of parent from the root.
func (pp *projParser) element(name string, prefix []string, v bsoncore.Value, parent *projNode) error {
	_, _, positional := positionalAt(name)
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument:
		if positional {
			return errorf(codeProjPositionalObject, "positional projection cannot be used with an expression or sub object")
		}
		return pp.subObject(name, prefix, v, parent)
	case isNumeric(v) || v.Type == bsoncore.TypeBoolean:
		if trueValue(v) || isNaN(v) {
			return pp.inclusion(name, prefix, parent)
		}
		return pp.exclusion(name, parent)
	}
	if positional {
		return errorf(codeProjPositionalValue, "positional projection cannot be used with a literal")
	}
	parts, err := splitFieldPath(name)
	if err != nil {
		return err
	}
	e, err := expr.Parse(v)
	if err != nil {
		return err
	}
	if err := addNode(parent, parts, &projNode{kind: nodeComputed, expr: e}); err != nil {
		return err
	}
	if pp.typ == typeExclusion {
		return errorf(codeProjLiteralExclusion, "Cannot use an expression %s: %s in an exclusion projection", name, v)
	}
	pp.typ = typeInclusion
	return nil
}

func (pp *projParser) subObject(name string, prefix []string, v bsoncore.Value, parent *projNode) error {
	parts, err := splitFieldPath(name)
	if err != nil {
		return err
	}
	vals := arrayValues(v)
	if len(vals) == 1 {
		if op := firstField(v); strings.HasPrefix(op, "$") {
			arg := lookup(v.Data, op)
			switch {
			case op == "$slice":
				return pp.findSlice(append(append([]string{}, prefix...), parts...), parts, arg, parent)
			case op == "$elemMatch":
				return pp.elemMatch(name, prefix, parts, arg, parent)
			case op == "$meta":
				return mongoerr.New(mongoerr.BadValue, "$meta projections are not supported yet")
			case expr.IsOperator(op):
				if pp.typ == typeExclusion {
					return errorf(codeProjExprInExclusion, "Cannot use expression other than $meta in exclusion projection")
				}
				pp.typ = typeInclusion
				e, err := expr.Parse(v)
				if err != nil {
					return err
				}
				return addNode(parent, parts, &projNode{kind: nodeComputed, expr: e})
			}
			return errorf(codeProjUnknownExpr, "Unknown expression %s", op)
		}
	}
	if len(vals) == 0 {
		return errorf(codeProjEmptySub, "An empty sub-projection is not a valid value. Found empty object at path")
	}
	node, err := pathNodeAt(parent, parts)
	if err != nil {
		return err
	}
	full := append(append([]string{}, prefix...), parts...)
	it := elemsOf(v)
	for {
		k, ev, ok := it.next()
		if !ok {
			return nil
		}
		if err := pp.element(string(k), full, ev, node); err != nil {
			return err
		}
	}
}

func (pp *projParser) findSlice(full, parts []string, arg bsoncore.Value, parent *projNode) error {
	s := sliceSpec{parts: full}
	switch {
	case isNumeric(arg):
		s.limit = numberInt(arg)
	case arg.Type == bsoncore.TypeArray:
		vals := arrayValues(arg)
		if len(vals) != 2 {
			return errorf(codeProjSliceArrayForm, "$slice array argument should be of form [skip, limit]")
		}
		if !isNumeric(vals[0]) {
			return errorf(codeProjSliceSkipType, "$slice expects the skip argument to be a number, got %s", typeName(vals[0]))
		}
		if !isNumeric(vals[1]) {
			return errorf(codeProjSliceLimitType, "$slice expects the limit argument to be a number, got %s", typeName(vals[1]))
		}
		s.skip, s.hasSkip, s.limit = numberInt(vals[0]), true, numberInt(vals[1])
		if s.limit <= 0 {
			return errorf(codeProjSliceLimitSign, "$slice limit must be positive, got %d", s.limit)
		}
	default:
		return errorf(codeProjSliceType, "$slice only supports numbers and [skip, limit] arrays")
	}
	if err := addNode(parent, parts, &projNode{kind: nodeSlice}); err != nil {
		return err
	}
	pp.hasFindSlice = true
	pp.proj.slices = append(pp.proj.slices, s)
	return nil
}

// numberInt is MongoDB's BSONElement::numberInt: truncation, saturating.
func numberInt(v bsoncore.Value) int {
	f, _ := bsonx.AsFloat64(v)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	if i, ok := integerValue(v); ok {
		return int(i)
	}
	return int(f)
}

func (pp *projParser) elemMatch(name string, prefix, parts []string, arg bsoncore.Value, parent *projNode) error {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return errorf(codeProjElemMatchType, "elemMatch: Invalid argument, object required, but got %s", typeName(arg))
	}
	if pp.proj.positional != nil {
		return errorf(codeProjPositionalElem1, "Cannot specify positional operator and $elemMatch.")
	}
	if len(parts) != 1 || len(prefix) != 0 {
		return errorf(codeProjElemMatchNested, "Cannot use $elemMatch projection on a nested field.")
	}
	p, err := parseElemMatch(arg)
	if err != nil {
		return err
	}
	if err := addNode(parent, parts, &projNode{kind: nodeElemMatch, elem: &pathNode{path: newPath(name), pred: p}}); err != nil {
		return err
	}
	pp.hasElemMatch = true
	return nil
}

func (pp *projParser) inclusion(name string, prefix []string, parent *projNode) error {
	topID := name == "_id" && parent == pp.proj.root
	key := name
	if begin, end, ok := positionalAt(name); ok {
		switch {
		case pp.proj.positional != nil:
			return errorf(codeProjPositionalTwice, "Cannot specify more than one positional projection per query.")
		case pp.hasElemMatch:
			return errorf(codeProjPositionalElem2, "Cannot specify positional operator and $elemMatch.")
		case pp.filter == nil:
			return errorf(codeProjPositionalNeedsQuery, "Projections with a positional operator require a matcher")
		case strings.HasSuffix(name, ".$."):
			return errorf(codeProjPositionalEnd, "Path cannot end with '.$.'")
		}
		after := name[end:]
		if _, _, again := positionalAt(after); again || after == "$" {
			return errorf(codeProjPositionalRepeat, "Cannot use positional operator twice: %s", name)
		}
		key = name[:begin]
		parts, err := splitFieldPath(key)
		if err != nil {
			return err
		}
		pp.proj.positional = append(append([]string{}, prefix...), parts...)
	}
	parts, err := splitFieldPath(key)
	if err != nil {
		return err
	}
	if err := addNode(parent, parts, &projNode{kind: nodeInclude}); err != nil {
		return err
	}
	if topID {
		pp.idIncluded = true
		return nil
	}
	if pp.typ == typeExclusion {
		return errorf(codeProjIncInExclusion, "Cannot do inclusion on field %s in exclusion projection", name)
	}
	pp.typ = typeInclusion
	return nil
}

func (pp *projParser) exclusion(name string, parent *projNode) error {
	parts, err := splitFieldPath(name)
	if err != nil {
		return err
	}
	if err := addNode(parent, parts, &projNode{kind: nodeExclude}); err != nil {
		return err
	}
	if name == "_id" && parent == pp.proj.root {
		pp.idExcluded = true
		return nil
	}
	if pp.typ == typeInclusion {
		return errorf(codeProjExcInInclusion, "Cannot do exclusion on field %s in inclusion projection", name)
	}
	pp.typ = typeExclusion
	return nil
}

// addNode adds a leaf at parts under parent, creating inner nodes, and
// reports MongoDB's path collisions.
func addNode(parent *projNode, parts []string, leaf *projNode) error {
	cur := parent
	for i, p := range parts {
		child := cur.children[p]
		if i == len(parts)-1 {
			if child != nil {
				return errorf(codeProjPathCollisionEnd, "Path collision at %s", strings.Join(parts, "."))
			}
			cur.children[p] = leaf
			cur.order = append(cur.order, p)
			return nil
		}
		if child == nil {
			child = newPathNode()
			cur.children[p] = child
			cur.order = append(cur.order, p)
		} else if child.kind != nodePath {
			return errorf(codeProjPathCollision, "Path collision at %s remaining portion %s", strings.Join(parts, "."), strings.Join(parts[i+1:], "."))
		}
		cur = child
	}
	return nil
}

// pathNodeAt returns the inner node at parts, creating it if needed.
func pathNodeAt(parent *projNode, parts []string) (*projNode, error) {
	cur := parent
	for _, p := range parts {
		child := cur.children[p]
		if child == nil {
			child = newPathNode()
			cur.children[p] = child
			cur.order = append(cur.order, p)
		} else if child.kind != nodePath {
			return nil, errorf(codeProjPathCollisionEnd, "Path collision at %s", strings.Join(parts, "."))
		}
		cur = child
	}
	return cur, nil
}

// IsInclusion reports whether the projection is an inclusion projection.
func (p *Projection) IsInclusion() bool { return p.inclusion }

// field is one field of a document being built.
type field struct {
	key string
	val bsoncore.Value
}

func setField(fields []field, key string, v bsoncore.Value) []field {
	for i := range fields {
		if fields[i].key == key {
			fields[i].val = v
			return fields
		}
	}
	return append(fields, field{key, v})
}

func getField(fields []field, key string) bsoncore.Value {
	for _, f := range fields {
		if f.key == key {
			return f.val
		}
	}
	return missing
}

func appendFields(dst []byte, fields []field) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	for _, f := range fields {
		dst = bsoncore.AppendValueElement(dst, f.key, f.val)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func docValue(b []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

// Apply appends the projection of doc to dst. arrayPos is the array
// position the filter's match bound (Filter.MatchDetails), used by a
// positional projection; pass -1 when there is none.
func (p *Projection) Apply(dst []byte, doc bsoncore.Document, arrayPos int) ([]byte, error) {
	if p.empty {
		return append(dst, doc...), nil
	}
	in := docValue(doc)
	var fields []field
	if p.inclusion {
		fields = p.root.include(in)
		ctx := expr.NewContext(doc)
		var err error
		if fields, err = p.root.compute(fields, in, ctx); err != nil {
			return dst, err
		}
	} else {
		fields = p.root.exclude(in)
	}
	if p.positional == nil && len(p.slices) == 0 {
		return appendFields(dst, fields), nil
	}
	out := docValue(appendFields(nil, fields))
	if p.positional != nil {
		v, err := applyPositional(out, p.positional, arrayPos)
		if err != nil {
			return dst, err
		}
		out = v
	}
	for _, s := range p.slices {
		out = applySlice(out, s, 0)
	}
	return append(dst, out.Data...), nil
}

// include is the inclusion pass over one document level.
func (n *projNode) include(doc bsoncore.Value) []field {
	var out []field
	it := elemsOf(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		c := n.children[string(k)]
		if c == nil {
			continue
		}
		switch c.kind {
		case nodeInclude, nodeSlice:
			out = append(out, field{string(k), v})
		case nodePath:
			// Inner nodes holding only computed fields take part too, so
			// that the expression pass maps over arrays of documents.
			if !c.hasInclude && !c.hasComputed {
				continue
			}
			if iv, ok := c.includeValue(v); ok {
				out = append(out, field{string(k), iv})
			}
		}
	}
}

// includeValue applies the inclusion pass under n to a value: documents
// are projected, arrays projected element by element (scalars dropped),
// scalars dropped.
func (n *projNode) includeValue(v bsoncore.Value) (bsoncore.Value, bool) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return docValue(appendFields(nil, n.include(v))), true
	case bsoncore.TypeArray:
		var vals []bsoncore.Value
		it := elemsOf(v)
		for {
			_, e, ok := it.next()
			if !ok {
				break
			}
			if iv, ok := n.includeValue(e); ok {
				vals = append(vals, iv)
			}
		}
		return expr.Array(vals), true
	}
	return missing, false
}

// compute is the expression pass over one level of the output: computed
// fields and $elemMatch in projection order (replacing a field of the same
// name in place, else appended), and inner nodes holding computed fields.
// in is the input document at this level (the root for $elemMatch).
func (n *projNode) compute(fields []field, root bsoncore.Value, ctx *expr.Context) ([]field, error) {
	if !n.hasComputed {
		return fields, nil
	}
	for _, name := range n.order {
		c := n.children[name]
		switch c.kind {
		case nodeComputed:
			v, err := c.expr.Eval(ctx)
			if err != nil {
				return nil, err
			}
			if v.Type != 0 {
				fields = setField(fields, name, v)
			}
		case nodeElemMatch:
			if v, ok := elemMatchValue(c.elem, root, name); ok {
				fields = setField(fields, name, v)
			}
		case nodePath:
			if !c.hasComputed {
				continue
			}
			v, err := c.computeValue(getField(fields, name), root, ctx)
			if err != nil {
				return nil, err
			}
			fields = setField(fields, name, v)
		}
	}
	return fields, nil
}

// computeValue applies the expression pass under n to an output value:
// into documents, over arrays, and replacing anything else by a document of
// the computed fields (so {"a.b": {$literal: 1}} turns a: 1 into a: {b: 1}).
func (n *projNode) computeValue(v, root bsoncore.Value, ctx *expr.Context) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		fields, err := n.compute(fieldsOf(v), root, ctx)
		if err != nil {
			return missing, err
		}
		return docValue(appendFields(nil, fields)), nil
	case bsoncore.TypeArray:
		var vals []bsoncore.Value
		for _, e := range arrayValues(v) {
			cv, err := n.computeValue(e, root, ctx)
			if err != nil {
				return missing, err
			}
			vals = append(vals, cv)
		}
		return expr.Array(vals), nil
	}
	fields, err := n.compute(nil, root, ctx)
	if err != nil {
		return missing, err
	}
	return docValue(appendFields(nil, fields)), nil
}

func fieldsOf(doc bsoncore.Value) []field {
	var out []field
	it := elemsOf(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		out = append(out, field{string(k), v})
	}
}

// elemMatchValue evaluates a $elemMatch projection: the first matching
// element of the array, as a one-element array.
func elemMatchValue(m matcher, root bsoncore.Value, name string) (bsoncore.Value, bool) {
	st := state{pos: -1, root: root.Data}
	if !m.match(root.Data, &st) || st.pos < 0 {
		return missing, false
	}
	arr := lookup(root.Data, name)
	e, ok := arrayIndex(arr, st.pos)
	if !ok {
		return missing, false
	}
	return expr.Array([]bsoncore.Value{e}), true
}

func arrayIndex(arr bsoncore.Value, i int) (bsoncore.Value, bool) {
	if arr.Type != bsoncore.TypeArray {
		return missing, false
	}
	it := elemsOf(arr)
	for k := 0; ; k++ {
		_, e, ok := it.next()
		if !ok {
			return missing, false
		}
		if k == i {
			return e, true
		}
	}
}

// exclude is the exclusion pass over one document level.
func (n *projNode) exclude(doc bsoncore.Value) []field {
	var out []field
	it := elemsOf(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		c := n.children[string(k)]
		switch {
		case c == nil || c.kind == nodeSlice || c.kind == nodeInclude:
			out = append(out, field{string(k), v})
		case c.kind == nodePath:
			out = append(out, field{string(k), c.excludeValue(v)})
		}
	}
}

func (n *projNode) excludeValue(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return docValue(appendFields(nil, n.exclude(v)))
	case bsoncore.TypeArray:
		vals := arrayValues(v)
		for i, e := range vals {
			vals[i] = n.excludeValue(e)
		}
		return expr.Array(vals)
	}
	return v
}

// applyPositional replaces the first array on path in doc by the one
// element at pos.
func applyPositional(doc bsoncore.Value, parts []string, pos int) (bsoncore.Value, error) {
	v := lookup(doc.Data, parts[0])
	switch v.Type {
	case bsoncore.TypeArray:
		if pos < 0 {
			return missing, errorf(codeProjPositionalNoMatch, "positional operator '.$' couldn't find a matching element in the array")
		}
		e, ok := arrayIndex(v, pos)
		if !ok {
			return missing, errorf(codeProjPositionalMismatch, "positional operator '.$' element mismatch")
		}
		return replaceField(doc, parts[0], expr.Array([]bsoncore.Value{e})), nil
	case bsoncore.TypeEmbeddedDocument:
		if len(parts) == 1 {
			return doc, nil
		}
		sub, err := applyPositional(v, parts[1:], pos)
		if err != nil {
			return missing, err
		}
		return replaceField(doc, parts[0], sub), nil
	}
	return doc, nil
}

// applySlice applies one $slice at s.parts[i:] under doc.
func applySlice(doc bsoncore.Value, s sliceSpec, i int) bsoncore.Value {
	v := lookup(doc.Data, s.parts[i])
	switch v.Type {
	case bsoncore.TypeArray:
		if i == len(s.parts)-1 {
			return replaceField(doc, s.parts[i], sliceArray(arrayValues(v), s))
		}
		vals := arrayValues(v)
		for k, e := range vals {
			if e.Type == bsoncore.TypeEmbeddedDocument {
				vals[k] = applySlice(e, s, i+1)
			}
		}
		return replaceField(doc, s.parts[i], expr.Array(vals))
	case bsoncore.TypeEmbeddedDocument:
		if i == len(s.parts)-1 {
			return doc
		}
		return replaceField(doc, s.parts[i], applySlice(v, s, i+1))
	}
	return doc
}

// sliceArray is MongoDB's find $slice: n first elements, -n last ones, or
// [skip, limit] with a negative skip counting from the end.
func sliceArray(vals []bsoncore.Value, s sliceSpec) bsoncore.Value {
	n := len(vals)
	start, count := 0, 0
	switch {
	case !s.hasSkip && s.limit < 0:
		start = max(0, n+s.limit)
		count = n - start
	case !s.hasSkip:
		count = min(n, s.limit)
	case s.skip < 0:
		start = max(0, n+s.skip)
		count = min(n-start, s.limit)
	default:
		start = min(n, s.skip)
		count = min(n-start, s.limit)
	}
	return expr.Array(vals[start : start+count])
}

// replaceField returns doc with the value of its field name replaced, in
// place.
func replaceField(doc bsoncore.Value, name string, v bsoncore.Value) bsoncore.Value {
	fields := fieldsOf(doc)
	for i := range fields {
		if fields[i].key == name {
			fields[i].val = v
		}
	}
	return docValue(appendFields(nil, fields))
}
