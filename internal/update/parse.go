package update

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Kind is the form of an update.
type Kind int

const (
	// KindOperator is an update of operator expressions: {$set: {…}, $inc: {…}}.
	KindOperator Kind = iota
	// KindReplacement is a whole new document: {a: 1, b: 2}.
	KindReplacement
	// KindPipeline is an aggregation pipeline: [{$set: …}, …]
	// (pipeline.go).
	KindPipeline
)

// Options are the parts of an update statement, besides the update itself,
// that shape how it parses.
type Options struct {
	// ArrayFilters are the statement's arrayFilters, one document per
	// identifier: [{"x.a": {"$gt": 1}}] defines $[x].
	ArrayFilters []bsoncore.Document
	// Multi is the statement's multi flag: a replacement cannot be applied
	// to several documents.
	Multi bool
	// Now is $$NOW in a pipeline update; the zero time means the time
	// Parse is called.
	Now time.Time
	// Vars are the command's let variables, by name without "$$", which
	// a pipeline update sees besides $$NOW.
	Vars map[string]bsoncore.Value
	// Constants are the statement's c: more variables for a pipeline
	// update, refused (51198) with any other kind of update.
	Constants map[string]bsoncore.Value
}

// Update is a parsed update, immutable and safe for concurrent use: parse
// once, apply to every document the statement matched.
type Update struct {
	kind Kind
	// root is an operator update's tree (KindOperator); nil when the
	// update was parsed as a flat $set (flat.go's parseFlat), whose tree
	// tree() builds from flat on first use, into built.
	root        *objectNode
	built       atomic.Pointer[objectNode]
	replacement bsoncore.Document // KindReplacement
	// fromPipeline: the replacement is an update pipeline's output, which
	// may hold top-level $-prefixed fields (MongoDB 5.0+ allows them there,
	// as added by $setField, $literal or $replaceWith).
	fromPipeline bool
	positional   bool // some path uses "$"
	filters      map[string]*arrayFilter
	pipeline     *agg.Pipeline // KindPipeline
	pipelineRaw  []byte        // the stages pipeline refers to
	// flat lists the fields of an operator update that is only $set of
	// existing-or-not top-level fields (flat.go), nil for any other; one
	// field's list is one, so that YCSB's update allocates no slice.
	flat []flatField
	one  [1]flatField
}

// Kind reports the update's form.
func (u *Update) Kind() Kind { return u.kind }

// IsReplacement reports whether the update replaces whole documents.
func (u *Update) IsReplacement() bool { return u.kind == KindReplacement }

// Positional reports whether the update uses the positional operator "$",
// whose array position comes from the filter's match (ApplyContext.ArrayPos).
func (u *Update) Positional() bool { return u.positional }

// Parse parses an update statement's "u" value: an operator document, a
// replacement document, or a pipeline (an array). The update's bytes are
// copied: the caller may reuse its buffer.
func Parse(update bsoncore.Value, opts Options) (*Update, error) {
	if len(opts.Constants) > 0 && update.Type != bsoncore.TypeArray {
		return nil, errorf(codeConstantsNotPipeline, "Constant values may only be specified for pipeline updates")
	}
	switch update.Type {
	case bsoncore.TypeEmbeddedDocument:
		return ParseDocument(update.Data, opts)
	case bsoncore.TypeArray:
		if len(opts.ArrayFilters) > 0 {
			return nil, failedToParse("arrayFilters may not be specified for pipeline-style updates")
		}
		return parsePipeline(update, opts)
	}
	return nil, failedToParse("Update argument must be either an object or an array")
}

// ParseDocument parses an operator or replacement update document. A
// document whose first field starts with "$" is an operator update (MongoDB
// decides on the first field alone); any other document, the empty one
// included, is a replacement.
func ParseDocument(update bsoncore.Document, opts Options) (*Update, error) {
	if n, ok := bsonx.ValueSize(bsoncore.TypeEmbeddedDocument, update); !ok || n != len(update) {
		return nil, failedToParse("update: the update document is not valid BSON")
	}
	update = slices.Clone(update)
	filters, err := parseArrayFilters(opts.ArrayFilters)
	if err != nil {
		return nil, err
	}
	if filters == nil {
		if u := parseFlat(update); u != nil {
			if invariants.Enabled {
				checkFlatParse(update, u)
			}
			return u, nil
		}
	}
	return parseTree(update, filters, opts)
}

// parseTree parses an update document (the caller's own copy, its framing
// checked) into a replacement or an operator update's tree.
func parseTree(update bsoncore.Document, filters map[string]*arrayFilter, opts Options) (*Update, error) {
	first, ok := firstKey(update)
	if !ok || !strings.HasPrefix(first, "$") {
		if opts.Multi {
			return nil, failedToParse("multi update is not supported for replacement-style update")
		}
		if len(filters) > 0 {
			return nil, failedToParse("arrayFilters may not be specified for replacement-style updates")
		}
		return &Update{kind: KindReplacement, replacement: update}, nil
	}
	u := &Update{kind: KindOperator, root: newObjectNode(), filters: filters}
	p := &parser{u: u, used: map[string]bool{}}
	elems := update[4 : len(update)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return nil, failedToParse("update: the update document is not valid BSON")
		}
		elems = rest
		if err := p.operator(string(key), bsoncore.Value{Type: t, Data: val}); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(filters) {
		if !p.used[id] {
			return nil, failedToParse("The array filter for identifier '%s' was not used in the update %s", id, docValue(update).String())
		}
	}
	u.root.finish()
	u.flat = flatSets(u.root)
	return u, nil
}

func firstKey(doc bsoncore.Document) (string, bool) {
	if len(doc) <= 5 {
		return "", false
	}
	_, key, _, _, ok := bsonx.NextElement(doc[4 : len(doc)-1])
	return string(key), ok
}

// parser accumulates an operator update's tree.
type parser struct {
	u    *Update
	used map[string]bool // array filter identifiers the paths use
}

// opParser builds the leaf of one operator for one path; arg is the
// operator's argument for that path ({$inc: {a: 5}}: 5).
type opParser func(p path, arg bsoncore.Value) (updNode, error)

// operators is the table of update operators, filled by the op_*.go files.
var operators = map[string]opParser{}

func register(name string, p opParser) { operators[name] = p }

// operator parses one operator's document, path by path, in order.
func (p *parser) operator(name string, arg bsoncore.Value) error {
	build, ok := operators[name]
	if !ok {
		return failedToParse("Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", name)
	}
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return failedToParse("Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s: %s}", typeName(arg.Type), name, arg.String())
	}
	elems := arg.Data[4 : len(arg.Data)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return failedToParse("update: the update document is not valid BSON")
		}
		elems = rest
		v := bsoncore.Value{Type: t, Data: val}
		if name == "$rename" {
			if err := p.rename(string(key), v); err != nil {
				return err
			}
			continue
		}
		fp, err := p.checkPath(string(key))
		if err != nil {
			return err
		}
		leaf, err := build(fp, v)
		if err != nil {
			return err
		}
		if err := p.insert(fp, leaf); err != nil {
			return err
		}
	}
	return nil
}

// rename places $rename's two nodes: a placeholder at the source path, so
// that other operators on it conflict, and the rename itself at the
// destination, where it runs in the destination's turn.
func (p *parser) rename(from string, to bsoncore.Value) error {
	src, err := p.checkPath(from)
	if err != nil {
		return err
	}
	if err := p.insert(src, placeholderNode{}); err != nil {
		return err
	}
	dest, ok := to.StringValueOK()
	if !ok {
		return badValue("The 'to' field for $rename must be a string: %s: %s", from, to.String())
	}
	dst, err := p.checkPath(dest)
	if err != nil {
		return err
	}
	leaf, err := parseRename(src, dst, to)
	if err != nil {
		return err
	}
	return p.insert(dst, leaf)
}

// checkPath parses a path and applies MongoDB's parse-time rules on its
// dynamic components.
func (p *parser) checkPath(s string) (path, error) {
	fp, err := parsePath(s)
	if err != nil {
		return nil, err
	}
	count := 0
	for _, c := range fp {
		if isPositional(c) {
			count++
		}
	}
	if count > 1 {
		return nil, badValue("Too many positional (i.e. '$') elements found in path '%s'", s)
	}
	if count == 1 {
		p.u.positional = true
		if isPositional(fp[0]) {
			return nil, badValue("Cannot have positional (i.e. '$') element in the first position in path '%s'", s)
		}
	}
	return fp, nil
}

// childName is the key of path component i in its parent update node:
// the component itself, or the identifier of "$[id]" ("" for "$[]").
func (p *parser) childName(fp path, i int) (string, error) {
	c := fp[i]
	if !isArrayFilter(c) {
		return c, nil
	}
	if i == 0 {
		return "", badValue("Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '%s'", fp)
	}
	id := c[2 : len(c)-1]
	if id != "" {
		if _, ok := p.u.filters[id]; !ok {
			return "", badValue("No array filter found for identifier '%s' in path '%s'", id, fp)
		}
		p.used[id] = true
	}
	return id, nil
}

// insert merges a leaf into the tree at fp, creating internal nodes along
// the way, and reports MongoDB's ConflictingUpdateOperators when another
// path already claims fp, one of its prefixes, or one of its extensions.
func (p *parser) insert(fp path, leaf updNode) error {
	var cur internalNode = p.u.root
	for i := 0; i < len(fp)-1; i++ {
		name, err := p.childName(fp, i)
		if err != nil {
			return err
		}
		wantArray := isArrayFilter(fp[i+1])
		child := cur.get(name)
		if child != nil {
			_, isArr := child.(*arrayNode)
			_, isObj := child.(*objectNode)
			if (wantArray && !isArr) || (!wantArray && !isObj) {
				return conflict(fp, fp[:i+1])
			}
		} else {
			if wantArray {
				child = newArrayNode()
			} else {
				child = newObjectNode()
			}
			cur.set(name, child)
		}
		cur = child.(internalNode)
	}
	name, err := p.childName(fp, len(fp)-1)
	if err != nil {
		return err
	}
	if cur.get(name) != nil {
		return conflict(fp, fp)
	}
	cur.set(name, leaf)
	return nil
}

func conflict(fp, at path) error {
	return mongoerr.New(mongoerr.ConflictingUpdateOps, "Updating the path '%s' would create a conflict at '%s'", fp, at)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeName is MongoDB's name for a BSON type, as its messages use.
func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }
