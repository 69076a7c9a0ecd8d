package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	ptree "github.com/cairndb/cairn/internal/projection"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Projection is a parsed find projection. It is immutable and safe for
// concurrent use; Apply appends one projected document to a buffer.
//
// Its tree is the one $project uses (package projection states the shared
// semantics: inclusion keeps included fields in input order and then sets
// computed fields in projection order; exclusion removes fields; _id is
// included unless excluded). What only find does is this file's branch:
// $slice and the positional "a.$" rewrite the named array in place after
// the tree is applied ($slice's field is an Include node, kept by an
// exclusion too); $elemMatch is a Custom node, a computed field, so it
// comes after the included fields (as MongoDB documents).
type Projection struct {
	tree  *ptree.Tree
	empty bool
	// positional is the path of "a.b.$" without ".$", or nil.
	positional []string
	slices     []sliceSpec
	// meta are the top-level fields set to {$meta: "textScore"}, set last
	// from the document's TextScoreField (see text.go).
	meta []string
}

type sliceSpec struct {
	parts   []string
	skip    int
	hasSkip bool
	limit   int
}

// projParser holds MongoDB's ParseContext.
type projParser struct {
	filter       *Filter
	modes        ptree.Modes
	root         *ptree.Node
	idSpecified  bool
	idIncluded   bool
	idExcluded   bool
	hasFindSlice bool
	hasElemMatch bool
	proj         *Projection
}

// ParseProjection parses a find projection. filter is the query's filter,
// needed only by positional projections ("a.$"); it may be nil otherwise.
// Errors carry MongoDB's codes (31253/31254 for mixing inclusion and
// exclusion, 31249/31250 for path collisions, …).
func ParseProjection(spec bsoncore.Document, filter *Filter) (*Projection, error) {
	p := &Projection{}
	if len(spec) == 0 {
		p.empty = true
		return p, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "projection is not a valid BSON document: %v", err)
	}
	pp := &projParser{filter: filter, proj: p, root: ptree.NewInner()}
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
		if err := pp.element(name, nil, v, pp.root); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		p.empty = true
		return p, nil
	}
	mode := pp.modes.Mode
	if mode == ptree.Unknown {
		mode = pp.defaultType()
	}
	if mode == ptree.Inclusion && !pp.idSpecified {
		if err := pp.root.Add([]string{"_id"}, &ptree.Node{Kind: ptree.Include}); err != nil {
			return nil, err
		}
	}
	if mode != ptree.Inclusion && pp.idIncluded {
		pp.root.Remove("_id")
	}
	p.tree = ptree.New(pp.root, mode)
	return p, nil
}

// defaultType is MongoDB's computeProjectionType for projections that
// named no field other than _id and no expression.
func (pp *projParser) defaultType() ptree.Mode {
	switch {
	case pp.hasFindSlice:
		if pp.idIncluded {
			return ptree.Inclusion
		}
		return ptree.Exclusion
	case pp.hasElemMatch:
		return ptree.Inclusion
	case pp.idIncluded:
		return ptree.Inclusion
	}
	return ptree.Exclusion
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
func (pp *projParser) element(name string, prefix []string, v bsoncore.Value, parent *ptree.Node) error {
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
		if positional {
			return errorf(codeProjPositionalExclusion, "positional projection cannot be used with exclusion")
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
	if err := parent.Add(parts, &ptree.Node{Kind: ptree.Computed, Expr: e}); err != nil {
		return err
	}
	return pp.modes.Compute(name+": "+v.String(), false)
}

func (pp *projParser) subObject(name string, prefix []string, v bsoncore.Value, parent *ptree.Node) error {
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
				return pp.meta(name, prefix, parts, arg)
			case expr.IsOperator(op):
				if err := pp.modes.Compute(op, true); err != nil {
					return err
				}
				e, err := expr.Parse(v)
				if err != nil {
					return err
				}
				return parent.Add(parts, &ptree.Node{Kind: ptree.Computed, Expr: e})
			}
			return errorf(codeProjUnknownExpr, "Unknown expression %s", op)
		}
	}
	if len(vals) == 0 {
		return ptree.EmptySubProjection("")
	}
	node, err := parent.InnerAt(parts, parts)
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

func (pp *projParser) findSlice(full, parts []string, arg bsoncore.Value, parent *ptree.Node) error {
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
	// The field is included (or, in an exclusion, kept), then sliced.
	if err := parent.Add(parts, &ptree.Node{Kind: ptree.Include}); err != nil {
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

func (pp *projParser) elemMatch(name string, prefix, parts []string, arg bsoncore.Value, parent *ptree.Node) error {
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
	if err := parent.Add(parts, &ptree.Node{Kind: ptree.Custom, Custom: elemMatchProj{m: &pathNode{path: newPath(name), pred: p}, name: name}}); err != nil {
		return err
	}
	pp.hasElemMatch = true
	return nil
}

func (pp *projParser) inclusion(name string, prefix []string, parent *ptree.Node) error {
	topID := name == "_id" && parent == pp.root
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
	if err := parent.Add(parts, &ptree.Node{Kind: ptree.Include}); err != nil {
		return err
	}
	if topID {
		pp.idIncluded = true
		return nil
	}
	return pp.modes.Include(name)
}

func (pp *projParser) exclusion(name string, parent *ptree.Node) error {
	parts, err := splitFieldPath(name)
	if err != nil {
		return err
	}
	if err := parent.Add(parts, &ptree.Node{Kind: ptree.Exclude}); err != nil {
		return err
	}
	if name == "_id" && parent == pp.root {
		pp.idExcluded = true
		return nil
	}
	return pp.modes.Exclude(name)
}

// IsInclusion reports whether the projection is an inclusion projection.
func (p *Projection) IsInclusion() bool { return !p.empty && p.tree.Mode == ptree.Inclusion }

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
	if len(p.meta) > 0 || hasTextScore(doc) {
		return p.applyScored(dst, doc, arrayPos)
	}
	return p.apply(dst, doc, arrayPos)
}

func (p *Projection) apply(dst []byte, doc bsoncore.Document, arrayPos int) ([]byte, error) {
	if p.empty {
		return append(dst, doc...), nil
	}
	var ctx *expr.Context
	if p.tree.Mode == ptree.Inclusion {
		ctx = expr.NewContext(doc)
	}
	projected, err := p.tree.Apply(doc, ctx)
	if err != nil {
		return dst, err
	}
	if p.positional == nil && len(p.slices) == 0 {
		return append(dst, projected...), nil
	}
	out := docValue(projected)
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

// elemMatchProj is find's {name: {$elemMatch: …}}: the first element of
// the array name that matches, as a one-element array.
type elemMatchProj struct {
	m    matcher
	name string
}

func (e elemMatchProj) Value(root bsoncore.Document) (bsoncore.Value, bool) {
	return elemMatchValue(e.m, docValue(root), e.name)
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
