package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func init() { registerStage("$currentOp", parseCurrentOp) }

// currentOpStage is $currentOp {allUsers, idleConnections, …}: one document
// per operation in progress. It must come first, in a pipeline run with
// {aggregate: 1} on the admin database (the command layer checks the
// database: only it knows the namespace).
type currentOpStage struct{ spec bsoncore.Document }

func parseCurrentOp(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", typeName(arg))
	}
	if err := firstStage("$currentOp", pc); err != nil {
		return nil, err
	}
	elems, _ := arg.Document().Elements()
	for _, e := range elems {
		switch e.Key() {
		case "allUsers", "idleConnections", "idleCursors", "idleSessions", "localOps", "truncateOps", "backtrace":
			if e.Value().Type != bsoncore.TypeBoolean {
				return nil, mongoerr.New(mongoerr.FailedToParse, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s", e.Key(), typeName(e.Value()))
			}
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", e.Key())
		}
	}
	return &currentOpStage{spec: arg.Document()}, nil
}

func (s *currentOpStage) open(rc *runContext, in Source) (Source, error) {
	return statsSource(in, func() ([]bsoncore.Document, error) {
		if rc.opts.Stats == nil {
			return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
		}
		return rc.opts.Stats.CurrentOp(s.spec)
	}), nil
}
