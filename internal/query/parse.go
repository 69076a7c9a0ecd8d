package query

import (
	"time"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// level is where in a filter the parser is, which decides what is allowed
// ($expr and $text only describe whole documents), and what a $expr there
// may read.
type level struct {
	sub bool     // in the object form of $elemMatch, not the filter itself or $and/$or/$nor under it
	env *exprEnv // the variables of a top-level $expr
}

var levelSubDoc = level{sub: true}

// Options are the command-wide values a filter's $expr reads besides the
// document.
type Options struct {
	// Vars are the command's let variables, by name without "$$".
	Vars map[string]bsoncore.Value
	// Now is $$NOW; the zero time means the time Parse was called, so that
	// every document the filter sees agrees on it.
	Now time.Time
	// NoSpecialFeatures refuses, before anything else is checked, the
	// features MongoDB bans in a partial index's filter: $expr, $text and
	// $jsonSchema (QueryFeatureNotAllowed) and $where (BadValue), at the
	// top level or under $and/$or/$nor.
	NoSpecialFeatures bool
	// Collation compares strings (nil: the simple collation): equality,
	// ranges and $in of strings, inside documents and arrays too. Regexes,
	// $type, $exists and field names are not collated, as in MongoDB.
	Collation bsonx.Collator
}

// exprEnv is Options as $expr uses them: the parse-time scope and the
// values bound before evaluating.
type exprEnv struct {
	coll  bsonx.Collator // Options.Collation
	scope *expr.Scope
	vars  map[string]bsoncore.Value
	now   bsoncore.Value
	// nowBytes holds now's bytes, in the Filter's own allocation.
	nowBytes [8]byte
}

// Parse parses a query filter. Errors carry MongoDB's codes: BadValue for an
// unknown operator or a malformed argument, and the codes MongoDB uses for
// regex options, $type, $jsonSchema and $expr.
func Parse(filter bsoncore.Document) (*Filter, error) { return ParseWith(filter, Options{}) }

// ParseWith is Parse for a command with let variables or its own $$NOW.
// The Filter keeps filter and opts.Vars, which must stay unchanged while
// it is used (Tree reads filter on first use).
func ParseWith(filter bsoncore.Document, opts Options) (*Filter, error) {
	if err := filter.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "filter is not a valid BSON document: %v", err)
	}
	if opts.NoSpecialFeatures {
		if err := banSpecialFeatures(filter); err != nil {
			return nil, err
		}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	// The Filter and its environment are one allocation; without let
	// variables the scope is nil, expr.Parse's own (no user variable).
	fe := &struct {
		f   Filter
		env exprEnv
	}{env: exprEnv{coll: opts.Collation, vars: opts.Vars}}
	env := &fe.env
	env.now = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(env.nowBytes[:0], opts.Now.UnixMilli())}
	if len(opts.Vars) > 0 {
		names := make([]string, 0, len(opts.Vars))
		for k := range opts.Vars {
			names = append(names, k)
		}
		env.scope = expr.NewScope(nil, names...)
	}
	root, err := parseDoc(filter, level{env: env})
	if err != nil {
		return nil, err
	}
	texts := 0
	if err := checkTexts(filter, false, &texts); err != nil {
		return nil, err
	}
	fe.f = Filter{root: root, id: idEquality(filter), raw: filter, env: env, texts: texts}
	return &fe.f, nil
}

// banSpecialFeatures is Options.NoSpecialFeatures.
func banSpecialFeatures(filter []byte) error {
	it := elemsOfBytes(filter)
	for {
		k, v, ok := it.next()
		if !ok {
			return nil
		}
		switch k := string(k); k {
		case "$expr", "$text", "$jsonSchema":
			return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "%s is not allowed in this context", k)
		case "$where":
			return mongoerr.New(mongoerr.BadValue, "$where is not allowed in this context")
		case "$and", "$or", "$nor":
			if v.Type != bsoncore.TypeArray {
				continue // the parser reports it
			}
			for _, d := range arrayValues(v) {
				if d.Type == bsoncore.TypeEmbeddedDocument {
					if err := banSpecialFeatures(d.Data); err != nil {
						return err
					}
				}
			}
		}
	}
}

// idEquality recognizes {_id: v} for Filter.IDEquality.
func idEquality(filter bsoncore.Document) bsoncore.Value {
	it := elemsOfBytes(filter)
	k, v, ok := it.next()
	if !ok || string(k) != "_id" {
		return missing
	}
	if _, _, more := it.next(); more {
		return missing
	}
	switch v.Type {
	case bsoncore.TypeRegex, bsoncore.TypeArray, bsoncore.TypeUndefined:
		return missing
	case bsoncore.TypeEmbeddedDocument:
		if isOperatorDoc(v, false) {
			return missing
		}
	}
	return v
}

// parseDoc parses a filter document (the whole filter, a member of
// $and/$or/$nor, or $elemMatch's object form) into an AND of its fields.
func parseDoc(doc []byte, lvl level) (matcher, error) {
	// The first condition is kept apart until a second comes: most
	// filters hold one ({_id: v}), and a slice for it is garbage.
	var first matcher
	var and andMatcher
	push := func(m matcher) {
		switch {
		case first == nil:
			first = m
		case and == nil:
			and = andMatcher{first, m}
		default:
			and = append(and, m)
		}
	}
	it := elemsOfBytes(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		var name string
		if string(k) == "_id" {
			name = "_id" // the commonest name, without a string of its own
		} else {
			name = string(k)
		}
		if len(name) > 0 && name[0] == '$' {
			m, err := parseTopOperator(name, v, lvl)
			if err != nil {
				return nil, err
			}
			if m != nil {
				push(m)
			}
			continue
		}
		m, err := parseField(name, v)
		if err != nil {
			return nil, err
		}
		push(m)
	}
	if and == nil && first != nil {
		return first, nil
	}
	return and, nil
}

// parseField parses {name: v}: an operator document, a regex, or an
// equality.
func parseField(name string, v bsoncore.Value) (matcher, error) {
	p := newPath(name)
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument && isOperatorDoc(v, false):
		pr, err := parseOperators(name, v)
		if err != nil {
			return nil, err
		}
		return lift(p, pr), nil
	case v.Type == bsoncore.TypeRegex:
		re, err := regexFromValue(v)
		if err != nil {
			return nil, err
		}
		return &pathNode{path: p, pred: re}, nil
	}
	// An equality's node and its comparison are one allocation.
	n := &eqNode{cmp: cmpOf(opEQ, v)}
	n.pathNode = pathNode{path: p, pred: &n.cmp}
	return &n.pathNode, nil
}

// eqNode is an equality's pathNode with its comparison beside it.
type eqNode struct {
	pathNode
	cmp cmpPred
}

// isOperatorDoc is MongoDB's isExpressionDocument: a non-empty document
// whose first field starts with '$' and that is not a DBRef ({$ref, $id},
// or with allowIncompleteDBRef any of $ref, $id, $db).
func isOperatorDoc(v bsoncore.Value, allowIncompleteDBRef bool) bool {
	it := elemsOf(v)
	k, _, ok := it.next()
	if !ok || len(k) == 0 || k[0] != '$' {
		return false
	}
	var hasRef, hasID, hasDB bool
	it = elemsOf(v)
	for {
		k, _, ok := it.next()
		if !ok {
			break
		}
		switch string(k) {
		case "$ref":
			hasRef = true
		case "$id":
			hasID = true
		case "$db":
			hasDB = true
		}
	}
	if allowIncompleteDBRef {
		return !(hasRef || hasID || hasDB)
	}
	return !(hasRef && hasID)
}

// parseTopOperator parses a field of a filter document that starts with
// '$'. A nil matcher means the operator has no effect ($comment).
func parseTopOperator(name string, v bsoncore.Value, lvl level) (matcher, error) {
	switch name {
	case "$and", "$or", "$nor":
		return parseLogical(name, v, lvl)
	case "$comment":
		return nil, nil
	case "$ref", "$id", "$db":
		// A DBRef field, at any level (MongoDB's parseDBRef): equality of
		// the field of that name with the value as given, never read as
		// operators. isOperatorDoc lets DBRef-shaped documents reach here
		// ({links: {$elemMatch: {$ref: "c", $id: 1}}}, a $pull condition).
		return &pathNode{path: newPath(name), pred: newCmp(opEQ, v)}, nil
	case "$expr":
		if lvl.sub {
			return nil, badValue("$expr can only be applied to the top-level document")
		}
		return parseExpr(v, lvl.env)
	case "$jsonSchema":
		return parseJSONSchemaMatcher(v)
	case "$where":
		return nil, badValue("$where is not supported: Cairn does not run JavaScript")
	case "$text":
		if lvl.sub {
			return nil, badValue("$text can only be applied to the top-level document")
		}
		return parseText(v)
	case "$alwaysTrue", "$alwaysFalse":
		if err := requireOne(name, v); err != nil {
			return nil, err
		}
		return constMatcher(name == "$alwaysTrue"), nil
	case "$sampleRate":
		return nil, badValue("$sampleRate is not supported yet")
	}
	return nil, badValue("unknown top level operator: %s. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.", name)
}

// requireOne checks the argument of $alwaysTrue/$alwaysFalse.
func requireOne(name string, v bsoncore.Value) error {
	n, err := integerArg(v)
	if err != nil {
		return err
	}
	if n != 1 {
		return errorf(mongoerr.FailedToParse, "%s must be an integer value of 1", name)
	}
	return nil
}

// pathlessOperators are the operators that describe a whole document; an
// $elemMatch whose first field is one of them has the object form.
var pathlessOperators = map[string]bool{
	"$and": true, "$or": true, "$nor": true, "$expr": true, "$where": true,
	"$text": true, "$comment": true, "$jsonSchema": true, "$alwaysTrue": true,
	"$alwaysFalse": true, "$sampleRate": true,
}

// parseOperators parses an operator document such as {$gt: 1, $lt: 5} on
// field name into an AND of single-value predicates.
func parseOperators(name string, ops bsoncore.Value) (pred, error) {
	var and andPred
	it := elemsOf(ops)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		p, err := parseOperator(name, string(k), v, ops)
		if err != nil {
			return nil, err
		}
		if p != nil {
			and = append(and, p)
		}
	}
	if len(and) == 1 {
		return and[0], nil
	}
	return and, nil
}

// parseOperator parses one operator op with argument v; ops is the whole
// operator document ($regex and $options read each other). A nil pred
// means the operator was consumed by another ($options by $regex).
func parseOperator(name, op string, v, ops bsoncore.Value) (pred, error) {
	switch op {
	case "$eq":
		return newCmp(opEQ, v), nil
	case "$ne":
		if v.Type == bsoncore.TypeRegex {
			return nil, badValue("Can't have regex as arg to $ne.")
		}
		return notPred{newCmp(opEQ, v)}, nil
	case "$gt", "$gte", "$lt", "$lte":
		if v.Type == bsoncore.TypeRegex {
			return nil, badValue("Can't have RegEx as arg to predicate over field '%s'.", name)
		}
		return newCmp(cmpOps[op], v), nil
	case "$in":
		return parseIn(v, "$in")
	case "$nin":
		p, err := parseIn(v, "$nin")
		if err != nil {
			return nil, err
		}
		return notPred{p}, nil
	case "$exists":
		if trueValue(v) {
			return existsPred{}, nil
		}
		return notPred{existsPred{}}, nil
	case "$type":
		return parseType(v)
	case "$size":
		return parseSize(v)
	case "$all":
		return parseAll(name, v)
	case "$elemMatch":
		return parseElemMatch(v)
	case "$mod":
		return parseMod(v)
	case "$regex":
		return parseRegexOperator(ops)
	case "$options":
		if !hasField(ops, "$regex") {
			return nil, badValue("$options needs a $regex")
		}
		return nil, nil
	case "$not":
		return parseNot(name, v)
	case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
		return parseBits(op, v)
	case "$where":
		return nil, badValue("$where cannot be applied to a field")
	case "$geoWithin", "$within":
		return parseGeoWithin(v)
	case "$geoIntersects":
		return parseGeoIntersects(v)
	case "$near", "$nearSphere":
		return parseNear(op, v, ops)
	case "$minDistance", "$maxDistance":
		if !hasField(ops, "$near") && !hasField(ops, "$nearSphere") {
			return nil, badValue("%s must be specified with $near or $nearSphere", op)
		}
		return nil, nil
	}
	return nil, badValue("unknown operator: %s", op)
}

func hasField(doc bsoncore.Value, name string) bool {
	return lookup(doc.Data, name).Type != 0
}

// knownFieldOperators are the operators parseOperator accepts; $all
// refuses documents that start with one.
var knownFieldOperators = map[string]bool{
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$nin": true, "$exists": true, "$type": true, "$size": true,
	"$all": true, "$elemMatch": true, "$mod": true, "$regex": true, "$options": true,
	"$not": true, "$bitsAllSet": true, "$bitsAnySet": true, "$bitsAllClear": true,
	"$bitsAnyClear": true, "$geoWithin": true, "$geoIntersects": true, "$near": true,
	"$nearSphere": true, "$within": true, "$minDistance": true, "$maxDistance": true,
}

// trueValue is MongoDB's BSONElement::trueValue, used by $exists.
func trueValue(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return b
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, ok := bsonx.AsFloat64(v)
		return ok && f != 0
	}
	return true
}
