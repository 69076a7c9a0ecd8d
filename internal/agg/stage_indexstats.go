package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func init() { registerStage("$indexStats", parseIndexStats) }

// indexStatsStage is $indexStats {}: one document per index of the
// collection with its access counts, replacing the input. It must come
// first.
type indexStatsStage struct{}

func parseIndexStats(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(arg.Document()) != 5 {
		return nil, errorf(codeIndexStatsNotEmpty, "The $indexStats stage specification must be an empty object")
	}
	if err := firstStage("$indexStats", pc); err != nil {
		return nil, err
	}
	return indexStatsStage{}, nil
}

func (indexStatsStage) open(rc *runContext, in Source) (Source, error) {
	return statsSource(in, func() ([]bsoncore.Document, error) {
		if rc.opts.Stats == nil {
			return nil, mongoerr.New(mongoerr.CommandNotSupported, "$indexStats is not available here")
		}
		return rc.opts.Stats.IndexStats()
	}), nil
}
