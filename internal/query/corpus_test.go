package query_test

import (
	"flag"
	"github.com/cairndb/cairn/internal/collation"
	"testing"

	"github.com/cairndb/cairn/internal/fts"
	"github.com/cairndb/cairn/internal/index"
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
	score, err := textOracle(c, f)
	if err != nil {
		return fail(err)
	}
	var matched []bsoncore.Document
	for _, d := range c.Docs {
		r, err := f.Exec(d)
		if err != nil {
			return fail(err)
		}
		if r.Matched {
			if score != nil {
				d = query.AppendTextScore(nil, d, score(d))
			}
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
		if score != nil && proj == nil {
			d, _, _ = query.StripTextScore(nil, d)
		}
		out.Docs = append(out.Docs, d)
	}
	return out, nil
}

// textOracle decides a case's $text by brute force, the collection scan's
// way, from the text index among the case's indexes: it binds the filter's
// $text to the search read through the index's specification, and, when
// the find reads {$meta: "textScore"}, returns each matching document's
// score (the sum of its scores of the search's terms, as a text index
// holds them). What the planner's text plan returns over the wire must be
// the same.
func textOracle(c *querytest.Case, f *query.Filter) (func(bsoncore.Document) float64, error) {
	reads := query.MentionsTextScore(c.Projection) || query.MentionsTextScore(c.Sort)
	ts := f.AnyText()
	if ts == nil {
		if reads {
			return nil, mongoerr.New(mongoerr.TextScoreUnavailable, "query requires text score metadata, but it is not available")
		}
		return nil, nil
	}
	var spec *fts.Spec
	for _, raw := range c.Indexes {
		s, err := index.ParseSpec(raw)
		if err != nil {
			return nil, err
		}
		if s.IsText() {
			spec = s.Text()
		}
	}
	if spec == nil {
		return nil, nil // $text matches with IndexNotFound
	}
	q, err := spec.Search(ts.Search, ts.Language, fts.Sensitivity{Case: ts.CaseSensitive, Diacritic: ts.DiacriticSensitive})
	if err != nil {
		return nil, err
	}
	f.BindText(func(doc []byte) (bool, error) { return q.Matches(spec, doc, true) })
	if !reads {
		return nil, nil
	}
	return func(d bsoncore.Document) float64 {
		scores, _ := spec.Scores(d)
		sum := 0.0
		for _, t := range q.BoundsTerms {
			sum += scores[t]
		}
		return sum
	}, nil
}
