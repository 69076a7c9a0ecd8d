package agg

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() {
	registerStage("$out", parseOutput("$out"))
	registerStage("$merge", parseOutput("$merge"))
}

// parseOutput checks the position of $out and $merge (last, and not inside
// $facet or $lookup) and then refuses them: writing goes through the
// commit pipeline, which this package does not reach yet.
func parseOutput(name string) stageParser {
	return func(_ bsoncore.Value, pc *parseContext) (stage, error) {
		if pc.inFacet {
			return nil, errorf(codeStageNotInFacet, "%s is not allowed to be used within a $facet stage", name)
		}
		if pc.inLookup {
			return nil, errorf(codeStageNotInLookup, "%s is not allowed within a $lookup's sub-pipeline", name)
		}
		if pc.index != pc.count-1 {
			return nil, errorf(codeStageNotLast, "%s can only be the final stage in the pipeline", name)
		}
		return nil, mongoerr.New(mongoerr.CommandNotSupported, "%s is not supported yet", name)
	}
}
