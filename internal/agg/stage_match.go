package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$match", parseMatch) }

// matchStage is $match: a query filter. A top-level $expr is split off and
// evaluated here, so that it sees the pipeline's variables; the rest goes
// to package query.
type matchStage struct {
	filter bsoncore.Document // as given, for LeadingMatch
	query  *query.Filter
	expr   expr.Expr // the top-level $expr, or nil
}

func parseMatch(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeMatchNotObject, "the match filter must be an expression in an object")
	}
	filter := bsoncore.Document(arg.Data)
	m := &matchStage{filter: filter}
	rest := filter
	if e := filter.Lookup("$expr"); e.Type != 0 {
		var err error
		if m.expr, err = expr.ParseIn(e, pc.scope); err != nil {
			return nil, err
		}
		var fs []field
		for _, f := range fieldsOf(arg) {
			if f.Name != "$expr" {
				fs = append(fs, f)
			}
		}
		rest = buildDoc(fs)
	}
	var err error
	// A $expr nested in $and/$or sees the command's $$NOW and let too
	// (not variables a $lookup binds: those change per document).
	if m.query, err = query.ParseWith(rest, matchOptions(pc.opts)); err != nil {
		return nil, err
	}
	if m.query.NearCount() > 0 {
		return nil, errorf(mongoerr.NearInMatch, "$geoNear, $near, and $nearSphere are not allowed in this context, as these operators require sorting geospatial data. If you do not need sort, consider using $geoWithin instead.")
	}
	if m.query.HasText() && pc.index > 0 {
		// Only the collection read answers $text (the execution layer
		// pushes a first $match down to it): anywhere else MongoDB
		// refuses it.
		return nil, errorf(mongoerr.TextMatchNotFirst, "$match with $text is only allowed as the first pipeline stage")
	}
	return m, nil
}

func (m *matchStage) open(rc *runContext, in Source) (Source, error) {
	var ctx *expr.Context
	if m.expr != nil {
		ctx = rc.exprContext()
	}
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		for {
			d, err := in.Next()
			if d == nil || err != nil {
				return nil, err
			}
			r, err := m.query.Exec(d)
			if err != nil {
				return nil, err
			}
			if !r.Matched {
				continue
			}
			if ctx != nil {
				ctx.Reset(d)
				v, err := m.expr.Eval(ctx)
				if err != nil {
					return nil, err
				}
				if !expr.Truthy(v) {
					continue
				}
			}
			return d, nil
		}
	}}, nil
}

// matchOptions is what a $match filter is parsed with: the pipeline's
// variables and collation.
func matchOptions(o *Options) query.Options {
	opts := query.Options{Vars: o.Vars, Now: o.Now}
	if o.Collation != nil {
		opts.Collation = o.Collation
	}
	return opts
}
