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

func init() { registerStage("$changeStreamSplitLargeEvent", parseSplitLargeEvent) }

// parseSplitLargeEvent refuses $changeStreamSplitLargeEvent where this
// parser meets it: the command layer takes it off the end of a change
// stream's pipeline, so here it is in a pipeline that is not one. Its
// argument is checked first, as MongoDB parses it before it checks where
// it stands.
func parseSplitLargeEvent(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if d, ok := arg.DocumentOK(); !ok || len(d) != 5 {
		return nil, errorf(codeSplitEventSpec, "$changeStreamSplitLargeEvent spec should be an empty object")
	}
	if pc.inFacet {
		return nil, errorf(codeStageNotInFacet, "$changeStreamSplitLargeEvent is not allowed to be used within a $facet stage")
	}
	return nil, errorf(codeNotChangeStream, "$changeStreamSplitLargeEvent can only be used in a $changeStream pipeline")
}
