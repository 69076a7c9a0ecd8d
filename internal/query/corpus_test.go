package query_test

import (
	"flag"
	"github.com/cairndb/cairn/internal/collation"
	"testing"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/query/querytest"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expectations of testdata/*.txt from the engine's outcomes (review the diff)")

// TestCorpus runs the data-driven corpus in testdata against the engine in
// process. The same files run over the wire through querytest with another
// Runner.
func TestCorpus(t *testing.T) {
	cases, err := querytest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Errorf("corpus has %d cases; the issue asks for at least 300", len(cases))
	}
	querytest.Run(t, cases, runInProcess, *rewrite)
}

// runInProcess is a collection scan: filter, blocking sort, skip, limit,
// projection, as find does it.
func runInProcess(c *querytest.Case) (querytest.Outcome, error) {
	fail := func(err error) (querytest.Outcome, error) {
		return querytest.Outcome{Code: int32(mongoerr.CodeOf(err))}, nil
	}
	var opts query.Options
	var coll *collation.Collator
	if c.Collation != nil {
		var err error
		if coll, err = collation.Parse(c.Collation); err != nil {
			return fail(err)
		}
		if coll != nil {
			opts.Collation = coll
		}
	}
	f, err := query.ParseWith(c.Filter, opts)
	if err != nil {
		return fail(err)
	}
	var proj *query.Projection
	if c.Projection != nil {
		if proj, err = query.ParseProjection(c.Projection, f); err != nil {
			return fail(err)
		}
	}
	var srt *query.Sort
	if c.Sort != nil {
		if srt, err = query.ParseSort(c.Sort); err != nil {
			return fail(err)
		}
		if coll != nil {
			srt = srt.WithCollation(coll)
		}
	}
	var matched []bsoncore.Document
	for _, d := range c.Docs {
		r, err := f.Exec(d)
		if err != nil {
			return fail(err)
		}
		if r.Matched {
			matched = append(matched, d)
		}
	}
	limit := c.Limit
	if limit < 0 {
		limit = -limit
	}
	if srt != nil && srt.Len() > 0 {
		opts := query.SorterOptions{}
		if limit > 0 {
			opts.Limit = c.Skip + limit
		}
		s := query.NewSorter(srt, opts)
		defer s.Close()
		for _, d := range matched {
			if err := s.Add(d); err != nil {
				return fail(err)
			}
		}
		it := s.Iter()
		matched = nil
		for it.Next() {
			matched = append(matched, it.Doc())
		}
		if err := it.Err(); err != nil {
			return querytest.Outcome{}, err
		}
	}
	if c.Skip > 0 {
		matched = matched[min(int(c.Skip), len(matched)):]
	}
	if limit > 0 && int(limit) < len(matched) {
		matched = matched[:limit]
	}
	var out querytest.Outcome
	for _, d := range matched {
		if proj != nil {
			_, pos := f.MatchDetails(d)
			p, err := proj.Apply(nil, d, pos)
			if err != nil {
				return fail(err)
			}
			d = p
		}
		out.Docs = append(out.Docs, d)
	}
	return out, nil
}
