package expr

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Expr is a parsed expression.
type Expr interface {
	// Eval computes the expression's value in ctx. The result may be
	// Missing.
	Eval(ctx *Context) (bsoncore.Value, error)
}

// Context is what an expression is evaluated against: the document
// ($$ROOT), the current value ($$CURRENT), user variables and the
// command-wide system variables $$NOW and $$CLUSTER_TIME. A Context may be
// reused for many documents with Reset.
type Context struct {
	root    bsoncore.Value
	current bsoncore.Value
	vars    map[string]bsoncore.Value
	// now is $$NOW: one value for the whole command. SetNow fixes it; if
	// nobody did, the first read takes the clock, so that every document
	// evaluated in this context sees the same instant.
	now bsoncore.Value
	// clusterTime is $$CLUSTER_TIME, a timestamp; Missing on a standalone
	// node, where reading it is an error (51144) as in MongoDB.
	clusterTime bsoncore.Value
	// op, when set, is the operation's context: loops over an array's
	// elements ($map, $filter, $reduce) end with its cause once it ends.
	op   context.Context
	poll opctx.Poll
	// coll is the collation string comparisons use (nil: simple): the
	// comparison operators, $in, $indexOfArray, the set operators, $min,
	// $max, $minN, $maxN and $sortArray.
	coll Collator
}

// SetCollator makes the comparisons of expressions evaluated in c compare
// strings by coll (an untyped nil: the simple collation), as MongoDB's
// expression context carries the operation's collator.
func (c *Context) SetCollator(coll Collator) { c.coll = coll }

// Collator is the collation c's comparisons use (nil: simple).
func (c *Context) Collator() Collator { return c.coll }

// SetOperation makes long evaluations in c stop when ctx ends (maxTimeMS,
// killOp, a client gone; package opctx).
func (c *Context) SetOperation(ctx context.Context) { c.op = ctx }

// interrupted is the operation's end, checked every few elements of a loop.
func (c *Context) interrupted() error {
	if c.op == nil {
		return nil
	}
	return c.poll.Err(c.op)
}

// NewContext returns a context whose $$ROOT and $$CURRENT are doc.
func NewContext(doc bsoncore.Document) *Context {
	c := &Context{}
	c.Reset(doc)
	return c
}

// Reset rebinds $$ROOT and $$CURRENT to doc and keeps user variables.
func (c *Context) Reset(doc bsoncore.Document) {
	c.root = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	c.current = c.root
}

// SetCurrent rebinds $$CURRENT (what "$field" paths read) to doc and keeps
// $$ROOT: $redact evaluates its expression at every embedded document.
func (c *Context) SetCurrent(doc bsoncore.Document) {
	c.current = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
}

// SetVar binds the user variable name (without "$$") to v. Binding "NOW"
// is SetNow with a date value (the agg layer binds $$NOW this way);
// binding "CURRENT" rebinds $$CURRENT, which $let allows.
func (c *Context) SetVar(name string, v bsoncore.Value) {
	switch name {
	case "NOW":
		c.now = v
		return
	case "CURRENT":
		c.current = v
		return
	}
	if c.vars == nil {
		c.vars = make(map[string]bsoncore.Value)
	}
	c.vars[name] = v
}

// SetNow fixes $$NOW to t for every evaluation in this context. A command
// calls it once, so that all its documents and stages agree on the time.
func (c *Context) SetNow(t time.Time) { c.now = Date(t.UnixMilli()) }

// SetClusterTime makes $$CLUSTER_TIME the timestamp (t, i). Without it,
// reading $$CLUSTER_TIME fails as on a standalone MongoDB server.
func (c *Context) SetClusterTime(t, i uint32) {
	c.clusterTime = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

// nowValue is $$NOW, reading the clock the first time if SetNow was not
// called.
func (c *Context) nowValue() bsoncore.Value {
	if c.now.Type == 0 {
		c.SetNow(time.Now())
	}
	return c.now
}

// Scope is the parse-time view of which variables are defined. Stages that
// bind variables ($let, $map, $lookup's let) add names to a child scope.
type Scope struct {
	parent *Scope
	names  map[string]bool
}

// NewScope returns a scope holding names in addition to those of parent
// (which may be nil: the built-in variables are always defined).
func NewScope(parent *Scope, names ...string) *Scope {
	s := &Scope{parent: parent, names: make(map[string]bool, len(names))}
	for _, n := range names {
		s.names[n] = true
	}
	return s
}

func (s *Scope) defines(name string) bool {
	for ; s != nil; s = s.parent {
		if s.names[name] {
			return true
		}
	}
	return false
}

// builtinVars are the system variables every scope defines.
var builtinVars = map[string]bool{"ROOT": true, "CURRENT": true, "REMOVE": true, "NOW": true, "CLUSTER_TIME": true}

// parser builds an operator's Expr from its raw argument.
type parser func(arg bsoncore.Value, s *Scope) (Expr, error)

// operators is the operator table; op_*.go files fill it in init.
var operators = map[string]parser{}

// duplicateOps records names registered twice, a programming error that
// TestOperatorTable reports.
var duplicateOps []string

// register adds an operator to the table.
func register(name string, p parser) {
	if _, dup := operators[name]; dup {
		duplicateOps = append(duplicateOps, name)
	}
	operators[name] = p
}

// IsOperator reports whether name (with its "$") is a known expression
// operator. Projection parsing uses it to tell {a: {$add: …}} from a
// sub-projection.
func IsOperator(name string) bool {
	_, ok := operators[name]
	return ok
}

// Parse parses an expression operand: a "$field.path", a "$$variable", an
// operator object {$op: args}, an object or array literal whose members are
// expressions, or a constant.
func Parse(v bsoncore.Value) (Expr, error) {
	return ParseIn(v, nil)
}

// ParseIn is Parse with the user variables of scope s defined.
func ParseIn(v bsoncore.Value, s *Scope) (Expr, error) {
	switch v.Type {
	case bsoncore.TypeString:
		str, _ := v.StringValueOK()
		if strings.HasPrefix(str, "$") {
			return parseFieldPath(str, s)
		}
	case bsoncore.TypeEmbeddedDocument:
		return parseObject(v, s)
	case bsoncore.TypeArray:
		return parseArray(v, s)
	}
	return constant{v}, nil
}

// parseObject parses {$op: arg} or an object literal.
func parseObject(v bsoncore.Value, s *Scope) (Expr, error) {
	it := elemsOf(v)
	first, arg, ok := it.next()
	if !ok {
		return objectExpr{}, nil
	}
	if len(first) > 0 && first[0] == '$' {
		if _, _, more := it.next(); more {
			return nil, errorf(codeExpressionOneField,
				"an expression specification must contain exactly one field, the name of the expression. Found 2 fields in %s", bsoncore.Document(v.Data))
		}
		p, known := operators[string(first)]
		if !known {
			return nil, errorf(codeInvalidPipelineOperator, "Unrecognized expression '%s'", first)
		}
		return p(arg, s)
	}
	return parseObjectLiteral(v, s)
}

// objectExpr is an object literal whose values are expressions.
type objectExpr struct {
	keys  []string
	exprs []Expr
}

func parseObjectLiteral(v bsoncore.Value, s *Scope) (Expr, error) {
	var o objectExpr
	it := elemsOf(v)
	for {
		k, val, ok := it.next()
		if !ok {
			return o, nil
		}
		key := string(k)
		if err := checkFieldName(key); err != nil {
			return nil, err
		}
		e, err := ParseIn(val, s)
		if err != nil {
			return nil, err
		}
		o.keys = append(o.keys, key)
		o.exprs = append(o.exprs, e)
	}
}

// checkFieldName applies MongoDB's rules for a field name in an object
// literal or a path.
func checkFieldName(name string) error {
	switch {
	case name == "":
		return errorf(codeFieldPathEmpty, "FieldPath field names may not be empty strings.")
	case name[0] == '$':
		return errorf(codeFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	case strings.IndexByte(name, '.') >= 0:
		return errorf(codeFieldPathDot, "FieldPath field names may not contain '.'. Consider using $getField or $setField.")
	}
	return nil
}

func (o objectExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	idx, buf := bsoncore.AppendDocumentStart(nil)
	for i, e := range o.exprs {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if v.Type != 0 {
			buf = bsoncore.AppendValueElement(buf, o.keys[i], v)
		}
	}
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf}, nil
}

// arrayExpr is an array literal whose elements are expressions.
type arrayExpr []Expr

func parseArray(v bsoncore.Value, s *Scope) (Expr, error) {
	var a arrayExpr
	for _, e := range arrayValues(v) {
		x, err := ParseIn(e, s)
		if err != nil {
			return nil, err
		}
		a = append(a, x)
	}
	return a, nil
}

func (a arrayExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(a))
	for i, e := range a {
		v, err := e.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		vals[i] = v
	}
	return Array(vals), nil
}

// constant is a literal value.
type constant struct{ v bsoncore.Value }

func (c constant) Eval(*Context) (bsoncore.Value, error) { return c.v, nil }

// parseLiteral is $literal: its argument, unevaluated.
func parseLiteral(arg bsoncore.Value, _ *Scope) (Expr, error) { return constant{arg}, nil }

func init() { register("$literal", parseLiteral) }

// fieldPath is "$a.b" (variable "CURRENT") or "$$var.a.b".
type fieldPath struct {
	variable string
	parts    []string
}

func parseFieldPath(s string, scope *Scope) (Expr, error) {
	var f fieldPath
	if strings.HasPrefix(s, "$$") {
		name, rest, _ := strings.Cut(s[2:], ".")
		if name == "" || !(builtinVars[name] || scope.defines(name)) {
			if name == "" || !isVarName(name) {
				return nil, errorf(codeBadVariableName, "'%s' starts with an invalid character for a user variable name", name)
			}
			return nil, errorf(codeUndefinedVariable, "Use of undefined variable: %s", name)
		}
		f.variable = name
		if rest == "" {
			return f, nil
		}
		s = rest
	} else {
		if s == "$" {
			return nil, errorf(codeFieldPathDollarOnly, "'$' by itself is not a valid FieldPath")
		}
		f.variable = "CURRENT"
		s = s[1:]
	}
	for p := range strings.SplitSeq(s, ".") {
		if p == "" {
			return nil, errorf(codeFieldPathEmpty, "FieldPath field names may not be empty strings.")
		}
		if p[0] == '$' {
			return nil, errorf(codeFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		f.parts = append(f.parts, p)
	}
	return f, nil
}

func isVarName(n string) bool {
	c := n[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func (f fieldPath) Eval(ctx *Context) (bsoncore.Value, error) {
	var v bsoncore.Value
	switch f.variable {
	case "CURRENT":
		v = ctx.current
	case "ROOT":
		v = ctx.root
	case "REMOVE":
		return Missing, nil
	case "NOW":
		v = ctx.nowValue()
	case "CLUSTER_TIME":
		if ctx.clusterTime.Type == 0 {
			return Missing, errorf(codeClusterTimeUnavailable, "Builtin variable '$$CLUSTER_TIME' is not available")
		}
		v = ctx.clusterTime
	default:
		v = ctx.vars[f.variable]
	}
	return walkPath(v, f.parts), nil
}

// walkPath follows parts from v as aggregation does: through documents by
// name, and over arrays by mapping the rest of the path onto each element
// (documents and nested arrays; other elements are dropped). Numeric parts
// are field names, never array indexes.
func walkPath(v bsoncore.Value, parts []string) bsoncore.Value {
	if len(parts) == 0 {
		return v
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walkPath(field(v, parts[0]), parts[1:])
	case bsoncore.TypeArray:
		return walkArray(v, parts)
	}
	return Missing
}

func walkArray(arr bsoncore.Value, parts []string) bsoncore.Value {
	var out []bsoncore.Value
	it := elemsOf(arr)
	for {
		_, e, ok := it.next()
		if !ok {
			return Array(out)
		}
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			if r := walkPath(e, parts); r.Type != 0 {
				out = append(out, r)
			}
		case bsoncore.TypeArray:
			out = append(out, walkArray(e, parts))
		}
	}
}

// evalArgs evaluates a list of argument expressions.
func evalArgs(ctx *Context, args []Expr) ([]bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(args))
	for i, a := range args {
		v, err := a.Eval(ctx)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// parseArgs parses an operator's argument list: an array's elements, or a
// single non-array operand as a list of one (MongoDB's
// ExpressionNary::parseArguments).
func parseArgs(arg bsoncore.Value, s *Scope) ([]Expr, error) {
	if arg.Type != bsoncore.TypeArray {
		e, err := ParseIn(arg, s)
		if err != nil {
			return nil, err
		}
		return []Expr{e}, nil
	}
	var out []Expr
	for _, v := range arrayValues(arg) {
		e, err := ParseIn(v, s)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// parseFixedArgs parses exactly n arguments for operator op.
func parseFixedArgs(op string, n int, arg bsoncore.Value, s *Scope) ([]Expr, error) {
	args, err := parseArgs(arg, s)
	if err != nil {
		return nil, err
	}
	if len(args) != n {
		noun := "arguments"
		if n == 1 {
			noun = "argument"
		}
		return nil, errorf(codeWrongArgCount, "Expression %s takes exactly %d %s. %d were passed in.", op, n, noun, len(args))
	}
	return args, nil
}

// DuplicateOperators lists operator names registered more than once (a
// programming error in an op_*.go file; TestOperatorTable checks it).
func DuplicateOperators() []string { return duplicateOps }

// namedArgs describes an operator whose argument is an object of named
// expressions ({input: …, find: …}): the names it accepts and MongoDB's
// codes and messages for a non-object and for an unknown name (each
// message gets the operator and the offending value or name), and the
// names that must be present, checked in order.
type namedArgs struct {
	op         string
	names      []string
	notObject  mongoerr.Code
	notObjMsg  string // format with op and the argument
	unknown    mongoerr.Code
	unknownMsg string // format with op and the name
	required   []requiredArg
}

// requiredArg is a name an operator cannot do without, and MongoDB's error
// when it is absent.
type requiredArg struct {
	name string
	code mongoerr.Code
	msg  string // format with op
}

// foundUnknownArg is the message most operators give for an unknown name.
const foundUnknownArg = "%s found an unknown argument: %s"

// parse parses the named expressions present in arg, in scope s.
func (n namedArgs) parse(arg bsoncore.Value, s *Scope) (map[string]Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(n.notObject, n.notObjMsg, n.op, arg)
	}
	out := make(map[string]Expr, len(n.names))
	it := elemsOf(arg)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		name := string(k)
		if !slices.Contains(n.names, name) {
			return nil, errorf(n.unknown, n.unknownMsg, n.op, name)
		}
		e, err := ParseIn(v, s)
		if err != nil {
			return nil, err
		}
		out[name] = e
	}
	for _, r := range n.required {
		if out[r.name] == nil {
			return nil, errorf(r.code, r.msg, n.op)
		}
	}
	return out, nil
}

// bindVar binds the user variable name to v and returns the function that
// restores the previous binding (or its absence): a variable bound by
// $let, $map or $reduce shadows an outer one only inside the operator.
func (c *Context) bindVar(name string, v bsoncore.Value) (restore func()) {
	if name == "CURRENT" {
		old := c.current
		c.current = v
		return func() { c.current = old }
	}
	old, had := c.vars[name]
	c.SetVar(name, v)
	return func() {
		if had {
			c.vars[name] = old
		} else {
			delete(c.vars, name)
		}
	}
}
