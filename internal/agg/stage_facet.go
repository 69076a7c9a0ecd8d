package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$facet", parseFacet) }

// facetStage is $facet {name: [stages…], …}: every sub-pipeline runs over
// the whole input, and the stage outputs one document whose fields are the
// sub-pipelines' outputs as arrays, in specification order. The input is
// buffered once (counted against the memory budget) and replayed to each
// sub-pipeline.
type facetStage struct {
	names []string
	subs  [][]stage
}

func parseFacet(arg bsoncore.Value, pc *parseContext) (stage, error) {
	fs := fieldsOf(arg)
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(fs) == 0 {
		return nil, errorf(codeFacetSpec, "the $facet specification must be a non-empty object, but found: %s", printValue(arg))
	}
	f := &facetStage{}
	for _, field := range fs {
		if _, err := splitPath(field.Name); err != nil {
			return nil, err
		}
		if field.Value.Type != bsoncore.TypeArray {
			return nil, errorf(codeFacetNotArray, "arguments to $facet must be arrays, %s is type %s", field.Name, typeName(field.Value))
		}
		var docs []bsoncore.Document
		for _, s := range arrayValues(field.Value) {
			if s.Type != bsoncore.TypeEmbeddedDocument || len(fieldsOf(s)) == 0 {
				return nil, errorf(codeFacetStageNotObject, "elements of arrays in $facet spec must be non-empty objects, %s argument contained an element of type %s: %s", field.Name, typeName(s), printValue(s))
			}
			d := bsoncore.Document(s.Data)
			if name, _, err := stageNameArg(d); err == nil {
				switch name {
				case "$facet", "$out", "$merge", "$documents", "$collStats", "$indexStats":
					return nil, errorf(codeStageNotInFacet, "%s is not allowed to be used within a $facet stage", name)
				}
			}
			docs = append(docs, d)
		}
		sub := *pc
		sub.inFacet = true
		ss, err := parseStages(docs, &sub)
		if err != nil {
			return nil, err
		}
		f.names = append(f.names, field.Name)
		f.subs = append(f.subs, ss)
	}
	return f, nil
}

func (f *facetStage) open(rc *runContext, in Source) (Source, error) {
	done := false
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if done {
			return nil, nil
		}
		done = true
		docs, err := bufferAll(rc, in, "$facet")
		if err != nil {
			return nil, err
		}
		out := make([]field, len(f.names))
		for i, ss := range f.subs {
			src, err := runStages(rc, ss, SliceSource(docs))
			if err != nil {
				return nil, err
			}
			res, err := ReadAll(src)
			if err != nil {
				return nil, err
			}
			vals := make([]bsoncore.Value, len(res))
			for j, d := range res {
				vals[j] = docValue(d)
			}
			out[i] = field{f.names[i], buildArray(vals)}
		}
		return buildDoc(out), nil
	}}, nil
}
