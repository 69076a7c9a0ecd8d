package update

import (
	"bytes"
	"context"
	"slices"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Pipeline-style updates: "u" is an array of aggregation stages that turns
// the matched document into its new version. Only the stages that map one
// document to one document may appear ($addFields/$set, $project, $unset,
// $replaceRoot/$replaceWith); any other known stage is InvalidOptions (72),
// checked after the pipeline parses (an unknown stage is 40324), as
// MongoDB's PipelineExecutor does. The pipeline's output then replaces
// the document as a replacement update would: an output without _id keeps
// the old _id, an output with another _id is ImmutableField (66). $$NOW is
// fixed when the update parses (Options.Now), so every document of a
// multi-update sees the same value; the command's let (Options.Vars) and
// the statement's constants c (Options.Constants) are variables too.

func parsePipeline(update bsoncore.Value, opts Options) (*Update, error) {
	if n, ok := bsonx.ValueSize(bsoncore.TypeArray, update.Data); !ok || n != len(update.Data) {
		return nil, failedToParse("update: the update pipeline is not valid BSON")
	}
	raw := slices.Clone(update.Data)
	vals, err := bsoncore.Array(raw).Values()
	if err != nil {
		return nil, failedToParse("update: the update pipeline is not valid BSON")
	}
	stages := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		stages = append(stages, d)
	}
	vars := opts.Vars
	if len(opts.Constants) > 0 {
		vars = make(map[string]bsoncore.Value, len(opts.Vars)+len(opts.Constants))
		for k, v := range opts.Vars {
			vars[k] = v
		}
		for k, v := range opts.Constants {
			vars[k] = v
		}
	}
	p, err := agg.Parse(stages, agg.Options{Now: opts.Now, Vars: vars})
	if err != nil {
		return nil, err
	}
	for _, d := range stages {
		elems, _ := d.Elements()
		if name := elems[0].Key(); !agg.IsUpdateStage(name) {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
		}
	}
	return &Update{kind: KindPipeline, pipeline: p, pipelineRaw: raw}, nil
}

// runPipeline applies the update pipeline to doc and returns the new
// document, built as a replacement of doc by the pipeline's output.
func (u *Update) runPipeline(doc bsoncore.Document, ctx *ApplyContext) (bsoncore.Document, error) {
	// One document through stages that read nothing else: nothing to
	// cancel (the write around it checks its operation's context).
	src, err := u.pipeline.Run(context.Background(), agg.SliceSource([]bsoncore.Document{doc}))
	if err != nil {
		return nil, err
	}
	out, err := agg.ReadAll(src)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, errorf(mongoerr.InternalError, "an update pipeline produced %d documents from one", len(out))
	}
	if bytes.Equal(out[0], doc) {
		return nil, nil
	}
	r := &Update{kind: KindReplacement, replacement: out[0], fromPipeline: true}
	return r.replace(doc, ctx)
}
