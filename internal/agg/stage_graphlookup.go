package agg

import (
	"math"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$graphLookup", parseGraphLookup) }

// graphLookupStage is $graphLookup: a breadth-first search of another
// collection (from) for each input document, as MongoDB's
// DocumentSourceGraphLookUp does:
//
//   - the frontier starts as the value of startWith (each element when it
//     is an array; a missing value matches nothing);
//   - each round reads the documents of from whose connectToField equals a
//     frontier value ({connectToField: {$in: frontier}} with query
//     semantics, ANDed with restrictSearchWithMatch), keeps those whose _id
//     was not seen yet (with depthField set to the round, from 0), and makes
//     the values of their connectFromField (arrays expanded) the next
//     frontier;
//   - the search stops when a round finds nothing new or after round
//     maxDepth; the documents found become the array as, in the order found
//     (MongoDB's order is unspecified).
//
// The documents found and the frontier count against Options.MaxMemory
// (MongoDB's internalDocumentSourceGraphLookupMaxMemoryBytes, 100 MB);
// past it the stage fails with 40099, as MongoDB 7.0 does (it does not
// spill). With an IndexCatalog and an index on connectToField each round
// reads through the index; otherwise from is read once per run and held.
type graphLookupStage struct {
	from       string
	as         []string
	startWith  expr.Expr
	fromPath   []string
	toField    string
	depthField []string      // nil: none
	maxDepth   int64         // -1: unlimited
	restrict   *query.Filter // nil: none
}

func parseGraphLookup(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $graphLookup stage specification must be an object, but found %s", typeName(arg))
	}
	g := &graphLookupStage{maxDepth: -1}
	var as, from, to string
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "startWith":
			e, err := expr.ParseIn(f.Value, pc.scope)
			if err != nil {
				return nil, err
			}
			g.startWith = e
			continue
		case "maxDepth":
			n, err := graphMaxDepth(f.Value)
			if err != nil {
				return nil, err
			}
			g.maxDepth = n
			continue
		case "restrictSearchWithMatch":
			if f.Value.Type != bsoncore.TypeEmbeddedDocument {
				return nil, errorf(codeGraphRestrictType, "restrictSearchWithMatch must be an object, found %s", typeName(f.Value))
			}
			raw := bsoncore.Document(append([]byte(nil), f.Value.Data...)) // the filter keeps it
			if err := banSpecialFeatures(raw); err != nil {
				return nil, err
			}
			r, err := query.ParseWith(raw, pc.opts.filterOptions())
			if err != nil {
				return nil, err
			}
			g.restrict = r
			continue
		case "from", "as", "connectFromField", "connectToField", "depthField":
			if f.Value.Type != bsoncore.TypeString {
				return nil, errorf(codeGraphStringArg, "expected string as argument for %s, found: %s", f.Name, typeName(f.Value))
			}
		default:
			return nil, errorf(codeGraphUnknownArg, "Unknown argument to $graphLookup: %s", f.Name)
		}
		s := f.Value.StringValue()
		switch f.Name {
		case "from":
			from = s
		case "as":
			as = s
		case "connectFromField":
			g.fromPath = nil
			if s != "" {
				p, err := splitPath(s)
				if err != nil {
					return nil, err
				}
				g.fromPath = p
			}
		case "connectToField":
			to = s
		case "depthField":
			p, err := splitPath(s)
			if err != nil {
				return nil, err
			}
			g.depthField = p
		}
	}
	if from == "" || as == "" || g.startWith == nil || len(g.fromPath) == 0 || to == "" {
		return nil, errorf(codeGraphMissingArg, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.")
	}
	var err error
	if g.as, err = splitPath(as); err != nil {
		return nil, err
	}
	if _, err = splitPath(to); err != nil {
		return nil, err
	}
	g.from, g.toField = from, to
	return g, nil
}

// graphMaxDepth reads maxDepth as MongoDB does: a number, truncated to an
// integer (safeNumberLong), that must be non-negative and equal the number.
func graphMaxDepth(v bsoncore.Value) (int64, error) {
	if !isNumber(v) {
		return 0, errorf(codeGraphMaxDepthType, "maxDepth must be numeric, found type: %s", typeName(v))
	}
	if n, ok := v.Int64OK(); ok && v.Type == bsoncore.TypeInt64 {
		if n < 0 {
			return 0, errorf(codeGraphMaxDepthNeg, "maxDepth requires a nonnegative argument, found: %d", n)
		}
		return n, nil
	}
	f, _ := bsonx.AsFloat64(v)
	var n int64
	switch {
	case f != f: // NaN is 0
	case f >= 0x1p63:
		n = math.MaxInt64
	case f < -0x1p63:
		n = math.MinInt64
	default:
		n = int64(f)
	}
	if n < 0 {
		return 0, errorf(codeGraphMaxDepthNeg, "maxDepth requires a nonnegative argument, found: %d", n)
	}
	if float64(n) != f {
		return 0, errorf(codeGraphMaxDepthLong, "maxDepth could not be represented as a long long: %s", printValue(v))
	}
	return n, nil
}

// banSpecialFeatures refuses what MongoDB's kBanAllSpecialFeatures
// refuses in restrictSearchWithMatch and query.Parse accepts: $expr and
// $jsonSchema (QueryFeatureNotAllowed).
func banSpecialFeatures(filter bsoncore.Document) error {
	for _, op := range []string{"$expr", "$jsonSchema"} {
		if _, err := filter.LookupErr(op); err == nil {
			return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "%s is not allowed in this context", op)
		}
	}
	return nil
}

func (g *graphLookupStage) open(rc *runContext, in Source) (Source, error) {
	s := &graphSearch{g: g, rc: rc, ctx: rc.exprContext()}
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		d, err := in.Next()
		if d == nil || err != nil {
			return nil, err
		}
		found, err := s.search(d)
		if err != nil {
			return nil, err
		}
		return bsoncore.Document(setPath(docValue(d), g.as, buildArray(found)).Data), nil
	}}, nil
}

// graphSearch runs one $graphLookup's searches, holding from when it is
// read whole.
type graphSearch struct {
	g       *graphLookupStage
	rc      *runContext
	ctx     *expr.Context
	all     []bsoncore.Document
	haveAll bool
	noIndex bool
}

// search is the breadth-first search for input document d.
func (s *graphSearch) search(d bsoncore.Document) ([]bsoncore.Value, error) {
	s.ctx.Reset(d)
	start, err := s.g.startWith.Eval(s.ctx)
	if err != nil {
		return nil, err
	}
	var frontier []bsoncore.Value
	var frontierBytes, visitedBytes int64
	addFrontier := func(v bsoncore.Value) {
		frontier = append(frontier, copyValue(v))
		frontierBytes += int64(len(v.Data)) + 1
	}
	if start.Type == bsoncore.TypeArray {
		for _, v := range arrayValues(start) {
			addFrontier(v)
		}
	} else if start.Type != 0 {
		addFrontier(start)
	}
	visited := map[string]bool{}
	var found []bsoncore.Value
	for depth := int64(0); len(frontier) > 0 && (s.g.maxDepth < 0 || depth <= s.g.maxDepth); depth++ {
		matches, err := s.round(frontier)
		if err != nil {
			return nil, err
		}
		frontier, frontierBytes = frontier[:0], 0
		for _, m := range matches {
			id, err := m.LookupErr("_id")
			if err != nil {
				return nil, errorf(codeGraphNoID, "Documents in the '%s.%s' namespace must contain an _id for de-duplication in $graphLookup", s.rc.opts.DB, s.g.from)
			}
			key := string(keystring.Append(nil, id))
			if visited[key] {
				continue
			}
			visited[key] = true
			doc := docValue(m)
			if s.g.depthField != nil {
				doc = setPath(doc, s.g.depthField, expr.Int64(depth))
			}
			found = append(found, doc)
			visitedBytes += int64(len(doc.Data))
			for _, v := range valuesAlongPath(docValue(m), s.g.fromPath, nil) {
				addFrontier(v)
			}
			if visitedBytes+frontierBytes >= s.rc.opts.MaxMemory {
				return nil, errorf(codeGraphMemory, "$graphLookup reached maximum memory consumption")
			}
		}
	}
	return found, nil
}

// round returns the documents of from whose connectToField matches a
// value of frontier and that pass restrictSearchWithMatch.
func (s *graphSearch) round(frontier []bsoncore.Value) ([]bsoncore.Document, error) {
	var candidates []bsoncore.Document
	read := false
	if ic, ok := s.rc.opts.Catalog.(IndexCatalog); ok && !s.noIndex && indexable(frontier) {
		src, ok, err := ic.FindIn(s.rc.ctx, s.rc.opts.DB, s.g.from, s.g.toField, frontier, s.rc.opts.Collation)
		if err != nil {
			return nil, err
		}
		if ok {
			if candidates, err = ReadAll(src); err != nil {
				return nil, err
			}
			read = true
		} else {
			s.noIndex = true
		}
	}
	if !read {
		if !s.haveAll {
			s.haveAll = true
			var err error
			if s.all, err = readCollection(s.rc, s.g.from); err != nil {
				return nil, err
			}
		}
		candidates = s.all
	}
	f, err := inFilter(s.g.toField, frontier, s.rc.opts)
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for _, c := range candidates {
		if f.Match(c) && (s.g.restrict == nil || s.g.restrict.Match(c)) {
			out = append(out, c)
		}
	}
	return out, nil
}
