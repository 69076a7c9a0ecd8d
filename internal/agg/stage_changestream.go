package agg

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

func init() { registerStage("$changeStream", parseChangeStream) }

// parseChangeStream refuses $changeStream as a MongoDB standalone does:
// change streams read the replica set's oplog, and a standalone Cairn has
// no change stream to offer yet (the change-streams issue adds one).
func parseChangeStream(bsoncore.Value, *parseContext) (stage, error) {
	return nil, errorf(codeChangeStreamNoRepl, "The $changeStream stage is only supported on replica sets")
}
