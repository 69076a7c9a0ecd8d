package agg

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

func init() { registerStage("$changeStream", parseChangeStream) }

// parseChangeStream refuses $changeStream where this parser meets it: a
// change stream is opened by the command layer (commands/changestream.go)
// when it is a pipeline's first stage, so here it is in a sub-pipeline or
// past the first stage.
func parseChangeStream(_ bsoncore.Value, pc *parseContext) (stage, error) {
	if pc.inFacet {
		return nil, errorf(codeStageNotInFacet, "$changeStream is not allowed to be used within a $facet stage")
	}
	return nil, errorf(codeStageNotFirst, "$changeStream is only valid as the first stage in a pipeline")
}
