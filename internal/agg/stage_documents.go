package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$documents", parseDocuments) }

// documentsStage is $documents <expr>: the documents of an array the
// expression evaluates to (once, with no current document), replacing the
// input. It must be the first stage; a pipeline that starts with it needs
// no collection (aggregate: 1).
type documentsStage struct{ docs expr.Expr }

func parseDocuments(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if pc.index != 0 {
		return nil, errorf(codeStageNotFirst, "$documents is only valid as the first stage in a pipeline")
	}
	e, err := expr.ParseIn(arg, pc.scope)
	if err != nil {
		return nil, err
	}
	return &documentsStage{e}, nil
}

func (s *documentsStage) open(rc *runContext, in Source) (Source, error) {
	var docs []bsoncore.Value
	evaluated := false
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if !evaluated {
			evaluated = true
			ctx := rc.exprContext()
			v, err := s.docs.Eval(ctx)
			if err != nil {
				return nil, err
			}
			if v.Type != bsoncore.TypeArray {
				return nil, errorf(codeDocumentsNotArray, "error during aggregation :: caused by :: an array is expected")
			}
			docs = arrayValues(v)
		}
		if len(docs) == 0 {
			return nil, nil
		}
		d := docs[0]
		docs = docs[1:]
		if d.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeReplaceRootNotObject, "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.", printValue(d), typeName(d))
		}
		return bsoncore.Document(d.Data), nil
	}}, nil
}
