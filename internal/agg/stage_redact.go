package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$redact", parseRedact) }

// redactStage is $redact: its expression is evaluated with $$CURRENT at the
// document and then, where it says $$DESCEND, at every embedded document
// (also inside arrays), and must return $$KEEP (keep the document as it
// is), $$PRUNE (drop it) or $$DESCEND (keep its non-document fields and
// redact its embedded documents); anything else is error 17053. $$ROOT
// stays the whole document. As in MongoDB, the three variables are the
// strings "keep", "prune" and "descend", defined only inside $redact.
type redactStage struct {
	e expr.Expr
}

const codeRedactBadResult = mongoerr.RedactBadResult

var (
	redactKeep    = expr.String("keep")
	redactPrune   = expr.String("prune")
	redactDescend = expr.String("descend")
)

func parseRedact(arg bsoncore.Value, pc *parseContext) (stage, error) {
	scope := expr.NewScope(pc.scope, "KEEP", "PRUNE", "DESCEND")
	e, err := expr.ParseIn(arg, scope)
	if err != nil {
		return nil, err
	}
	return &redactStage{e: e}, nil
}

func (r *redactStage) open(rc *runContext, in Source) (Source, error) {
	ctx := rc.exprContext()
	ctx.SetVar("KEEP", redactKeep)
	ctx.SetVar("PRUNE", redactPrune)
	ctx.SetVar("DESCEND", redactDescend)
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		for {
			d, err := in.Next()
			if err != nil || d == nil {
				return nil, err
			}
			ctx.Reset(d)
			out, err := r.redact(ctx, d)
			if err != nil {
				return nil, err
			}
			if out.Type != 0 {
				return bsoncore.Document(out.Data), nil
			}
		}
	}}, nil
}

// redact applies the expression at doc; Missing means pruned.
func (r *redactStage) redact(ctx *expr.Context, doc bsoncore.Document) (bsoncore.Value, error) {
	ctx.SetCurrent(doc)
	v, err := r.e.Eval(ctx)
	if err != nil {
		return expr.Missing, err
	}
	switch {
	case v.Type == bsoncore.TypeString && v.StringValue() == "keep":
		return docValue(doc), nil
	case v.Type == bsoncore.TypeString && v.StringValue() == "prune":
		return expr.Missing, nil
	case v.Type != bsoncore.TypeString || v.StringValue() != "descend":
		return expr.Missing, errorf(codeRedactBadResult, "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", printValue(v))
	}
	fs := fieldsOf(docValue(doc))
	out := make([]field, 0, len(fs))
	for _, f := range fs {
		nv, err := r.redactValue(ctx, f.Value)
		if err != nil {
			return expr.Missing, err
		}
		if nv.Type != 0 {
			out = append(out, field{f.Name, nv})
		}
	}
	return docValue(buildDoc(out)), nil
}

// redactValue redacts a field's value: documents recursively, arrays
// element by element (pruned documents leave the array), others as they
// are.
func (r *redactStage) redactValue(ctx *expr.Context, v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return r.redact(ctx, v.Data)
	case bsoncore.TypeArray:
		elems := arrayValues(v)
		out := make([]bsoncore.Value, 0, len(elems))
		for _, e := range elems {
			ne, err := r.redactValue(ctx, e)
			if err != nil {
				return expr.Missing, err
			}
			out = append(out, ne)
		}
		return buildArray(out), nil
	}
	return v, nil
}
