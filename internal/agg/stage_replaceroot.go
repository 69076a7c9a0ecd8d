package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() {
	registerStage("$replaceRoot", parseReplaceRoot)
	registerStage("$replaceWith", parseReplaceWith)
}

// replaceRootStage is $replaceRoot {newRoot: <expr>} and $replaceWith
// <expr>: each document replaced by the expression's value, which must be
// a document (code 40228 otherwise).
type replaceRootStage struct{ newRoot expr.Expr }

func parseReplaceRoot(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSpecNotObject, "expected an object as specification for $replaceRoot stage, got %s", typeName(arg))
	}
	var root bsoncore.Value
	for _, f := range fieldsOf(arg) {
		if f.Name != "newRoot" {
			return nil, errorf(codeLookupUnknownField, "BSON field '$replaceRoot.%s' is an unknown field.", f.Name)
		}
		root = f.Value
	}
	if root.Type == 0 {
		return nil, errorf(codeIDLMissingField, "BSON field '$replaceRoot.newRoot' is missing but a required field")
	}
	return parseReplaceWith(root, pc)
}

func parseReplaceWith(arg bsoncore.Value, pc *parseContext) (stage, error) {
	e, err := expr.ParseIn(arg, pc.scope)
	if err != nil {
		return nil, err
	}
	return &replaceRootStage{e}, nil
}

func (r *replaceRootStage) open(rc *runContext, in Source) (Source, error) {
	ctx := rc.exprContext()
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		d, err := in.Next()
		if d == nil || err != nil {
			return nil, err
		}
		ctx.Reset(d)
		v, err := r.newRoot.Eval(ctx)
		if err != nil {
			return nil, err
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeReplaceRootNotObject, "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s", printValue(v), typeName(v), d)
		}
		return bsoncore.Document(v.Data), nil
	}}, nil
}

// printValue prints v for an error message ("MISSING" for Missing, as
// MongoDB prints it).
func printValue(v bsoncore.Value) string {
	if v.Type == 0 {
		return "MISSING"
	}
	return v.String()
}
