package agg

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$unionWith", parseUnionWith) }

// unionWithStage is $unionWith: the input documents, then those of another
// collection (coll) passed through pipeline. A pipeline starting with
// $documents needs no coll.
type unionWithStage struct {
	coll     string
	pipeline []stage
}

func parseUnionWith(arg bsoncore.Value, pc *parseContext) (stage, error) {
	u := &unionWithStage{}
	switch arg.Type {
	case bsoncore.TypeString:
		u.coll = arg.StringValue()
		return u, nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", typeName(arg))
	}
	var pipeline bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "coll":
			s, ok := f.Value.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", typeName(f.Value))
			}
			u.coll = s
		case "pipeline":
			if f.Value.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", typeName(f.Value))
			}
			pipeline = f.Value
		default:
			return nil, errorf(codeLookupUnknownField, "BSON field '$unionWith.%s' is an unknown field.", f.Name)
		}
	}
	if pipeline.Type != 0 {
		var docs []bsoncore.Document
		for _, s := range arrayValues(pipeline) {
			if s.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
			docs = append(docs, bsoncore.Document(s.Data))
		}
		sub := *pc
		sub.inUnionWith = true
		var err error
		if u.pipeline, err = parseStages(docs, &sub); err != nil {
			return nil, err
		}
	}
	if u.coll == "" && !(len(u.pipeline) > 0 && isDocuments(u.pipeline[0])) {
		return nil, errorf(codeIDLMissingField, "BSON field '$unionWith.coll' is missing but a required field")
	}
	return u, nil
}

func (u *unionWithStage) open(rc *runContext, in Source) (Source, error) {
	var other Source
	inDone := false
	s := &funcSource{in: in}
	s.next = func() (bsoncore.Document, error) {
		if !inDone {
			d, err := in.Next()
			if d != nil || err != nil {
				return d, err
			}
			inDone = true
			docs, err := readCollection(rc, u.coll)
			if err != nil {
				return nil, err
			}
			var src Source = SliceSource(docs)
			if len(u.pipeline) > 0 && isDocuments(u.pipeline[0]) {
				src = nil
			}
			if other, err = runStages(rc, u.pipeline, src); err != nil {
				return nil, err
			}
			s.done = other.Close
		}
		return other.Next()
	}
	return s, nil
}
