package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func init() { registerStage("$versions", parseVersions) }

// versionsStage is $versions {}: every retained version of every document
// of a versioned collection, as {_id, <version field>, validFrom, validTo,
// op, doc}. The execution layer reads the history (narrowed by a $match on
// _id and the version right after it) and hands it to the pipeline as its
// input, so the stage itself passes its input through; it must be the
// first stage of the command's own pipeline (not of a $facet, $lookup or
// $unionWith pipeline), and needs a collection.
type versionsStage struct{}

func parseVersions(arg bsoncore.Value, pc *parseContext) (stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "the $versions stage specification must be an object, but found %s", typeName(arg))
	}
	if err := firstStage("$versions", pc); err != nil {
		return nil, err
	}
	if pc.inUnionWith {
		return nil, errorf(codeStageNotFirst, "$versions is only valid as the first stage in a pipeline")
	}
	if el, err := d.IndexErr(0); err == nil {
		return nil, mongoerr.New(mongoerr.UnknownField, "BSON field '$versions.%s' is an unknown field.", el.Key())
	}
	return versionsStage{}, nil
}

func (versionsStage) open(_ *runContext, in Source) (Source, error) {
	if in == nil {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for '$versions'; a collection is required.")
	}
	return in, nil
}
