package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() {
	registerStage("$project", parseProject)
	registerStage("$addFields", parseAddFields("$addFields"))
	registerStage("$set", parseAddFields("$set"))
	registerStage("$unset", parseUnset)
}

// projectStage is $project, $addFields, $set or $unset: a projection
// applied to each document.
type projectStage struct{ proj *projection }

func parseProject(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeProjectNotObject, "$project specification must be an object")
	}
	if len(fieldsOf(arg)) == 0 {
		return nil, errorf(codeProjectEmpty, "Invalid $project :: caused by :: projection specification must have at least one field")
	}
	p, err := parseProjectSpec(arg, pc.scope)
	if err != nil {
		return nil, err
	}
	return &projectStage{p}, nil
}

func parseAddFields(name string) stageParser {
	return func(arg bsoncore.Value, pc *parseContext) (stage, error) {
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeStageNotObject, "%s specification stage must be an object, got %s", name, typeName(arg))
		}
		if len(fieldsOf(arg)) == 0 {
			return nil, errorf(codeAddFieldsEmpty, "Invalid %s :: caused by :: specification must have at least one field", name)
		}
		p, err := parseAddFieldsSpec(arg, pc.scope)
		if err != nil {
			return nil, err
		}
		return &projectStage{p}, nil
	}
}

func parseUnset(arg bsoncore.Value, _ *parseContext) (stage, error) {
	var names []bsoncore.Value
	switch arg.Type {
	case bsoncore.TypeString:
		names = []bsoncore.Value{arg}
	case bsoncore.TypeArray:
		names = arrayValues(arg)
		if len(names) == 0 {
			return nil, errorf(codeUnsetEmpty, "$unset specification must be a string or an array with at least one field")
		}
	default:
		return nil, errorf(codeUnsetType, "$unset specification must be a string or an array")
	}
	var paths [][]string
	for _, n := range names {
		s, ok := n.StringValueOK()
		if !ok {
			return nil, errorf(codeUnsetElemType, "$unset specification must be a string or an array containing only string values")
		}
		p, err := splitPath(s)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	p, err := newExclusion(paths)
	if err != nil {
		return nil, err
	}
	return &projectStage{p}, nil
}

func (s *projectStage) open(rc *runContext, in Source) (Source, error) {
	ctx := rc.exprContext()
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		d, err := in.Next()
		if d == nil || err != nil {
			return nil, err
		}
		return s.proj.apply(d, ctx)
	}}, nil
}
