package index

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Kind is how one field of a key pattern is keyed.
type Kind uint8

// The kinds of key pattern fields.
const (
	// Ascending is a positive number: the field's value, in MongoDB order.
	Ascending Kind = iota + 1
	// Descending is a negative number: the value, in reverse order.
	Descending
	// Hashed is "hashed": Hash of the value, as an int64, ascending.
	Hashed
	// Wildcard is "$**" or "path.$**" with a number: a (path, value) pair
	// per leaf under the root, ascending by path, the value in the
	// direction of the number's sign.
	Wildcard
)

// String returns the kind as MongoDB writes it in explain output.
func (k Kind) String() string {
	switch k {
	case Ascending:
		return "1"
	case Descending:
		return "-1"
	case Hashed:
		return "hashed"
	case Wildcard:
		return "wildcard"
	case Geo2dsphere:
		return "2dsphere"
	case Geo2d:
		return "2d"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Field is one field of a key pattern.
type Field struct {
	// Path is the field as written in the key pattern: "a.b", "_id.env",
	// "$**" or "a.$**".
	Path string
	// Parts is Path split at its dots. For a wildcard field it is the root
	// the wildcard indexes ("a" for "a.$**", none for "$**").
	Parts []string
	// Kind says how the field is keyed.
	Kind Kind
}

// Spec is a parsed, validated index specification: one element of a
// createIndexes command's "indexes" array. A Spec is immutable and safe for
// concurrent use.
type Spec struct {
	// Name is the index's name ("_id_" for the _id index, whatever name the
	// specification gave it, as MongoDB does).
	Name string
	// Key is the key pattern document as given.
	Key bsoncore.Document
	// KeyPattern lists the key pattern's fields in order.
	KeyPattern []Field
	// Version is the index version, v: 1 or 2 (default 2).
	Version int
	// Unique is true for unique indexes, including the _id index.
	Unique bool
	// PrepareUnique: the index is not unique yet (its entries keep the
	// non-unique layout and may hold duplicates made before), but a write
	// that would add a key another document holds is refused, so that
	// collMod can convert it to unique.
	PrepareUnique bool
	// Sparse is true for sparse indexes.
	Sparse bool
	// Hidden is true for indexes the planner must not use.
	Hidden bool
	// ExpireAfterSeconds is the TTL of a TTL index, nil for other indexes.
	ExpireAfterSeconds *int64
	// PartialFilterExpression is the partial index filter, nil if none.
	PartialFilterExpression bsoncore.Document
	// WildcardProjection is the wildcard index projection, nil if none.
	WildcardProjection bsoncore.Document
	// Original is the specification exactly as given.
	Original bsoncore.Document
	// Collation orders the index's strings (nil: simple): its keys hold
	// collation keys (keystring.AppendCollated), which do not decode back
	// to the strings, so such an index never covers a string field.
	Collation *collation.Collator

	doc     bsoncore.Document // the listIndexes form, see Doc
	gen     generator
	filter  *query.Filter
	proj    *query.Projection // wildcard: the projection applied before traversal
	skipID  bool              // wildcard without projection: skip the top-level _id
	valDesc bool              // wildcard: the value part is descending
	geo     geo.IndexParams   // 2dsphere: the covering parameters
	grid    *geo.Grid         // 2d: the grid (geo2d.go)
	text    *textInfo         // text: weights and languages (text.go)
}

// generator is the key generation algorithm a spec uses.
type generator uint8

const (
	genBtree    generator = iota // ascending/descending fields only
	genHashed                    // one hashed field, maybe with others
	genWildcard                  // one wildcard field
	genGeo                       // 2dsphere fields, maybe with others (geo.go)
	genText                      // a text index (text.go)
)

// IsID reports whether the spec is the _id index ({_id: 1}).
func (s *Spec) IsID() bool {
	return s.Name == idIndexName && len(s.KeyPattern) == 1 && s.KeyPattern[0].Path == "_id" && s.KeyPattern[0].Kind == Ascending
}

// IsHashed reports whether the key pattern has a hashed field.
func (s *Spec) IsHashed() bool { return s.gen == genHashed }

// IsWildcard reports whether the spec is a wildcard index.
func (s *Spec) IsWildcard() bool { return s.gen == genWildcard }

// KeyParts is the number of encoded values in each of the spec's keys
// (before the engine's _id suffix): one per key pattern field, and two,
// path then value, for a wildcard index.
func (s *Spec) KeyParts() int {
	if s.gen == genWildcard {
		return 2
	}
	return len(s.KeyPattern)
}

// PartialFilter is the parsed partial filter expression, nil if none:
// the planner reads its Tree to decide whether a query implies it.
func (s *Spec) PartialFilter() *query.Filter { return s.filter }

// Doc is the specification as listIndexes shows it: v first, then unique
// and hidden when true, key, name, and the remaining options in the order
// given, without ns, dropDups and _id (as MongoDB's IndexCatalog stores
// it). A simple collation is dropped, as MongoDB drops it.
func (s *Spec) Doc() bsoncore.Document { return s.doc }

const idIndexName = "_id_"

// allowedOptions are the field names MongoDB 7.0 accepts in an index
// specification (index_key_validate::allowedFieldNames); any other is
// InvalidIndexSpecificationOption.
var allowedOptions = map[string]bool{
	"bits": true, "max": true, "min": true, "coarsestIndexedLevel": true,
	"finestIndexedLevel": true, "2dsphereIndexVersion": true, "background": true,
	"collation": true, "default_language": true, "dropDups": true,
	"expireAfterSeconds": true, "hidden": true, "name": true, "v": true, "key": true,
	"language_override": true, "ns": true, "partialFilterExpression": true,
	"wildcardProjection": true, "columnstoreProjection": true, "sparse": true,
	"storageEngine": true, "textIndexVersion": true, "unique": true, "weights": true,
	"originalSpec": true, "prepareUnique": true, "_id": true,
	"columnstoreCompressor": true,
}

// WithoutUnknownOptions is spec without the fields allowedOptions does not
// name (createIndexes' ignoreUnknownIndexOptions, as MongoDB's
// removeUnknownFields); spec itself when it has none.
func WithoutUnknownOptions(spec bsoncore.Document) bsoncore.Document {
	elems, err := spec.Elements()
	if err != nil {
		return spec // ParseSpec reports it
	}
	unknown := false
	for _, e := range elems {
		unknown = unknown || !allowedOptions[e.Key()]
	}
	if !unknown {
		return spec
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		if allowedOptions[e.Key()] {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// allowedIDOptions are the fields an _id index specification may have.
var allowedIDOptions = map[string]bool{"collation": true, "name": true, "v": true, "key": true, "ns": true, "_id": true}

// ParseSpec validates an index specification as MongoDB 7.0's createIndexes
// does, in the same order, so that a specification with several faults
// fails with the code MongoDB reports first. Errors are *mongoerr.Error.
// The Spec keeps a copy of spec, never the caller's bytes.
//
// Not supported yet, with CannotCreateIndex (67): columnstore indexes, compound wildcard indexes, hashed and wildcard indexes with a
// collation, and the internal options clustered and originalSpec.
func ParseSpec(spec bsoncore.Document) (*Spec, error) {
	if err := spec.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "index specification is not a valid BSON document: %v", err)
	}
	// The Spec outlives the request it came in: its documents must not
	// alias the caller's (possibly pooled) buffer.
	spec = slices.Clone(spec)
	p := specParser{spec: spec, s: &Spec{Original: spec, Version: 2}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.s, nil
}

type specParser struct {
	spec bsoncore.Document
	s    *Spec

	plugin        string // "" (btree), "hashed", "wildcard", "text", …
	hasKey        bool
	hasName       bool
	hasVersion    bool
	hasCollation  bool
	hasWeights    bool
	prepareUnique bool
	collation     bsoncore.Document
	ttl           bsoncore.Value
	hasTTL        bool
	hasPartial    bool
	fields        []string // field names of the spec, in order
}

func (p *specParser) parse() error {
	elems, _ := p.spec.Elements()
	// 1. Only known options (validateIndexSpecFieldNames).
	for _, e := range elems {
		k := e.Key()
		if k == "clustered" {
			return cannotCreate("clustered indexes are not supported yet: a clustered collection is made by create")
		}
		if !allowedOptions[k] {
			return mongoerr.New(mongoerr.InvalidIndexSpecOption, "The field '%s' is not valid for an index specification. Specification: %s", k, p.spec)
		}
	}
	// 2. Each option's type, in the specification's order (validateIndexSpec).
	for _, e := range elems {
		if err := p.option(e.Key(), e.Value()); err != nil {
			return err
		}
	}
	if !p.hasKey {
		return mongoerr.New(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	if !p.hasName {
		return mongoerr.New(mongoerr.FailedToParse, "The 'name' field is a required property of an index specification")
	}
	if p.hasCollation && p.s.Version < 2 {
		return cannotCreate("Invalid index specification %s; cannot create an index with the 'collation' option and v=%d", p.spec, p.s.Version)
	}
	if p.hasWeights && p.plugin != "text" {
		return cannotCreate("Invalid index specification %s; the field 'weights' can only be specified with text indexes", p.spec)
	}
	if p.s.Unique && p.prepareUnique {
		return cannotCreate("Invalid index specification %s; cannot create an index with the 'unique' option and the 'prepareUnique' option", p.spec)
	}
	// 3. The _id index and reserved names (parseAndValidateIndexSpecs).
	isID := isIDPattern(p.s.Key)
	if isID {
		for _, e := range elems {
			if !allowedIDOptions[e.Key()] {
				return mongoerr.New(mongoerr.InvalidIndexSpecOption, "The field '%s' is not valid for an _id index specification. Specification: %s", e.Key(), p.spec)
			}
		}
		if !isExactlyIDAscending(p.s.Key) {
			return mongoerr.New(mongoerr.BadValue, "The field 'key' for an _id index must be {_id: 1}, but got %s", p.s.Key)
		}
	} else {
		if p.s.Name == idIndexName {
			return mongoerr.New(mongoerr.BadValue, "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}, found key: %s", p.s.Key)
		}
		if p.s.Name == "*" {
			return mongoerr.New(mongoerr.BadValue, "The index name '*' is not valid.")
		}
	}
	// 4. TTL (validateIndexSpecTTL).
	if p.hasTTL {
		secs, err := ttlSeconds(p.ttl)
		if err != nil {
			return err
		}
		if len(p.s.KeyPattern) != 1 {
			return cannotCreate("TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", p.spec)
		}
		p.s.ExpireAfterSeconds = &secs
	}
	// 5. The catalog's checks (IndexCatalogImpl::_isSpecOk).
	if strings.IndexByte(p.s.Name, 0) >= 0 {
		return cannotCreate("index name cannot contain NUL bytes")
	}
	if p.s.Name == "" {
		return cannotCreate("index name cannot be empty")
	}
	if p.hasCollation {
		c, err := collation.Parse(p.collation)
		if err != nil {
			return err
		}
		if c != nil && p.plugin != "" {
			return cannotCreate("%s indexes with a collation are not supported yet", p.plugin)
		}
		p.s.Collation = c
	}
	if p.plugin == "wildcard" {
		switch {
		case p.s.Sparse:
			return cannotCreate("Index type 'wildcard' does not support the 'sparse' option")
		case p.s.Unique:
			return cannotCreate("Index type 'wildcard' does not support the 'unique' option")
		case p.hasTTL:
			return cannotCreate("cannot make a TTL index :: caused by :: Index type 'wildcard' does not support the 'expireAfterSeconds' option")
		case p.s.Version < 2:
			return cannotCreate("Index type 'wildcard' is not allowed with index version v: %d", p.s.Version)
		}
	}
	if p.hasPartial {
		if p.s.Sparse {
			return cannotCreate("cannot mix \"partialFilterExpression\" and \"sparse\" options")
		}
		if err := checkPartialFilter(p.s.filter); err != nil {
			return err
		}
	}
	// 6. What Cairn does not build yet.
	switch p.plugin {
	case "", "hashed", "wildcard", "2dsphere", "2d":
	case "text":
		if err := p.prepareText(); err != nil {
			return err
		}
	default:
		return cannotCreate("%s indexes are not supported yet", p.plugin)
	}
	if p.plugin == "wildcard" && len(p.s.KeyPattern) > 1 {
		return cannotCreate("compound wildcard indexes are not supported yet")
	}
	// 7. The access method's checks.
	if len(p.s.KeyPattern) > maxCompoundFields {
		return mongoerr.New(CodeTooManyCompoundKeys, "too many compound keys")
	}
	if p.plugin == "hashed" {
		n := 0
		for _, f := range p.s.KeyPattern {
			if f.Kind == Hashed {
				n++
			}
		}
		if n > 1 {
			return mongoerr.New(CodeTooManyHashedFields, "A maximum of one index field is allowed to be hashed but found %d for 'key' %s", n, p.s.Key)
		}
		if p.s.Unique {
			return mongoerr.New(CodeHashedUnique, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
		}
	}
	if isID {
		p.s.Name = idIndexName
		p.s.Unique = true
	}
	if err := p.prepare(); err != nil {
		return err
	}
	p.s.doc = p.canonical(isID)
	return nil
}

// option checks one option's type (validateIndexSpec).
func (p *specParser) option(name string, v bsoncore.Value) error {
	switch name {
	case "key":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'key' must be an object, but got %s", typeName(v.Type))
		}
		if err := p.keyPattern(v.Document()); err != nil {
			return err
		}
		p.hasKey = true
	case "name":
		if v.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'name' must be a string, but got %s", typeName(v.Type))
		}
		p.s.Name = v.StringValue()
		p.hasName = true
	case "hidden":
		if v.Type != bsoncore.TypeBoolean {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'hidden' must be a bool, but got %s", typeName(v.Type))
		}
		p.s.Hidden = v.Boolean()
	case "v":
		if !isNumber(v.Type) {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'v' must be a number, but got %s", typeName(v.Type))
		}
		f := numberValue(v)
		if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return mongoerr.New(mongoerr.BadValue, "Index version must be representable as a 32-bit integer, but got %s", v)
		}
		if f != 1 && f != 2 {
			return cannotCreate("Invalid index specification %s; cannot create an index with v=%d", p.spec, int64(f))
		}
		p.s.Version = int(f)
		p.hasVersion = true
	case "originalSpec":
		return cannotCreate("the 'originalSpec' option is not supported yet")
	case "collation":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'collation' must be an object, but got %s", typeName(v.Type))
		}
		if len(v.Document()) <= 5 {
			return mongoerr.New(mongoerr.BadValue, "The field 'collation' cannot be an empty object.")
		}
		p.collation = v.Document()
		p.hasCollation = true
	case "partialFilterExpression":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'partialFilterExpression' must be an object, but got %s", typeName(v.Type))
		}
		f, err := parsePartialFilter(v.Document())
		if err != nil {
			return err
		}
		p.s.PartialFilterExpression = v.Document()
		p.s.filter = f
		p.hasPartial = true
	case "wildcardProjection":
		// MongoDB reads the key pattern here whatever the order of the
		// options, so a wildcardProjection before key is judged alike.
		key, _ := p.spec.Lookup("key").DocumentOK()
		kelems, _ := key.Elements()
		if pluginName(kelems) != "wildcard" {
			return mongoerr.New(mongoerr.BadValue, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes")
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'wildcardProjection' must be a non-empty object, but got %s", typeName(v.Type))
		}
		if !hasField(key, "$**") {
			return mongoerr.New(mongoerr.FailedToParse, "The field 'wildcardProjection' is only allowed when 'key' is {\"$**\": ±1} or {\"$**\": \"columnstore\"}")
		}
		if len(v.Document()) <= 5 {
			return mongoerr.New(mongoerr.FailedToParse, "The 'wildcardProjection' field can't be an empty object")
		}
		if err := checkWildcardProjection(v.Document()); err != nil {
			return err
		}
		p.s.WildcardProjection = v.Document()
	case "weights":
		if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'weights' must be an object, but got %s", typeName(v.Type))
		}
		p.hasWeights = true
	case "background", "unique", "sparse", "dropDups", "prepareUnique":
		if !isNumber(v.Type) && v.Type != bsoncore.TypeBoolean {
			return mongoerr.New(mongoerr.TypeMismatch, "The field '%s has value %s: %s, which is not convertible to bool", name, name, v)
		}
		t := trueValue(v)
		switch name {
		case "unique":
			p.s.Unique = t
		case "sparse":
			p.s.Sparse = t
		case "prepareUnique":
			p.prepareUnique = t
			p.s.PrepareUnique = t
		}
	case "default_language", "language_override":
		if v.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a string, but got %s", name, typeName(v.Type))
		}
	case "2dsphereIndexVersion", "textIndexVersion", "bits", "min", "max", "coarsestIndexedLevel", "finestIndexedLevel":
		if !isNumber(v.Type) {
			return mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a number, but got %s", name, typeName(v.Type))
		}
	case "expireAfterSeconds":
		p.ttl, p.hasTTL = v, true
	case "storageEngine":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return cannotCreate("\"storageEngine\" options must be a document if present")
		}
	case "columnstoreProjection", "columnstoreCompressor":
		return cannotCreate("the '%s' option is only allowed in 'columnstore' indexes, which are not supported", name)
	}
	return nil
}

// keyPattern validates the key pattern (validateIndexSpec's duplicate check
// and index_key_validate::validateKeyPattern with v:2 rules, which MongoDB
// applies whatever the requested version) and records its fields.
func (p *specParser) keyPattern(key bsoncore.Document) error {
	elems, _ := key.Elements()
	seen := make(map[string]bool, len(elems))
	for _, e := range elems {
		if seen[e.Key()] {
			return mongoerr.New(mongoerr.BadValue, "The field '%s' appears multiple times in the index key pattern %s", e.Key(), key)
		}
		seen[e.Key()] = true
	}
	if len(key) > maxKeyPatternSize {
		return cannotCreate("Index key pattern too large.")
	}
	if len(elems) == 0 {
		return cannotCreate("Index keys cannot be empty.")
	}
	plugin := pluginName(elems)
	if plugin != "" {
		switch plugin {
		case "geoHaystack":
			return cannotCreate("GeoHaystack indexes cannot be created in version 5.0 and above")
		case "2d", "2dsphere", "2dsphere_bucket", "text", "hashed", "wildcard", "columnstore":
		default:
			return cannotCreate("Unknown index plugin '%s'", plugin)
		}
	}
	var fields []Field
	for _, e := range elems {
		v := e.Value()
		name := e.Key()
		switch {
		case isNumber(v.Type):
			f := numberValue(v)
			if math.IsNaN(f) {
				return cannotCreate("Values in the index key pattern cannot be NaN.")
			}
			if f == 0 {
				return cannotCreate("Values in the index key pattern cannot be 0.")
			}
		case v.Type == bsoncore.TypeString:
			if v.StringValue() != plugin {
				return cannotCreate("Can't use more than one index plugin for a single index.")
			}
			if v.StringValue() == "wildcard" {
				return cannotCreate("The key pattern value for an 'wildcard' index must be a non-zero number, not a string.")
			}
		default:
			return cannotCreate("Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", typeName(v.Type))
		}
		if name == "" {
			return cannotCreate("Index keys cannot be an empty field.")
		}
		if name == "$**" && (isNumber(v.Type) || v.StringValue() == "text" || v.StringValue() == "columnstore") {
			if isNumber(v.Type) && plugin != "wildcard" && plugin != "text" && plugin != "columnstore" {
				// MongoDB would index a field named "$**" here ({"$**": 1,
				// b: "hashed"}); Cairn refuses the pattern instead.
				return cannotCreate("Index key contains an illegal field name: field name starts with '$'.")
			}
			fields = append(fields, p.field(name, v, plugin))
			continue
		}
		if name == "_fts" && (v.Type != bsoncore.TypeString || v.StringValue() != "text") {
			return cannotCreate("Index key contains an illegal field name: '_fts'")
		}
		parts := strings.Split(name, ".")
		for i, part := range parts {
			if part == "" {
				return cannotCreate("Index keys cannot contain an empty field.")
			}
			if part[0] != '$' {
				continue
			}
			dbRef := i != 0 && (part == "$db" || part == "$id" || part == "$ref")
			wildcard := i == len(parts)-1 && part == "$**" && (plugin == "wildcard" || plugin == "columnstore")
			if !dbRef && !wildcard {
				return cannotCreate("Index key contains an illegal field name: field name starts with '$'.")
			}
		}
		fields = append(fields, p.field(name, v, plugin))
	}
	for _, e := range elems {
		if v := e.Value(); v.Type == bsoncore.TypeString && v.StringValue() == "" {
			return cannotCreate("Values in the index key pattern cannot be empty strings")
		}
		if plugin == "wildcard" && e.Key() == "$**" && len(elems) > 1 && !hasField(p.spec, "wildcardProjection") {
			return cannotCreate("Compound wildcard indexes on all fields must also specify 'wildcardProjection' option")
		}
	}
	p.plugin = plugin
	p.s.Key = key
	p.s.KeyPattern = fields
	return nil
}

// field makes the Field of one key pattern element already validated.
func (p *specParser) field(name string, v bsoncore.Value, plugin string) Field {
	f := Field{Path: name}
	switch {
	case v.Type == bsoncore.TypeString && v.StringValue() == "hashed":
		f.Kind = Hashed
	case v.Type == bsoncore.TypeString && v.StringValue() == "2dsphere":
		f.Kind = Geo2dsphere
	case v.Type == bsoncore.TypeString && v.StringValue() == "2d":
		f.Kind = Geo2d
	case v.Type == bsoncore.TypeString:
		f.Kind = Ascending // text, …: refused later
	case plugin == "wildcard" && isWildcardName(name):
		f.Kind = Wildcard
		if numberValue(v) < 0 {
			p.s.valDesc = true
		}
	case numberValue(v) < 0:
		f.Kind = Descending
	default:
		f.Kind = Ascending
	}
	switch {
	case name == "$**":
	case f.Kind == Wildcard:
		f.Parts = strings.Split(strings.TrimSuffix(name, ".$**"), ".")
	default:
		f.Parts = strings.Split(name, ".")
	}
	return f
}

// prepare readies the spec for key generation.
func (p *specParser) prepare() error {
	s := p.s
	switch p.plugin {
	case "hashed":
		s.gen = genHashed
	case "wildcard":
		s.gen = genWildcard
		return p.prepareWildcard()
	case "2dsphere":
		return p.prepareGeo()
	case "2d":
		return p.prepare2d()
	}
	return nil
}

// canonical builds the listIndexes form of the spec (IndexCatalogImpl's
// _fixIndexSpec, after validateIndexSpecCollation drops a simple collation).
func (p *specParser) canonical(isID bool) bsoncore.Document {
	if p.s.text != nil {
		return p.canonicalText()
	}
	// MongoDB 7.0's listIndexes order: v, key, name, then the options.
	b := bsoncore.NewDocumentBuilder().AppendInt32("v", int32(p.s.Version))
	if isID {
		b.AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build())
	} else {
		b.AppendDocument("key", p.s.Key)
	}
	b.AppendString("name", p.s.Name)
	if p.s.Unique && !isID {
		b.AppendBoolean("unique", true)
	}
	if p.s.Hidden {
		b.AppendBoolean("hidden", true)
	}
	if p.prepareUnique {
		b.AppendBoolean("prepareUnique", true)
	}
	elems, _ := p.spec.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "_id", "dropDups", "ns", "v", "unique", "key", "name", "hidden", "prepareUnique", "collation":
			continue
		}
		b.AppendValue(e.Key(), e.Value())
	}
	if p.plugin == "2dsphere" && !hasField(p.spec, "2dsphereIndexVersion") {
		b.AppendInt32("2dsphereIndexVersion", 3)
	}
	if p.s.Collation != nil {
		b.AppendDocument("collation", p.s.Collation.Document()) // normalized, as MongoDB lists it
	}
	return b.Build()
}

// pluginName is MongoDB's IndexNames::findPluginName: the first string value
// of the key pattern, else "wildcard" if a field is "$**" or ends in
// ".$**", else "" for a btree index.
func pluginName(elems []bsoncore.Element) string {
	for _, e := range elems {
		if v := e.Value(); v.Type == bsoncore.TypeString {
			return v.StringValue()
		}
	}
	for _, e := range elems {
		if isWildcardName(e.Key()) {
			return "wildcard"
		}
	}
	return ""
}

func isWildcardName(name string) bool {
	return name == "$**" || strings.HasSuffix(name, ".$**")
}

// isIDPattern is MongoDB's isIdIndexPattern: {_id: n} with n truncating to
// 1 or -1. Such a pattern is the _id index, and must then be exactly
// {_id: 1}.
func isIDPattern(key bsoncore.Document) bool {
	elems, _ := key.Elements()
	if len(elems) != 1 || elems[0].Key() != "_id" || !isNumber(elems[0].Value().Type) {
		return false
	}
	n := numberInt(elems[0].Value())
	return n == 1 || n == -1
}

func isExactlyIDAscending(key bsoncore.Document) bool {
	elems, _ := key.Elements()
	return numberValue(elems[0].Value()) == 1
}

// ttlSeconds validates expireAfterSeconds for a secondary TTL index as
// index_key_validate::validateExpireAfterSeconds does; every failure is
// CannotCreateIndex.
func ttlSeconds(v bsoncore.Value) (int64, error) {
	if !isNumber(v.Type) {
		return 0, cannotCreate("TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'", typeName(v.Type))
	}
	if isNaN(v) {
		return 0, cannotCreate("TTL index 'expireAfterSeconds' option must not be NaN")
	}
	n := hashNumber(v.Type, v.Data) // safeNumberLong, exact for the values that pass
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, cannotCreate("TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer")
	}
	if n < 0 {
		return 0, cannotCreate("TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	return n, nil
}

// DefaultName is the name drivers and shells give an index whose
// specification names none: each field and its value joined by "_"
// ("a_1_b_-1", "a_hashed", "$**_1", "_id.env_hashed"). Numbers print as
// JavaScript prints them (1, -1, 1.5, 1e+21), as the shell does.
func DefaultName(key bsoncore.Document) string {
	var b strings.Builder
	elems, _ := key.Elements()
	for i, e := range elems {
		if i > 0 {
			b.WriteByte('_')
		}
		b.WriteString(e.Key())
		b.WriteByte('_')
		v := e.Value()
		switch v.Type {
		case bsoncore.TypeString:
			b.WriteString(v.StringValue())
		case bsoncore.TypeInt32:
			b.WriteString(strconv.FormatInt(int64(v.Int32()), 10))
		case bsoncore.TypeInt64:
			b.WriteString(strconv.FormatInt(v.Int64(), 10))
		case bsoncore.TypeDouble:
			b.WriteString(jsNumber(v.Double()))
		case bsoncore.TypeDecimal128:
			h, l := v.Decimal128()
			b.WriteString(bson.NewDecimal128(h, l).String())
		default:
			b.WriteString(v.String())
		}
	}
	return b.String()
}

// jsNumber formats a double as JavaScript's Number.prototype.toString.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	if a := math.Abs(f); a >= 1e21 || a < 1e-6 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func isNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// numberValue is a number as a double (BSONElement::number).
func numberValue(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32())
	case bsoncore.TypeInt64:
		return float64(v.Int64())
	case bsoncore.TypeDouble:
		return v.Double()
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		d := bson.NewDecimal128(h, l)
		if d.IsNaN() {
			return math.NaN()
		}
		if inf := d.IsInf(); inf != 0 {
			return math.Inf(inf)
		}
		f, err := strconv.ParseFloat(d.String(), 64)
		if err != nil {
			return 0
		}
		return f
	}
	return 0
}

// numberInt is BSONElement::numberInt for numbers: truncation toward zero.
func numberInt(v bsoncore.Value) int64 {
	f := numberValue(v)
	if math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0
	}
	return int64(f)
}

func isNaN(v bsoncore.Value) bool {
	return isNumber(v.Type) && math.IsNaN(numberValue(v))
}

// trueValue is BSONElement::trueValue: false for false, numbers equal to
// zero, null, undefined and missing values; true for everything else (NaN
// included).
func trueValue(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeNull, bsoncore.TypeUndefined, 0:
		return false
	}
	if isNumber(v.Type) {
		return numberValue(v) != 0
	}
	return true
}

func hasField(doc bsoncore.Document, name string) bool {
	_, err := doc.LookupErr(name)
	return err == nil
}

// typeName is MongoDB's name of a BSON type (typeName in bsontypes.cpp).
func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeBinary:
		return "binData"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeObjectID:
		return "objectId"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeDateTime:
		return "date"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeRegex:
		return "regex"
	case bsoncore.TypeDBPointer:
		return "dbPointer"
	case bsoncore.TypeJavaScript:
		return "javascript"
	case bsoncore.TypeSymbol:
		return "symbol"
	case bsoncore.TypeCodeWithScope:
		return "javascriptWithScope"
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeTimestamp:
		return "timestamp"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDecimal128:
		return "decimal"
	case bsoncore.TypeMinKey:
		return "minKey"
	case bsoncore.TypeMaxKey:
		return "maxKey"
	}
	return fmt.Sprintf("type %d", byte(t))
}

// ParseIDIndexSpec validates create's idIndex option as MongoDB 7.0's
// createCollection does: first as any index specification (ParseSpec),
// then as an _id index (validateIdIndexSpec): only the fields an _id index
// may have (InvalidIndexSpecificationOption, 197), and the key {_id: 1}
// (BadValue). The name is whatever was given; the index is "_id_".
func ParseIDIndexSpec(spec bsoncore.Document) (*Spec, error) {
	s, err := ParseSpec(spec)
	if err != nil || s.IsID() {
		return s, err
	}
	elems, _ := spec.Elements()
	for _, e := range elems {
		if !allowedIDOptions[e.Key()] {
			return nil, mongoerr.New(mongoerr.InvalidIndexSpecOption, "The field '%s' is not valid for an _id index specification. Specification: %s", e.Key(), spec)
		}
	}
	return nil, mongoerr.New(mongoerr.BadValue, "The field 'key' for an _id index must be {_id: 1}, but got %s", s.Key)
}
