package query

import (
	"sort"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explain describes why doc fails the filter, which was parsed from
// filter (a Filter does not keep its source: it would pin request
// buffers), in the shape of MongoDB 7.0's
// document validation errors (errInfo.details, doc_validation_error.cpp):
// {operatorName, specifiedAs, reason, consideredValue(s)} for an operator,
// {operatorName: "$and"|"$or"|"$nor", clausesNotSatisfied: [{index,
// details}]} for the logical ones, {operatorName: "$jsonSchema",
// schemaRulesNotSatisfied: [...]} for a schema. A filter of several
// conditions is an implicit "$and" whose clauses are numbered as MongoDB's
// parse tree numbers them: one per operator of a field, one per top-level
// operator.
//
// Under a negation ($not, $nor, $ne, $nin, $exists: false) the reasons are
// inverted ("comparison succeeded") as in MongoDB. Explain of a document
// that matches returns an empty document. See explain_schema.go for
// $jsonSchema, and doc.go's "Deviations" for what is coarser than MongoDB.
func (f *Filter) Explain(filter, doc bsoncore.Document) bsoncore.Document {
	x := &explainer{env: f.env}
	n := x.docNode(filter)
	if n.matches(doc) {
		return bsoncore.NewDocumentBuilder().Build()
	}
	return n.detail(doc, false)
}

// maxConsideredValues is MongoDB's internalQueryMaxDocValidationErrorConsideredValues.
const maxConsideredValues = 10

type explainer struct{ env *exprEnv }

// node is a condition of the filter as MongoDB's parse tree has it.
type node interface {
	matches(doc bsoncore.Document) bool
	// detail explains a node that does not match (inverted: that matches,
	// under a negation).
	detail(doc bsoncore.Document, inverted bool) bsoncore.Document
}

// docNode is a filter document: its clauses, an implicit $and.
func (x *explainer) docNode(filter bsoncore.Document) node {
	var clauses []node
	it := elemsOfBytes(filter)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		name := string(k)
		switch {
		case name == "$comment":
		case name == "$and" || name == "$or" || name == "$nor":
			var kids []node
			for _, c := range arrayValues(v) {
				kids = append(kids, x.docNode(c.Data))
			}
			clauses = append(clauses, &logicalNode{op: name, kids: kids})
		case name == "$expr":
			clauses = append(clauses, &exprNode{x: x, arg: v})
		case name == "$jsonSchema":
			clauses = append(clauses, x.schemaNode(v))
		case len(name) > 0 && name[0] == '$':
			clauses = append(clauses, x.leaf(name, "", name, v, single(name, v)))
		case v.Type == bsoncore.TypeEmbeddedDocument && isOperatorDoc(v, false):
			clauses = append(clauses, x.operators(name, v)...)
		case v.Type == bsoncore.TypeRegex:
			clauses = append(clauses, x.leaf("$regex", name, "", v, single(name, v)))
		default:
			clauses = append(clauses, x.leaf("$eq", name, "", v, single(name, v)))
		}
	}
	if len(clauses) == 1 {
		return clauses[0]
	}
	return &logicalNode{op: "$and", kids: clauses}
}

// operators splits an operator document on field name into one clause per
// operator ($options goes with $regex).
func (x *explainer) operators(name string, ops bsoncore.Value) []node {
	var out []node
	it := elemsOf(ops)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		op := string(k)
		switch op {
		case "$options":
			continue
		case "$regex":
			// MongoDB specifies a $regex by its whole operator document
			// (parseRegexDocument), $options and any other operator included;
			// it is compiled alone ($regex with its $options).
			b := bsoncore.NewDocumentBuilder().AppendValue("$regex", v)
			if o := lookup(ops.Data, "$options"); o.Type != 0 {
				b.AppendValue("$options", o)
			}
			n := x.leaf(op, name, "", v, single(name, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.Build()}))
			n.spec = single(name, ops)
			out = append(out, n)
			continue
		case "$not":
			out = append(out, &notNode{name: name, spec: nested(name, op, v), inner: x.notInner(name, v)})
			continue
		}
		out = append(out, x.leaf(op, name, "", v, nested(name, op, v)))
	}
}

// notInner is the condition a $not on field name negates.
func (x *explainer) notInner(name string, v bsoncore.Value) node {
	if v.Type == bsoncore.TypeRegex {
		return x.leaf("$regex", name, "", v, single(name, v))
	}
	kids := x.operators(name, v)
	if len(kids) == 1 {
		return kids[0]
	}
	return &logicalNode{op: "$and", kids: kids}
}

func single(name string, v bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue(name, v).Build()
}

func nested(name, op string, v bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendDocument(name, single(op, v)).Build()
}

// compiled is a condition compiled by the query parser itself, so that
// Explain agrees with Match.
type compiled struct{ m matcher }

func (x *explainer) compile(spec bsoncore.Document) compiled {
	m, err := parseDoc(spec, level{env: x.env})
	if err != nil {
		return compiled{constMatcher(true)} // parsed once already; cannot happen
	}
	return compiled{m}
}

// matches runs the condition; a run-time error counts as no match, as
// validation counts it.
func (c compiled) matches(doc bsoncore.Document) bool {
	st := &state{pos: -1, root: doc}
	ok := c.m.match(doc, st)
	return ok && st.err == nil
}

// leafInfo describes how MongoDB explains one operator: its reasons and
// the types it expects (nil: any), and whether a leaf array counts as one
// value (no traversal) or by its elements.
type leafInfo struct {
	normal, inverted string
	expected         []string // sorted type names
	wholeArray       bool
	negated          bool // $ne, $nin, $exists: false explain their positive twin inverted
}

var (
	numericTypes = []string{"decimal", "double", "int", "long"}
	leafInfos    = map[string]leafInfo{
		"$eq":           {normal: "comparison failed", inverted: "comparison succeeded"},
		"$ne":           {normal: "comparison failed", inverted: "comparison succeeded", negated: true},
		"$gt":           {normal: "comparison failed", inverted: "comparison succeeded"},
		"$gte":          {normal: "comparison failed", inverted: "comparison succeeded"},
		"$lt":           {normal: "comparison failed", inverted: "comparison succeeded"},
		"$lte":          {normal: "comparison failed", inverted: "comparison succeeded"},
		"$in":           {normal: "no matching value found in array", inverted: "matching value found in array"},
		"$nin":          {normal: "no matching value found in array", inverted: "matching value found in array", negated: true},
		"$regex":        {normal: "regular expression did not match", inverted: "regular expression did match", expected: []string{"regex", "string", "symbol"}},
		"$mod":          {normal: "$mod did not evaluate to expected remainder", inverted: "$mod did evaluate to expected remainder", expected: numericTypes},
		"$size":         {normal: "array length was not equal to given size", inverted: "array length was equal to given size", expected: []string{"array"}, wholeArray: true},
		"$elemMatch":    {normal: "array did not satisfy the child predicate", inverted: "array did satisfy the child predicate", expected: []string{"array"}, wholeArray: true},
		"$all":          {normal: "array did not contain all specified values", inverted: "array did contain all specified values", wholeArray: true},
		"$type":         {normal: "type did not match", inverted: "type did match"},
		"$exists":       {normal: "path does not exist", inverted: "path does exist"},
		"$bitsAllSet":   {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: []string{"binData", "decimal", "double", "int", "long"}},
		"$bitsAnySet":   {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: []string{"binData", "decimal", "double", "int", "long"}},
		"$bitsAllClear": {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: []string{"binData", "decimal", "double", "int", "long"}},
		"$bitsAnyClear": {normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully", expected: []string{"binData", "decimal", "double", "int", "long"}},
		"$alwaysFalse":  {normal: "expression always evaluates to false", inverted: "expression always evaluates to true"},
		"$alwaysTrue":   {normal: "expression always evaluates to false", inverted: "expression always evaluates to true"},
	}
)

// leafNode is one operator on a path (or a pathless $alwaysTrue/False).
type leafNode struct {
	compiled
	op, path string
	spec     bsoncore.Document // specifiedAs
	info     leafInfo
	negated  bool
}

func (x *explainer) leaf(op, path, _ string, arg bsoncore.Value, spec bsoncore.Document) *leafNode {
	info, ok := leafInfos[op]
	if !ok {
		info = leafInfo{normal: "expression did not match", inverted: "expression did match"}
	}
	negated := info.negated || (op == "$exists" && !trueValue(arg))
	return &leafNode{compiled: x.compile(spec), op: op, path: path, spec: spec, info: info, negated: negated}
}

func (n *leafNode) detail(doc bsoncore.Document, inverted bool) bsoncore.Document {
	if n.negated {
		inverted = !inverted
	}
	b := bsoncore.NewDocumentBuilder().AppendString("operatorName", n.op).AppendDocument("specifiedAs", n.spec)
	reason := n.info.normal
	if inverted {
		reason = n.info.inverted
	}
	if n.path == "" || n.op == "$exists" {
		return b.AppendString("reason", reason).Build()
	}
	vals, exists, truncated := pathValues(doc, n.path, !n.info.wholeArray)
	switch {
	case !exists:
		return b.AppendString("reason", "field was missing").Build()
	case n.info.expected != nil && !anyOfTypes(vals, n.info.expected):
		b.AppendString("reason", "type did not match")
		appendTypes(b, "consideredType", "consideredTypes", typeNames(vals))
		appendTypes(b, "expectedType", "expectedTypes", n.info.expected)
	default:
		b.AppendString("reason", reason)
	}
	appendConsidered(b, vals, truncated)
	if n.op == "$type" {
		appendTypes(b, "consideredType", "consideredTypes", typeNames(vals))
	}
	return b.Build()
}

// notNode is {path: {$not: …}}: the inner condition explained inverted.
type notNode struct {
	name  string
	spec  bsoncore.Document
	inner node
}

func (n *notNode) matches(doc bsoncore.Document) bool { return !n.inner.matches(doc) }

func (n *notNode) detail(doc bsoncore.Document, inverted bool) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("operatorName", "$not").
		AppendDocument("details", n.inner.detail(doc, !inverted)).Build()
}

// logicalNode is $and (explicit or implicit), $or or $nor.
type logicalNode struct {
	op   string
	kids []node
}

func (n *logicalNode) matches(doc bsoncore.Document) bool {
	switch n.op {
	case "$and":
		for _, k := range n.kids {
			if !k.matches(doc) {
				return false
			}
		}
		return true
	case "$or":
		for _, k := range n.kids {
			if k.matches(doc) {
				return true
			}
		}
		return false
	}
	for _, k := range n.kids { // $nor
		if k.matches(doc) {
			return false
		}
	}
	return true
}

// detail lists the clauses responsible: for $and those that fail (all
// that match, inverted), for $or all (those that match, inverted), for
// $nor those that match (all, inverted), each explained in the sense in
// which it is responsible.
func (n *logicalNode) detail(doc bsoncore.Document, inverted bool) bsoncore.Document {
	// Which kids to report (by whether they match) and how to explain them.
	wantMatch, kidInverted := false, inverted
	switch {
	case n.op == "$and":
		wantMatch = inverted
	case n.op == "$or":
		wantMatch = inverted
	default: // $nor
		wantMatch, kidInverted = !inverted, !inverted
	}
	field := "clausesNotSatisfied"
	if inverted {
		field = "clausesSatisfied"
	}
	arr := bsoncore.NewArrayBuilder()
	for i, k := range n.kids {
		if k.matches(doc) != wantMatch {
			continue
		}
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i)).
			AppendDocument("details", k.detail(doc, kidInverted)).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendString("operatorName", n.op).AppendArray(field, arr.Build()).Build()
}

// exprNode is $expr: its result is part of the explanation.
type exprNode struct {
	x   *explainer
	arg bsoncore.Value
}

func (n *exprNode) eval(doc bsoncore.Document) (bsoncore.Value, error) {
	e, err := expr.ParseIn(n.arg, n.x.env.scope)
	if err != nil {
		return bsoncore.Value{}, err
	}
	ctx := expr.NewContext(doc)
	if c, ok := n.x.env.coll.(expr.Collator); ok {
		ctx.SetCollator(c)
	}
	ctx.SetVar("NOW", n.x.env.now)
	for k, v := range n.x.env.vars {
		ctx.SetVar(k, v)
	}
	return e.Eval(ctx)
}

func (n *exprNode) matches(doc bsoncore.Document) bool {
	v, err := n.eval(doc)
	return err == nil && expr.Truthy(v)
}

func (n *exprNode) detail(doc bsoncore.Document, inverted bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("operatorName", "$expr").AppendDocument("specifiedAs", single("$expr", n.arg))
	v, err := n.eval(doc)
	if err != nil {
		code, msg := mongoerr.InternalError, err.Error()
		if e, ok := mongoerr.As(err); ok {
			code, msg = e.Code, e.Msg
		}
		eb := bsoncore.NewDocumentBuilder().AppendInt32("code", int32(code))
		if name := code.Name(); name != "" {
			eb.AppendString("codeName", name)
		}
		return b.AppendString("reason", "failed to evaluate aggregation expression").
			AppendDocument("details", eb.AppendString("errmsg", msg).Build()).Build()
	}
	reason := "expression did not match"
	if inverted {
		reason = "expression did match"
	}
	if v.Type == 0 { // a missing result is shown as MongoDB's Value() would be: absent
		return b.AppendString("reason", reason).Build()
	}
	return b.AppendString("reason", reason).AppendValue("expressionResult", v).Build()
}

// collectPred records the values a walker reaches; it never matches, so
// the walker visits them all.
type collectPred struct {
	vals   []bsoncore.Value
	exists bool
}

func (c *collectPred) matchValue(v bsoncore.Value, _ *state) bool {
	if v.Type != 0 {
		c.exists = true
		if v.Type != bsoncore.TypeUndefined || v.Data != nil {
			c.vals = append(c.vals, v)
		}
	}
	return false
}

// pathValues lists the values path reaches in doc as MongoDB's error
// generator considers them: a leaf array by its elements (omitting the
// array itself), or whole when wholeArray. At most maxConsideredValues
// are kept; truncated says more were reached.
func pathValues(doc bsoncore.Document, dotted string, expand bool) (vals []bsoncore.Value, exists, truncated bool) {
	c := &collectPred{}
	w := walker{pred: c, expand: expand, sortKeys: expand, st: &state{pos: -1}}
	w.fromDoc(doc, newPath(dotted).parts, -1)
	if len(c.vals) > maxConsideredValues {
		return c.vals[:maxConsideredValues], c.exists, true
	}
	return c.vals, c.exists, false
}

func typeNames(vals []bsoncore.Value) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		n := typeName(v)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func anyOfTypes(vals []bsoncore.Value, types []string) bool {
	for _, v := range vals {
		n := typeName(v)
		for _, t := range types {
			if n == t {
				return true
			}
		}
	}
	return false
}

// appendTypes adds one name as one, several as many (MongoDB's
// consideredType/consideredTypes, expectedType/expectedTypes).
func appendTypes(b *bsoncore.DocumentBuilder, one, many string, names []string) {
	switch len(names) {
	case 0:
	case 1:
		b.AppendString(one, names[0])
	default:
		arr := bsoncore.NewArrayBuilder()
		for _, n := range names {
			arr.AppendString(n)
		}
		b.AppendArray(many, arr.Build())
	}
}

// appendConsidered adds consideredValue (one) or consideredValues.
func appendConsidered(b *bsoncore.DocumentBuilder, vals []bsoncore.Value, truncated bool) {
	if len(vals) == 1 && !truncated {
		b.AppendValue("consideredValue", vals[0])
		return
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		arr.AppendValue(v)
	}
	b.AppendArray("consideredValues", arr.Build())
	if truncated {
		b.AppendBoolean("consideredValuesTruncated", true)
	}
}
