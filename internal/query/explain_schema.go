package query

import (
	"math/big"
	"unicode/utf8"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Explaining $jsonSchema failures (Filter.Explain): each keyword of a
// schema that a value fails gives one rule detail, in the shapes of
// MongoDB 7.0's doc_validation_error.cpp — {operatorName: <keyword>,
// specifiedAs: {<keyword>: <argument>}, reason, consideredValue} for the
// value keywords, propertiesNotSatisfied / missingProperties /
// schemasNotSatisfied / failingDependencies / itemIndex+details for the
// structural ones. As in MongoDB, a keyword that does not apply to the
// value's type says nothing (the type keyword reports the mismatch), and a
// missing property is reported by required alone.

// schemaNode is a $jsonSchema clause.
type schemaNode struct {
	compiled
	raw bsoncore.Value
	s   *schema
}

func (x *explainer) schemaNode(v bsoncore.Value) node {
	s, err := parseSchema(v)
	if err != nil {
		return x.leaf("$jsonSchema", "", "", v, single("$jsonSchema", v)) // parsed once already; cannot happen
	}
	return &schemaNode{compiled: compiled{schemaMatcher{s}}, raw: v, s: s}
}

func (n *schemaNode) detail(doc bsoncore.Document, inverted bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("operatorName", "$jsonSchema")
	if inverted {
		return b.AppendString("reason", "schema matched").Build()
	}
	if n.s.types != nil && !n.s.types.has(bsoncore.TypeEmbeddedDocument) {
		// MongoDB turns a top-level schema that excludes objects into
		// $alwaysFalse annotated as the $jsonSchema.
		return bsoncore.NewDocumentBuilder().AppendString("operatorName", "$jsonSchema").
			AppendDocument("specifiedAs", single("$jsonSchema", n.raw)).
			AppendString("reason", "expression always evaluates to false").Build()
	}
	appendAnnotations(b, n.raw)
	root := *n.s
	root.types = nil // the top-level type is not a rule of its own (it includes object)
	rules := schemaRules(n.raw, &root, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
	return b.AppendArray("schemaRulesNotSatisfied", docArray(rules)).Build()
}

// appendAnnotations copies a schema's title and description.
func appendAnnotations(b *bsoncore.DocumentBuilder, raw bsoncore.Value) {
	for _, k := range []string{"title", "description"} {
		if v := lookup(raw.Data, k); v.Type != 0 {
			b.AppendValue(k, v)
		}
	}
}

func docArray(docs []bsoncore.Document) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, d := range docs {
		arr.AppendDocument(d)
	}
	return arr.Build()
}

// keyword starts a rule detail: operatorName and specifiedAs.
func keyword(raw bsoncore.Value, name string) *bsoncore.DocumentBuilder {
	return bsoncore.NewDocumentBuilder().AppendString("operatorName", name).
		AppendDocument("specifiedAs", single(name, lookup(raw.Data, name)))
}

// schemaRules lists the rules of schema s (raw: as written) that v fails,
// in the order of MongoDB's translation (json_schema_parser.cpp): string
// and number keywords, array keywords, object keywords, logical keywords,
// and the type keyword last.
func schemaRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	out := scalarRules(raw, s, v)
	if v.Type == bsoncore.TypeArray {
		out = append(out, arrayRules(raw, s, v)...)
	}
	if v.Type == bsoncore.TypeEmbeddedDocument {
		out = append(out, objectRules(raw, s, v)...)
	}
	out = append(out, logicRules(raw, s, v)...)
	if s.types != nil && !s.types.has(v.Type) {
		name := "bsonType"
		if lookup(raw.Data, "type").Type != 0 {
			name = "type"
		}
		out = append(out, keyword(raw, name).AppendString("reason", "type did not match").
			AppendValue("consideredValue", v).AppendString("consideredType", typeName(v)).Build())
	}
	return out
}

func scalarRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	var out []bsoncore.Document
	fail := func(name, reason string) {
		b := keyword(raw, name)
		// An exclusive bound is specified as {minimum: x, exclusiveMinimum: true}.
		if excl := "exclusiveM" + name[1:]; name == "minimum" || name == "maximum" {
			if on, _ := lookup(raw.Data, excl).BooleanOK(); on {
				b = bsoncore.NewDocumentBuilder().AppendString("operatorName", name).AppendDocument("specifiedAs",
					bsoncore.NewDocumentBuilder().AppendValue(name, lookup(raw.Data, name)).AppendBoolean(excl, true).Build())
			}
		}
		out = append(out, b.AppendString("reason", reason).AppendValue("consideredValue", v).Build())
	}
	switch {
	case v.Type == bsoncore.TypeString:
		str, _ := stringBytes(v)
		n := int64(utf8.RuneCount(str))
		if s.pattern != nil && !s.pattern.match(str) {
			fail("pattern", "regular expression did not match")
		}
		if s.maxLength >= 0 && n > s.maxLength {
			fail("maxLength", "specified string length was not satisfied")
		}
		if s.minLength >= 0 && n < s.minLength {
			fail("minLength", "specified string length was not satisfied")
		}
	case isNumeric(v):
		if s.multipleOf != nil {
			if r, ok := ratOf(v); !ok || !new(big.Rat).Quo(r, s.multipleOf).IsInt() {
				fail("multipleOf", "considered value is not a multiple of the specified value")
			}
		}
		if s.max != nil && !s.max.matchValue(v, nil) {
			fail("maximum", "comparison failed")
		}
		if s.min != nil && !s.min.matchValue(v, nil) {
			fail("minimum", "comparison failed")
		}
	}
	return out
}

func arrayRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	var out []bsoncore.Document
	vals := arrayValues(v)
	n := int64(len(vals))
	for _, k := range []struct {
		name string
		bad  bool
	}{{"minItems", s.minItems >= 0 && n < s.minItems}, {"maxItems", s.maxItems >= 0 && n > s.maxItems}} {
		if k.bad {
			out = append(out, keyword(raw, k.name).AppendString("reason", "array did not match specified length").
				AppendValue("consideredValue", v).AppendInt32("numberOfItems", int32(n)).Build())
		}
	}
	if s.uniqueItems {
		if dup, ok := firstDuplicate(vals); ok {
			out = append(out, keyword(raw, "uniqueItems").AppendString("reason", "found a duplicate item").
				AppendValue("consideredValue", v).AppendValue("duplicatedValue", dup).Build())
		}
	}
	if s.items != nil {
		sub := lookup(raw.Data, "items")
		for i, e := range vals {
			if !s.items.valid(e) {
				b := bsoncore.NewDocumentBuilder().AppendString("operatorName", "items")
				appendAnnotations(b, sub)
				out = append(out, b.AppendString("reason", "At least one item did not match the sub-schema").
					AppendInt32("itemIndex", int32(i)).AppendArray("details", docArray(schemaRules(sub, s.items, e))).Build())
				break
			}
		}
	}
	if s.tuple != nil {
		subs := arrayValues(lookup(raw.Data, "items"))
		var failing []bsoncore.Document
		for i, e := range vals {
			if i < len(s.tuple) && !s.tuple[i].valid(e) {
				failing = append(failing, bsoncore.NewDocumentBuilder().AppendInt32("itemIndex", int32(i)).
					AppendArray("details", docArray(schemaRules(subs[i], s.tuple[i], e))).Build())
			}
		}
		if failing != nil {
			out = append(out, bsoncore.NewDocumentBuilder().AppendString("operatorName", "items").
				AppendArray("details", docArray(failing)).Build())
		}
		out = append(out, additionalItemsRule(raw, s, vals)...)
	}
	return out
}

func additionalItemsRule(raw bsoncore.Value, s *schema, vals []bsoncore.Value) []bsoncore.Document {
	if len(vals) <= len(s.tuple) {
		return nil
	}
	extra := vals[len(s.tuple):]
	if s.noAdditionalItems {
		arr := bsoncore.NewArrayBuilder()
		for _, e := range extra {
			arr.AppendValue(e)
		}
		return []bsoncore.Document{keyword(raw, "additionalItems").AppendString("reason", "found additional items").
			AppendArray("additionalItems", arr.Build()).Build()}
	}
	if s.additionalItems == nil {
		return nil
	}
	sub := lookup(raw.Data, "additionalItems")
	for i, e := range extra {
		if !s.additionalItems.valid(e) {
			b := bsoncore.NewDocumentBuilder().AppendString("operatorName", "additionalItems")
			appendAnnotations(b, sub)
			return []bsoncore.Document{b.AppendString("reason", "At least one additional item did not match the sub-schema").
				AppendInt32("itemIndex", int32(len(s.tuple)+i)).
				AppendArray("details", docArray(schemaRules(sub, s.additionalItems, e))).Build()}
		}
	}
	return nil
}

func firstDuplicate(vals []bsoncore.Value) (bsoncore.Value, bool) {
	for i := range vals {
		for j := range i {
			if bsonx.Equal(vals[i], vals[j]) {
				return vals[i], true
			}
		}
	}
	return bsoncore.Value{}, false
}

func objectRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	var out []bsoncore.Document
	if len(s.properties) > 0 {
		props := lookup(raw.Data, "properties")
		var failing []bsoncore.Document
		for _, p := range s.properties {
			f := lookup(v.Data, p.name)
			if f.Type == 0 || p.s.valid(f) {
				continue
			}
			sub := lookup(props.Data, p.name)
			b := bsoncore.NewDocumentBuilder().AppendString("propertyName", p.name)
			appendAnnotations(b, sub)
			failing = append(failing, b.AppendArray("details", docArray(schemaRules(sub, p.s, f))).Build())
		}
		if failing != nil {
			out = append(out, bsoncore.NewDocumentBuilder().AppendString("operatorName", "properties").
				AppendArray("propertiesNotSatisfied", docArray(failing)).Build())
		}
	}
	if s.checkAdditional {
		out = append(out, additionalPropertiesRules(raw, s, v)...)
	}
	var missing []string
	for _, r := range s.required {
		if lookup(v.Data, r).Type == 0 {
			missing = append(missing, r)
		}
	}
	if missing != nil {
		out = append(out, keyword(raw, "required").AppendArray("missingProperties", stringArray(missing)).Build())
	}
	n := int64(len(arrayValues(v)))
	for _, k := range []struct {
		name string
		bad  bool
	}{{"minProperties", s.minProps >= 0 && n < s.minProps}, {"maxProperties", s.maxProps >= 0 && n > s.maxProps}} {
		if k.bad {
			out = append(out, keyword(raw, k.name).AppendString("reason", "specified number of properties was not satisfied").
				AppendInt32("numberOfProperties", int32(n)).Build())
		}
	}
	if d := dependencyRules(raw, s, v); d != nil {
		out = append(out, d)
	}
	return out
}

func stringArray(ss []string) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, s := range ss {
		arr.AppendString(s)
	}
	return arr.Build()
}

// additionalPropertiesRules explains additionalProperties (false: the
// extra names; a schema: the first extra property failing it) and
// patternProperties (per pattern, the first property it matches that fails).
func additionalPropertiesRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	var out []bsoncore.Document
	var extra []string
	var firstFailing string
	it := elemsOf(v)
	for {
		k, f, ok := it.next()
		if !ok {
			break
		}
		name := string(k)
		if s.declares(name) {
			continue
		}
		extra = append(extra, name)
		if firstFailing == "" && s.additionalProps != nil && !s.additionalProps.valid(f) {
			firstFailing = name
		}
	}
	switch {
	case s.noAdditionalProps && extra != nil:
		out = append(out, keyword(raw, "additionalProperties").AppendArray("additionalProperties", stringArray(extra)).Build())
	case firstFailing != "":
		sub := lookup(raw.Data, "additionalProperties")
		b := bsoncore.NewDocumentBuilder().AppendString("operatorName", "additionalProperties")
		appendAnnotations(b, sub)
		out = append(out, b.AppendString("reason", "at least one additional property did not match the subschema").
			AppendString("failingProperty", firstFailing).
			AppendArray("details", docArray(schemaRules(sub, s.additionalProps, lookup(v.Data, firstFailing)))).Build())
	}
	var failing []bsoncore.Document
	pats := lookup(raw.Data, "patternProperties")
	pit := elemsOf(pats)
	for _, p := range s.patternProperties {
		key, sub, _ := pit.next()
		fit := elemsOf(v)
		for {
			k, f, ok := fit.next()
			if !ok {
				break
			}
			if p.re.match(k) && !p.s.valid(f) {
				b := bsoncore.NewDocumentBuilder().AppendString("propertyName", string(k))
				appendAnnotations(b, sub)
				failing = append(failing, b.AppendString("regexMatched", string(key)).
					AppendArray("details", docArray(schemaRules(sub, p.s, f))).Build())
				break
			}
		}
	}
	if failing != nil {
		out = append(out, bsoncore.NewDocumentBuilder().AppendString("operatorName", "patternProperties").
			AppendArray("details", docArray(failing)).Build())
	}
	return out
}

// declares reports whether name is a property or matches a pattern
// property (so additionalProperties does not apply to it).
func (s *schema) declares(name string) bool {
	for _, p := range s.properties {
		if p.name == name {
			return true
		}
	}
	for _, p := range s.patternProperties {
		if p.re.match([]byte(name)) {
			return true
		}
	}
	return false
}

func dependencyRules(raw bsoncore.Value, s *schema, v bsoncore.Value) bsoncore.Document {
	deps := lookup(raw.Data, "dependencies")
	var failing []bsoncore.Document
	for _, d := range s.dependencies {
		if lookup(v.Data, d.name).Type == 0 {
			continue
		}
		b := bsoncore.NewDocumentBuilder().AppendString("conditionalProperty", d.name)
		if d.s != nil && !d.s.valid(v) {
			failing = append(failing, b.AppendArray("details", docArray(schemaRules(lookup(deps.Data, d.name), d.s, v))).Build())
			continue
		}
		var missing []string
		for _, p := range d.props {
			if lookup(v.Data, p).Type == 0 {
				missing = append(missing, p)
			}
		}
		if missing != nil {
			failing = append(failing, b.AppendArray("missingProperties", stringArray(missing)).Build())
		}
	}
	if failing == nil {
		return nil
	}
	return bsoncore.NewDocumentBuilder().AppendString("operatorName", "dependencies").
		AppendArray("failingDependencies", docArray(failing)).Build()
}

func logicRules(raw bsoncore.Value, s *schema, v bsoncore.Value) []bsoncore.Document {
	var out []bsoncore.Document
	subsNotSatisfied := func(name string, subs []*schema, onlyFailing bool) bsoncore.Document {
		raws := arrayValues(lookup(raw.Data, name))
		var failing []bsoncore.Document
		for i, sub := range subs {
			if onlyFailing && sub.valid(v) {
				continue
			}
			b := bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i))
			appendAnnotations(b, raws[i])
			failing = append(failing, b.AppendArray("details", docArray(schemaRules(raws[i], sub, v))).Build())
		}
		return bsoncore.NewDocumentBuilder().AppendString("operatorName", name).
			AppendArray("schemasNotSatisfied", docArray(failing)).Build()
	}
	validCount := func(subs []*schema) (n int, which []int) {
		for i, sub := range subs {
			if sub.valid(v) {
				n++
				which = append(which, i)
			}
		}
		return n, which
	}
	if n, _ := validCount(s.allOf); n < len(s.allOf) {
		out = append(out, subsNotSatisfied("allOf", s.allOf, true))
	}
	if n, _ := validCount(s.anyOf); len(s.anyOf) > 0 && n == 0 {
		out = append(out, subsNotSatisfied("anyOf", s.anyOf, false))
	}
	if n, which := validCount(s.oneOf); len(s.oneOf) > 0 && n != 1 {
		if n == 0 {
			out = append(out, subsNotSatisfied("oneOf", s.oneOf, false))
		} else {
			arr := bsoncore.NewArrayBuilder()
			for _, i := range which {
				arr.AppendInt32(int32(i))
			}
			out = append(out, bsoncore.NewDocumentBuilder().AppendString("operatorName", "oneOf").
				AppendString("reason", "more than one subschema matched").AppendArray("matchingSchemaIndexes", arr.Build()).Build())
		}
	}
	if s.not != nil && s.not.valid(v) {
		out = append(out, bsoncore.NewDocumentBuilder().AppendString("operatorName", "not").
			AppendString("reason", "child expression matched").Build())
	}
	if s.enum != nil {
		found := false
		for _, e := range s.enum {
			if equalUnordered(v, e) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, keyword(raw, "enum").AppendString("reason", "value was not found in enum").
				AppendValue("consideredValue", v).Build())
		}
	}
	return out
}
