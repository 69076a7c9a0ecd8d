package agg_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/agg/aggtest"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expectations of testdata/*.txt from the engine's outcomes (review the diff)")

// TestCorpus runs the data-driven corpus in testdata against the engine in
// process. The same files run over the wire through aggtest with another
// Runner.
func TestCorpus(t *testing.T) {
	cases, err := aggtest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Errorf("corpus has %d cases; issue 8 asks for at least 300", len(cases))
	}
	aggtest.Run(t, cases, runInProcess, *rewrite)
}

// mapCatalog serves a case's other collections.
type mapCatalog map[string][]bsoncore.Document

func (m mapCatalog) Scan(_ context.Context, _, coll string) (agg.Source, error) {
	return agg.SliceSource(m[coll]), nil
}

// corpusNow is $$NOW in the corpus.
var corpusNow = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// corpusOptions are the Options of case c, as the aggregate command would
// give them.
func corpusOptions(c *aggtest.Case) (agg.Options, error) {
	opts := agg.Options{
		AllowDiskUse: c.Options.AllowDiskUse,
		MaxMemory:    c.Options.MaxMemory,
		Now:          corpusNow,
		DB:           "test",
		Catalog:      mapCatalog(c.Collections),
		Seed:         1,
	}
	if c.Options.Let != nil {
		vars, err := agg.EvalLet(c.Options.Let, corpusNow)
		if err != nil {
			return opts, err
		}
		opts.Vars = vars
	}
	if c.Options.Collation != nil {
		coll, err := collation.Parse(c.Options.Collation)
		if err != nil {
			return opts, err
		}
		opts.Collation = coll
	}
	return opts, nil
}

func runInProcess(c *aggtest.Case) (aggtest.Outcome, error) {
	fail := func(err error) (aggtest.Outcome, error) {
		return aggtest.Outcome{Code: int32(mongoerr.CodeOf(err))}, nil
	}
	opts, err := corpusOptions(c)
	if err != nil {
		return fail(err)
	}
	p, err := agg.Parse(c.Pipeline, opts)
	if err != nil {
		return fail(err)
	}
	var in agg.Source
	if !c.Collectionless {
		in = agg.SliceSource(c.Docs)
	}
	out, err := p.Run(context.Background(), in)
	if err != nil {
		return fail(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil {
		if mongoerr.CodeOf(err) == mongoerr.InternalError {
			return aggtest.Outcome{}, err
		}
		return fail(err)
	}
	return aggtest.Outcome{Docs: docs}, nil
}
