package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/changestream"
)

// ChangeStream is a change stream aggregate as the command layer parsed
// it: what the stream watches and how, and the stages after $changeStream
// (checked by the caller against MongoDB's list of those allowed).
type ChangeStream struct {
	Scope  changestream.Scope
	Spec   changestream.Spec
	Stages []bsoncore.Document
	Opts   agg.Options
}

// ChangeStream opens the stream over the engine's oplog (through the Env's
// Feed, shared by its streams) and runs the later
// stages over its events, under ctx (a cursor's Bound): the Source returns
// the events as those stages leave them, the Stream tells resume tokens.
func (e *Env) ChangeStream(ctx context.Context, c ChangeStream) (*changestream.Stream, agg.Source, error) {
	p, err := agg.Parse(c.Stages, c.Opts)
	if err != nil {
		return nil, nil, err
	}
	stream, err := e.feed.Open(ctx, c.Scope, c.Spec)
	if err != nil {
		return nil, nil, err
	}
	stream.Prefilter(firstMatch(c))
	out, err := p.Run(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	return stream, out, nil
}

// ExplainChangeStream runs a change stream for explain's executionStats
// to the log's end (as MongoDB's explain runs its tailable pipeline to
// EOF) and returns the stream, which read the log itself, not through the
// Feed, and counted what it read (changestream.Stream.Stats).
func (e *Env) ExplainChangeStream(ctx context.Context, c ChangeStream) (*changestream.Stream, error) {
	p, err := agg.Parse(c.Stages, c.Opts)
	if err != nil {
		return nil, err
	}
	stream, err := changestream.Open(ctx, changestream.EngineLog(e.eng), c.Scope, c.Spec)
	if err != nil {
		return nil, err
	}
	stream.Counting()
	out, err := p.Run(ctx, stream)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	for {
		d, err := out.Next()
		if err != nil || d == nil {
			return stream, err
		}
	}
}

// firstMatch is the argument of the stage after $changeStream when it is
// a $match (nil otherwise): the stream does not build the events it would
// drop (changestream.Stream.Prefilter). Not with a collation, which may
// equate strings that differ.
func firstMatch(c ChangeStream) bsoncore.Document {
	if len(c.Stages) == 0 || c.Opts.Collation != nil {
		return nil
	}
	el, err := c.Stages[0].IndexErr(0)
	if err != nil || el.Key() != "$match" {
		return nil
	}
	m, _ := el.Value().DocumentOK()
	return m
}
