package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$lookup", parseLookup) }

// lookupStage is $lookup: each input document gets an array field (as)
// of the documents of another collection (from) that
//
//   - have foreignField equal to some value of localField (every value the
//     local path reaches, arrays expanded; null when it reaches none), with
//     query equality semantics on the foreign side (arrays match by
//     element, null matches missing), and/or
//   - come out of pipeline, run over the foreign collection with the let
//     variables bound to their values for the input document.
//
// With both (MongoDB 5.0+), the equality match filters the foreign
// documents before the pipeline. With an IndexCatalog and an index on
// foreignField, each input document's matches are read through the index;
// otherwise the foreign collection is read once per run, through
// Options.Catalog, and held in memory (lookup_index.go).
type lookupStage struct {
	from                   string
	localPath              []string
	foreignField           string
	as                     []string
	letNames               []string
	letExprs               []expr.Expr
	pipeline               []stage
	hasPipeline, hasFields bool
}

func parseLookup(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $lookup stage specification must be an object, but found %s", typeName(arg))
	}
	l := &lookupStage{}
	var (
		local, foreign, as string
		hasLocal, hasFor   bool
		pipeline, let      bsoncore.Value
	)
	str := func(f field) (string, error) {
		s, ok := f.Value.StringValueOK()
		if !ok {
			return "", mongoerr.New(mongoerr.FailedToParse, "$lookup argument '%s' must be a string, found %s: %s", f.Name, printValue(f.Value), typeName(f.Value))
		}
		return s, nil
	}
	for _, f := range fieldsOf(arg) {
		var err error
		switch f.Name {
		case "from":
			if f.Value.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup 'from' field must be a string, but found %s", typeName(f.Value))
			}
			l.from = f.Value.StringValue()
		case "localField":
			local, err = str(f)
			hasLocal = true
		case "foreignField":
			foreign, err = str(f)
			hasFor = true
		case "as":
			as, err = str(f)
		case "let":
			if f.Value.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s", typeName(f.Value))
			}
			let = f.Value
		case "pipeline":
			if f.Value.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array, is type %s", typeName(f.Value))
			}
			pipeline = f.Value
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "unknown argument to $lookup: %s", f.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	if as == "" {
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	}
	var err error
	if l.as, err = splitPath(as); err != nil {
		return nil, err
	}
	if hasLocal != hasFor || !hasLocal && pipeline.Type == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	}
	if hasLocal {
		l.hasFields = true
		if l.localPath, err = splitPath(local); err != nil {
			return nil, err
		}
		if _, err = splitPath(foreign); err != nil {
			return nil, err
		}
		l.foreignField = foreign
	}
	scope := pc.scope
	if let.Type != 0 {
		for _, f := range fieldsOf(let) {
			if !validVarName(f.Name) {
				return nil, errorf(codeBadLetName, "'%s' starts with an invalid character for a user variable name", f.Name)
			}
			e, err := expr.ParseIn(f.Value, pc.scope)
			if err != nil {
				return nil, err
			}
			l.letNames = append(l.letNames, f.Name)
			l.letExprs = append(l.letExprs, e)
		}
		scope = expr.NewScope(pc.scope, l.letNames...)
	}
	if pipeline.Type != 0 {
		l.hasPipeline = true
		var docs []bsoncore.Document
		for _, s := range arrayValues(pipeline) {
			if s.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array of objects")
			}
			docs = append(docs, bsoncore.Document(s.Data))
		}
		sub := *pc
		sub.scope, sub.inLookup = scope, true
		if l.pipeline, err = parseStages(docs, &sub); err != nil {
			return nil, err
		}
	}
	if l.from == "" && !(len(l.pipeline) > 0 && isDocuments(l.pipeline[0])) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'from' field for a $lookup")
	}
	return l, nil
}

func isDocuments(s stage) bool {
	_, ok := s.(*documentsStage)
	return ok
}

// readCollection reads another collection through the catalog.
func readCollection(rc *runContext, coll string) ([]bsoncore.Document, error) {
	if coll == "" {
		return nil, nil
	}
	if rc.opts.Catalog == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "no catalog to read %s.%s from", rc.opts.DB, coll)
	}
	src, err := rc.opts.Catalog.Scan(rc.ctx, rc.opts.DB, coll)
	if err != nil {
		return nil, err
	}
	return ReadAll(src)
}

func (l *lookupStage) open(rc *runContext, in Source) (Source, error) {
	reader := &lookupReader{l: l, rc: rc} // lookup_index.go
	ctx := rc.exprContext()
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		d, err := in.Next()
		if d == nil || err != nil {
			return nil, err
		}
		matches, err := reader.candidates(d)
		if err != nil {
			return nil, err
		}
		if l.hasPipeline {
			subRC := rc
			if len(l.letNames) > 0 {
				ctx.Reset(d)
				vars := make(map[string]bsoncore.Value, len(l.letNames))
				for i, e := range l.letExprs {
					v, err := e.Eval(ctx)
					if err != nil {
						return nil, err
					}
					vars[l.letNames[i]] = copyValue(v)
				}
				subRC = rc.withVars(vars)
			}
			var src Source = SliceSource(matches)
			if len(l.pipeline) > 0 && isDocuments(l.pipeline[0]) {
				src = nil
			}
			out, err := runStages(subRC, l.pipeline, src)
			if err != nil {
				return nil, err
			}
			if matches, err = ReadAll(out); err != nil {
				return nil, err
			}
		}
		vals := make([]bsoncore.Value, len(matches))
		for i, m := range matches {
			vals[i] = docValue(m)
		}
		return bsoncore.Document(setPath(docValue(d), l.as, buildArray(vals)).Data), nil
	}}, nil
}

// equalityMatches filters foreign by {foreignField: {$in: localValues}}.
func (l *lookupStage) equalityMatches(rc *runContext, d bsoncore.Document, foreign []bsoncore.Document) ([]bsoncore.Document, error) {
	vals := valuesAlongPath(docValue(d), l.localPath, nil)
	if len(vals) == 0 {
		vals = []bsoncore.Value{expr.Null}
	}
	f, err := inFilter(l.foreignField, vals, rc.opts)
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for _, fd := range foreign {
		if f.Match(fd) {
			out = append(out, fd)
		}
	}
	return out, nil
}

// inFilter is {path: {$in: vals}}: equality to any of vals with query
// semantics (arrays match by element, null matches missing), strings equal
// under the pipeline's collation.
func inFilter(path string, vals []bsoncore.Value, opts *Options) (*query.Filter, error) {
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	return query.ParseWith(bsoncore.NewDocumentBuilder().AppendDocument(path,
		bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build()).Build(), opts.filterOptions())
}

// valuesAlongPath collects every value a dotted path reaches, expanding
// arrays at every level, the last included (MongoDB's
// extractAllElementsAlongPath).
func valuesAlongPath(v bsoncore.Value, parts []string, out []bsoncore.Value) []bsoncore.Value {
	switch {
	case v.Type == bsoncore.TypeArray:
		for _, e := range arrayValues(v) {
			if len(parts) == 0 {
				out = append(out, e)
			} else {
				out = valuesAlongPath(e, parts, out)
			}
		}
		return out
	case len(parts) == 0:
		if v.Type != 0 {
			out = append(out, v)
		}
		return out
	case v.Type == bsoncore.TypeEmbeddedDocument:
		return valuesAlongPath(getField(fieldsOf(v), parts[0]), parts[1:], out)
	}
	return out
}
