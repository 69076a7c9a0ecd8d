package query

import (
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $jsonSchema validates documents against a JSON Schema (draft 4, with
// MongoDB's bsonType keyword and restrictions).
//
// MongoDB translates a schema into match expressions; Cairn validates
// values directly, with the same meaning:
//
//   - a keyword that restricts one type (minimum for numbers, minLength for
//     strings, items for arrays, properties for objects, …) is satisfied by
//     values of any other type, as in JSON Schema;
//   - a property's schema applies to the property's value exactly as
//     stored: arrays are not traversed (JSON Schema has no implicit array
//     matching);
//   - a property that is absent satisfies its schema unless it is required;
//   - enum compares with numbers equal across types and documents equal
//     regardless of field order;
//   - "integer" (JSON type), $ref, $schema, default, definitions, format
//     and id are refused as MongoDB refuses them, and unknown keywords are
//     errors (FailedToParse).

type schemaMatcher struct{ s *schema }

func parseJSONSchemaMatcher(v bsoncore.Value) (matcher, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
	}
	s, err := parseSchema(v)
	if err != nil {
		return nil, err
	}
	return schemaMatcher{s}, nil
}

func (m schemaMatcher) match(doc []byte, _ *state) bool {
	return m.s.valid(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

type schema struct {
	types *typeSet

	min, max             *cmpPred
	multipleOf           *big.Rat
	minLength, maxLength int64
	pattern              *compiledRegex

	minItems, maxItems int64
	uniqueItems        bool
	items              *schema   // items as one schema
	tuple              []*schema // items as an array of schemas
	additionalItems    *schema
	noAdditionalItems  bool

	required            []string
	properties          []namedSchema
	patternProperties   []patternSchema
	additionalProps     *schema
	noAdditionalProps   bool
	checkAdditional     bool
	minProps, maxProps  int64
	dependencies        []dependency
	allOf, anyOf, oneOf []*schema
	not                 *schema
	enum                []bsoncore.Value
}

type namedSchema struct {
	name string
	s    *schema
}

type patternSchema struct {
	re *compiledRegex
	s  *schema
}

type dependency struct {
	name  string
	props []string // property dependency
	s     *schema  // schema dependency
}

// schemaKeywords are the keywords Cairn implements; unsupportedKeywords are
// those MongoDB refuses.
var (
	schemaKeywords = map[string]bool{
		"additionalItems": true, "additionalProperties": true, "allOf": true, "anyOf": true,
		"bsonType": true, "dependencies": true, "description": true, "enum": true,
		"exclusiveMaximum": true, "exclusiveMinimum": true, "items": true, "maxItems": true,
		"maxLength": true, "maxProperties": true, "maximum": true, "minItems": true,
		"minLength": true, "minProperties": true, "minimum": true, "multipleOf": true,
		"not": true, "oneOf": true, "pattern": true, "patternProperties": true,
		"properties": true, "required": true, "title": true, "type": true, "uniqueItems": true,
	}
	unsupportedKeywords = map[string]bool{
		"$ref": true, "$schema": true, "default": true, "definitions": true, "format": true, "id": true,
		"encrypt": true, "encryptMetadata": true,
	}
	jsonTypeAliases = map[string]bsoncore.Type{
		"array": bsoncore.TypeArray, "boolean": bsoncore.TypeBoolean, "null": bsoncore.TypeNull,
		"object": bsoncore.TypeEmbeddedDocument, "string": bsoncore.TypeString,
	}
)

func schemaErr(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}

func parseSchema(v bsoncore.Value) (*schema, error) {
	kw := map[string]bsoncore.Value{}
	it := elemsOf(v)
	for {
		k, val, ok := it.next()
		if !ok {
			break
		}
		name := string(k)
		switch {
		case unsupportedKeywords[name]:
			return nil, schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword '%s' is not currently supported", name)
		case !schemaKeywords[name]:
			return nil, schemaErr(mongoerr.FailedToParse, "Unknown $jsonSchema keyword: %s", name)
		}
		if _, dup := kw[name]; dup {
			return nil, schemaErr(mongoerr.FailedToParse, "Duplicate $jsonSchema keyword: %s", name)
		}
		kw[name] = val
	}
	s := &schema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
	for _, name := range []string{"description", "title"} {
		if d, ok := kw[name]; ok && d.Type != bsoncore.TypeString {
			return nil, schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be of type string", name)
		}
	}
	steps := []func(*schema, map[string]bsoncore.Value) error{
		parseSchemaType, parseSchemaScalars, parseSchemaArrays, parseSchemaObjects, parseSchemaLogic,
	}
	for _, step := range steps {
		if err := step(s, kw); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func parseSchemaType(s *schema, kw map[string]bsoncore.Value) error {
	t, hasType := kw["type"]
	bt, hasBSONType := kw["bsonType"]
	switch {
	case hasType && hasBSONType:
		return schemaErr(mongoerr.FailedToParse, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
	case hasType:
		set, err := parseSchemaTypeSet("type", t, jsonTypeAliases, true)
		s.types = set
		return err
	case hasBSONType:
		set, err := parseSchemaTypeSet("bsonType", bt, typeAliases, false)
		s.types = set
		return err
	}
	return nil
}

func parseSchemaTypeSet(keyword string, v bsoncore.Value, aliases map[string]bsoncore.Type, json bool) (*typeSet, error) {
	var names []bsoncore.Value
	switch v.Type {
	case bsoncore.TypeString:
		names = []bsoncore.Value{v}
	case bsoncore.TypeArray:
		names = arrayValues(v)
	default:
		return nil, schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be either a string or an array of strings", keyword)
	}
	set := &typeSet{}
	seen := map[string]bool{}
	for _, n := range names {
		name, ok := n.StringValueOK()
		if !ok {
			return nil, schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' array elements must be strings", keyword)
		}
		if json && name == "integer" {
			return nil, schemaErr(mongoerr.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
		}
		if seen[name] {
			return nil, schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword '%s' has duplicate value: %s", keyword, name)
		}
		seen[name] = true
		if err := set.add(n, aliases); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return nil, schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must name at least one type", keyword)
	}
	return set, nil
}

// nonNegative parses a length keyword (MongoDB's
// parseIntegerElementToNonNegativeLong).
func nonNegative(v bsoncore.Value) (int64, error) {
	n, err := integerArg(v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, schemaErr(mongoerr.FailedToParse, "Expected a positive number in: %s", v)
	}
	return n, nil
}

func parseSchemaScalars(s *schema, kw map[string]bsoncore.Value) error {
	if p, ok := kw["pattern"]; ok {
		str, isStr := p.StringValueOK()
		if !isStr {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'pattern' must be a string")
		}
		re, err := compileRegex(str, "")
		if err != nil {
			return err
		}
		s.pattern = re
	}
	for name, dst := range map[string]*int64{"maxLength": &s.maxLength, "minLength": &s.minLength} {
		if v, ok := kw[name]; ok {
			n, err := nonNegative(v)
			if err != nil {
				return err
			}
			*dst = n
		}
	}
	if m, ok := kw["multipleOf"]; ok {
		if !isNumeric(m) {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'multipleOf' must be a number")
		}
		r, ok := ratOf(m)
		if !ok || r.Sign() <= 0 {
			return schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword 'multipleOf' must have a positive value")
		}
		s.multipleOf = r
	}
	var err error
	if s.max, err = parseBound(kw, "maximum", "exclusiveMaximum", opLTE, opLT); err != nil {
		return err
	}
	s.min, err = parseBound(kw, "minimum", "exclusiveMinimum", opGTE, opGT)
	return err
}

func parseBound(kw map[string]bsoncore.Value, name, exclusive string, inclusiveOp, exclusiveOp cmpOp) (*cmpPred, error) {
	v, ok := kw[name]
	excl, hasExcl := kw[exclusive]
	if !ok {
		if hasExcl {
			return nil, schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must be a present if %s is present", name, exclusive)
		}
		return nil, nil
	}
	op := inclusiveOp
	if hasExcl {
		b, isBool := excl.BooleanOK()
		if excl.Type != bsoncore.TypeBoolean || !isBool {
			return nil, schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a boolean", exclusive)
		}
		if b {
			op = exclusiveOp
		}
	}
	if !isNumeric(v) {
		return nil, schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a number", name)
	}
	return newCmp(op, v), nil
}

// ratOf is the exact value of a number, a double taken (as MongoDB's
// Decimal128 conversion does) to 15 significant digits.
func ratOf(v bsoncore.Value) (*big.Rat, bool) {
	var s string
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		i, _ := integerValue(v)
		return new(big.Rat).SetInt64(i), true
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		s = strconv.FormatFloat(f, 'e', 14, 64)
	case bsoncore.TypeDecimal128:
		h, l, _ := v.Decimal128OK()
		s = bson.NewDecimal128(h, l).String()
	default:
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

func parseSchemaArrays(s *schema, kw map[string]bsoncore.Value) error {
	for name, dst := range map[string]*int64{"maxItems": &s.maxItems, "minItems": &s.minItems} {
		if v, ok := kw[name]; ok {
			n, err := nonNegative(v)
			if err != nil {
				return err
			}
			*dst = n
		}
	}
	if u, ok := kw["uniqueItems"]; ok {
		b, isBool := u.BooleanOK()
		if u.Type != bsoncore.TypeBoolean || !isBool {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'uniqueItems' must be a boolean")
		}
		s.uniqueItems = b
	}
	if items, ok := kw["items"]; ok {
		switch items.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, err := parseSchema(items)
			if err != nil {
				return err
			}
			s.items = sub
		case bsoncore.TypeArray:
			s.tuple = []*schema{}
			for _, e := range arrayValues(items) {
				if e.Type != bsoncore.TypeEmbeddedDocument {
					return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'items' requires that each element of the array is an object, but found a %s", typeName(e))
				}
				sub, err := parseSchema(e)
				if err != nil {
					return err
				}
				s.tuple = append(s.tuple, sub)
			}
		default:
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'items' must be an array or an object, not %s", typeName(items))
		}
	}
	if a, ok := kw["additionalItems"]; ok {
		switch a.Type {
		case bsoncore.TypeBoolean:
			b, _ := a.BooleanOK()
			s.noAdditionalItems = !b
		case bsoncore.TypeEmbeddedDocument:
			sub, err := parseSchema(a)
			if err != nil {
				return err
			}
			s.additionalItems = sub
		default:
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a %s", typeName(a))
		}
	}
	return nil
}

func parseSchemaObjects(s *schema, kw map[string]bsoncore.Value) error {
	if r, ok := kw["required"]; ok {
		if r.Type != bsoncore.TypeArray {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'required' must be an array, but found an element of type %s", typeName(r))
		}
		seen := map[string]bool{}
		for _, e := range arrayValues(r) {
			name, ok := e.StringValueOK()
			if !ok {
				return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'required' must be an array of strings, but found an element of type: %s", typeName(e))
			}
			if seen[name] {
				return schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword 'required' array cannot contain duplicate values")
			}
			seen[name] = true
			s.required = append(s.required, name)
		}
		if len(s.required) == 0 {
			return schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword 'required' cannot be an empty array")
		}
	}
	if p, ok := kw["properties"]; ok {
		if p.Type != bsoncore.TypeEmbeddedDocument {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'properties' must be an object")
		}
		it := elemsOf(p)
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return schemaErr(mongoerr.TypeMismatch, "Nested schema for $jsonSchema property '%s' must be an object", k)
			}
			sub, err := parseSchema(v)
			if err != nil {
				return err
			}
			s.properties = append(s.properties, namedSchema{name: string(k), s: sub})
		}
	}
	if pp, ok := kw["patternProperties"]; ok {
		if pp.Type != bsoncore.TypeEmbeddedDocument {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'patternProperties' must be an object")
		}
		it := elemsOf(pp)
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'patternProperties' has property '%s' which is not an object", k)
			}
			re, err := compileRegex(string(k), "")
			if err != nil {
				return err
			}
			sub, err := parseSchema(v)
			if err != nil {
				return err
			}
			s.patternProperties = append(s.patternProperties, patternSchema{re: re, s: sub})
		}
		s.checkAdditional = true
	}
	if a, ok := kw["additionalProperties"]; ok {
		switch a.Type {
		case bsoncore.TypeBoolean:
			b, _ := a.BooleanOK()
			s.noAdditionalProps = !b
		case bsoncore.TypeEmbeddedDocument:
			sub, err := parseSchema(a)
			if err != nil {
				return err
			}
			s.additionalProps = sub
		default:
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'additionalProperties' must be an object or a boolean")
		}
		s.checkAdditional = true
	}
	for name, dst := range map[string]*int64{"maxProperties": &s.maxProps, "minProperties": &s.minProps} {
		if v, ok := kw[name]; ok {
			n, err := nonNegative(v)
			if err != nil {
				return err
			}
			*dst = n
		}
	}
	if d, ok := kw["dependencies"]; ok {
		return parseDependencies(s, d)
	}
	return nil
}

func parseDependencies(s *schema, d bsoncore.Value) error {
	if d.Type != bsoncore.TypeEmbeddedDocument {
		return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'dependencies' must be an object")
	}
	it := elemsOf(d)
	for {
		k, v, ok := it.next()
		if !ok {
			return nil
		}
		dep := dependency{name: string(k)}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, err := parseSchema(v)
			if err != nil {
				return err
			}
			dep.s = sub
		case bsoncore.TypeArray:
			vals := arrayValues(v)
			if len(vals) == 0 {
				return schemaErr(mongoerr.FailedToParse, "property '%s' in $jsonSchema keyword 'dependencies' cannot be an empty array", k)
			}
			seen := map[string]bool{}
			for _, e := range vals {
				name, ok := e.StringValueOK()
				if !ok {
					return schemaErr(mongoerr.TypeMismatch, "array '%s' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: %s", k, typeName(e))
				}
				if seen[name] {
					return schemaErr(mongoerr.FailedToParse, "array '%s' in $jsonSchema keyword 'dependencies' contains duplicate element: %s", k, name)
				}
				seen[name] = true
				dep.props = append(dep.props, name)
			}
		default:
			return schemaErr(mongoerr.TypeMismatch, "property '%s' in $jsonSchema keyword 'dependencies' must be either an object or an array", k)
		}
		s.dependencies = append(s.dependencies, dep)
	}
}

func parseSchemaLogic(s *schema, kw map[string]bsoncore.Value) error {
	for name, dst := range map[string]*[]*schema{"allOf": &s.allOf, "anyOf": &s.anyOf, "oneOf": &s.oneOf} {
		v, ok := kw[name]
		if !ok {
			continue
		}
		if v.Type != bsoncore.TypeArray {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array", name)
		}
		vals := arrayValues(v)
		if len(vals) == 0 {
			return schemaErr(mongoerr.BadValue, "$jsonSchema keyword '%s' must be a non-empty array", name)
		}
		for _, e := range vals {
			if e.Type != bsoncore.TypeEmbeddedDocument {
				return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array of objects, but found an element of type %s", name, typeName(e))
			}
			sub, err := parseSchema(e)
			if err != nil {
				return err
			}
			*dst = append(*dst, sub)
		}
	}
	if n, ok := kw["not"]; ok {
		if n.Type != bsoncore.TypeEmbeddedDocument {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'not' must be an object, but found an element of type %s", typeName(n))
		}
		sub, err := parseSchema(n)
		if err != nil {
			return err
		}
		s.not = sub
	}
	if e, ok := kw["enum"]; ok {
		if e.Type != bsoncore.TypeArray {
			return schemaErr(mongoerr.TypeMismatch, "$jsonSchema keyword 'enum' must be an array, but found an element of type %s", typeName(e))
		}
		vals := arrayValues(e)
		if len(vals) == 0 {
			return schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword 'enum' cannot be an empty array")
		}
		for i, v := range vals {
			for _, w := range vals[:i] {
				if equalUnordered(v, w) {
					return schemaErr(mongoerr.FailedToParse, "$jsonSchema keyword 'enum' array cannot contain duplicate values.")
				}
			}
		}
		s.enum = vals
	}
	return nil
}

// valid reports whether v satisfies the schema. v is never missing: an
// absent property is handled by its parent.
func (s *schema) valid(v bsoncore.Value) bool {
	if s.types != nil && !s.types.has(v.Type) {
		return false
	}
	checks := []func(bsoncore.Value) bool{s.validScalar, s.validArray, s.validObject, s.validLogic}
	for _, c := range checks {
		if !c(v) {
			return false
		}
	}
	return true
}

func (s *schema) validScalar(v bsoncore.Value) bool {
	switch {
	case isNumeric(v):
		if s.min != nil && !s.min.matchValue(v, nil) || s.max != nil && !s.max.matchValue(v, nil) {
			return false
		}
		if s.multipleOf != nil {
			r, ok := ratOf(v)
			if !ok || !new(big.Rat).Quo(r, s.multipleOf).IsInt() {
				return false
			}
		}
	case v.Type == bsoncore.TypeString:
		b, _ := stringBytes(v)
		n := int64(utf8.RuneCount(b))
		if s.minLength >= 0 && n < s.minLength || s.maxLength >= 0 && n > s.maxLength {
			return false
		}
		if s.pattern != nil && !s.pattern.match(b) {
			return false
		}
	}
	return true
}

func (s *schema) validArray(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeArray {
		return true
	}
	vals := arrayValues(v)
	n := int64(len(vals))
	if s.minItems >= 0 && n < s.minItems || s.maxItems >= 0 && n > s.maxItems {
		return false
	}
	if s.uniqueItems {
		for i := range vals {
			for j := range i {
				if bsonx.Equal(vals[i], vals[j]) {
					return false
				}
			}
		}
	}
	if s.items != nil {
		for _, e := range vals {
			if !s.items.valid(e) {
				return false
			}
		}
	}
	if s.tuple != nil {
		for i, e := range vals {
			switch {
			case i < len(s.tuple):
				if !s.tuple[i].valid(e) {
					return false
				}
			case s.noAdditionalItems:
				return false
			case s.additionalItems != nil && !s.additionalItems.valid(e):
				return false
			}
		}
	}
	return true
}

func (s *schema) validObject(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return true
	}
	for _, r := range s.required {
		if lookup(v.Data, r).Type == 0 {
			return false
		}
	}
	for _, p := range s.properties {
		if f := lookup(v.Data, p.name); f.Type != 0 && !p.s.valid(f) {
			return false
		}
	}
	n := int64(0)
	it := elemsOf(v)
	for {
		k, f, ok := it.next()
		if !ok {
			break
		}
		n++
		if s.checkAdditional && !s.validExtraProperty(string(k), f) {
			return false
		}
	}
	if s.minProps >= 0 && n < s.minProps || s.maxProps >= 0 && n > s.maxProps {
		return false
	}
	for _, d := range s.dependencies {
		if lookup(v.Data, d.name).Type == 0 {
			continue
		}
		if d.s != nil && !d.s.valid(v) {
			return false
		}
		for _, p := range d.props {
			if lookup(v.Data, p).Type == 0 {
				return false
			}
		}
	}
	return true
}

// validExtraProperty applies patternProperties and additionalProperties to
// one field.
func (s *schema) validExtraProperty(name string, v bsoncore.Value) bool {
	matched := false
	for _, p := range s.properties {
		if p.name == name {
			matched = true
			break
		}
	}
	for _, p := range s.patternProperties {
		if p.re.match([]byte(name)) {
			matched = true
			if !p.s.valid(v) {
				return false
			}
		}
	}
	if matched {
		return true
	}
	if s.noAdditionalProps {
		return false
	}
	return s.additionalProps == nil || s.additionalProps.valid(v)
}

func (s *schema) validLogic(v bsoncore.Value) bool {
	for _, sub := range s.allOf {
		if !sub.valid(v) {
			return false
		}
	}
	if len(s.anyOf) > 0 {
		any := false
		for _, sub := range s.anyOf {
			if sub.valid(v) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	if len(s.oneOf) > 0 {
		n := 0
		for _, sub := range s.oneOf {
			if sub.valid(v) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	if s.not != nil && s.not.valid(v) {
		return false
	}
	if s.enum != nil {
		for _, e := range s.enum {
			if equalUnordered(v, e) {
				return true
			}
		}
		return false
	}
	return true
}

// equalUnordered compares values as $jsonSchema's enum does: documents are
// equal when they have the same fields with equal values in any order.
func equalUnordered(a, b bsoncore.Value) bool {
	switch {
	case a.Type == bsoncore.TypeEmbeddedDocument && b.Type == bsoncore.TypeEmbeddedDocument:
		fa, fb := arrayValues(a), arrayValues(b)
		if len(fa) != len(fb) {
			return false
		}
		it := elemsOf(a)
		for {
			k, v, ok := it.next()
			if !ok {
				return true
			}
			w := lookup(b.Data, string(k))
			if w.Type == 0 || !equalUnordered(v, w) {
				return false
			}
		}
	case a.Type == bsoncore.TypeArray && b.Type == bsoncore.TypeArray:
		va, vb := arrayValues(a), arrayValues(b)
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if !equalUnordered(va[i], vb[i]) {
				return false
			}
		}
		return true
	}
	return bsonx.Equal(a, b)
}

func typeName(v bsoncore.Value) string { return expr.TypeName(v) }
