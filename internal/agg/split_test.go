package agg_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/agg/aggtest"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// splitShards is how many shards TestSplitAgrees deals each case's
// documents to.
const splitShards = 3

// TestSplitAgrees runs the whole aggregation corpus as a router would over
// a sharded collection: each case's documents dealt in contiguous blocks
// to three shards (so input order is shard order), the shards' part of
// agg.Split run on each, their outputs merge-sorted or concatenated, and
// the router's part run over them. Every case must meet the expectation
// it states for the whole pipeline.
func TestSplitAgrees(t *testing.T) {
	cases, err := aggtest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	aggtest.Run(t, cases, runSplit, false)
	t.Logf("%d cases: %d ran a shard part, %d merged partial groups, %d merge-sorted", len(cases), splitStats.sharded, splitStats.grouped, splitStats.sorted)
	if splitStats.grouped == 0 || splitStats.sorted == 0 {
		t.Fatal("the corpus exercised no group or sort split")
	}
}

var splitStats struct{ sharded, grouped, sorted int }

func runSplit(c *aggtest.Case) (aggtest.Outcome, error) {
	fail := func(err error) (aggtest.Outcome, error) {
		return aggtest.Outcome{Code: int32(mongoerr.CodeOf(err))}, nil
	}
	if c.Collectionless {
		return runInProcess(c) // no collection, nothing to split
	}
	opts, err := corpusOptions(c)
	if err != nil {
		return fail(err)
	}
	// The router parses the whole pipeline first: its refusals are the
	// router's, before anything reaches a shard.
	if _, err := agg.Parse(c.Pipeline, opts); err != nil {
		return fail(err)
	}
	sp, err := agg.Split(c.Pipeline)
	if err != nil {
		return fail(err)
	}
	shardOpts := opts
	shardOpts.NeedsMerge = sp.NeedsMerge
	if len(sp.Shards) > 0 {
		splitStats.sharded++
	}
	if sp.NeedsMerge {
		splitStats.grouped++
	}
	if sp.SortKey != nil {
		splitStats.sorted++
	}
	var outs []agg.Source
	for k := range splitShards {
		lo, hi := k*len(c.Docs)/splitShards, (k+1)*len(c.Docs)/splitShards
		p, err := agg.Parse(sp.Shards, shardOpts)
		if err != nil {
			return fail(err)
		}
		out, err := p.Run(context.Background(), agg.SliceSource(c.Docs[lo:hi]))
		if err != nil {
			return fail(err)
		}
		docs, err := agg.ReadAll(out)
		if err != nil {
			return fail(err)
		}
		outs = append(outs, agg.SliceSource(docs))
	}
	var merged agg.Source
	if sp.SortKey != nil {
		if merged, err = agg.MergeSortedWith(outs, sp.SortKey, opts.Collation); err != nil {
			return fail(err)
		}
	} else {
		var all []bsoncore.Document
		for _, o := range outs {
			docs, err := agg.ReadAll(o)
			if err != nil {
				return fail(err)
			}
			all = append(all, docs...)
		}
		merged = agg.SliceSource(all)
	}
	p, err := agg.Parse(sp.Merge, opts)
	if err != nil {
		return fail(err)
	}
	out, err := p.Run(context.Background(), merged)
	if err != nil {
		return fail(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil {
		return fail(err)
	}
	return aggtest.Outcome{Docs: docs}, nil
}
