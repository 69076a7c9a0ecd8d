package agg

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Stats serves the stages that report on the server instead of reading
// documents: $collStats, $indexStats and $currentOp. The command layer
// implements it for the namespace the pipeline runs against; the stages
// here only check their shape and position.
type Stats interface {
	// CollStats is $collStats' one output document for spec (already
	// checked to be a document), computed under the run's ctx.
	CollStats(ctx context.Context, spec bsoncore.Document) (bsoncore.Document, error)
	// IndexStats is one document per index, as $indexStats shows it.
	IndexStats() ([]bsoncore.Document, error)
	// CurrentOp is one document per operation in progress.
	CurrentOp(spec bsoncore.Document) ([]bsoncore.Document, error)
}

const (
	codeCollStatsNotObject  = mongoerr.CollStatsNotObject // MongoDB 7.0's code (later versions: 40166)
	codeIndexStatsNotEmpty  = mongoerr.IndexStatsNotEmpty
	codeCollStatsUnknownArg = mongoerr.UnknownField
)

func init() { registerStage("$collStats", parseCollStats) }

// collStatsStage is $collStats {latencyStats, storageStats, count,
// queryExecStats}: one document of statistics about the collection,
// replacing the input. It must come first.
type collStatsStage struct{ spec bsoncore.Document }

func parseCollStats(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeCollStatsNotObject, "$collStats must take a nested object but found: $collStats: %s", printValue(arg))
	}
	if err := firstStage("$collStats", pc); err != nil {
		return nil, err
	}
	elems, _ := arg.Document().Elements()
	for _, e := range elems {
		switch e.Key() {
		case "latencyStats", "storageStats", "count", "queryExecStats":
			if e.Value().Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", e.Key(), typeName(e.Value()))
			}
		default:
			return nil, errorf(codeCollStatsUnknownArg, "BSON field '$collStats.%s' is an unknown field.", e.Key())
		}
	}
	return &collStatsStage{spec: arg.Document()}, nil
}

func (s *collStatsStage) open(rc *runContext, in Source) (Source, error) {
	return statsSource(in, func() ([]bsoncore.Document, error) {
		if rc.opts.Stats == nil {
			return nil, mongoerr.New(mongoerr.CommandNotSupported, "$collStats is not available here")
		}
		d, err := rc.opts.Stats.CollStats(rc.ctx, s.spec)
		if err != nil {
			return nil, err
		}
		return []bsoncore.Document{d}, nil
	}), nil
}

// firstStage refuses a reporting stage that is not the pipeline's first.
func firstStage(name string, pc *parseContext) error {
	if pc.index != 0 || pc.inFacet || pc.inLookup {
		return errorf(codeStageNotFirst, "%s is only valid as the first stage in a pipeline", name)
	}
	return nil
}

// statsSource yields the documents load returns, loading them at the first
// Next; the input (a collection scan the execution layer opened) is unread.
func statsSource(in Source, load func() ([]bsoncore.Document, error)) Source {
	var docs []bsoncore.Document
	loaded := false
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if !loaded {
			loaded = true
			var err error
			if docs, err = load(); err != nil {
				return nil, err
			}
		}
		if len(docs) == 0 {
			return nil, nil
		}
		d := docs[0]
		docs = docs[1:]
		return d, nil
	}}
}
