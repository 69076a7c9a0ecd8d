package planner

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/fts"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// The text plan answers a filter with $text, as MongoDB's classic engine
// does: one IXSCAN of the text index per term of the search (backward over
// the term's keys, within the equality prefix of a compound text index),
// their union (TEXT_OR, summing each document's term scores, when the
// query reads textScore; OR otherwise), FETCH with the rest of the filter,
// and TEXT_MATCH for what keys cannot decide: negated terms, phrases, and
// case or diacritic sensitive terms. A $text query has no other plan.

// TextScoreField is the trailing field in which a text plan carries each
// document's score when the query reads it ({$meta: "textScore"} in the
// projection or sort); no stored document can have it (field names cannot
// start with '$'), and the projection or a final stage removes it.
const TextScoreField = query.TextScoreField

// textCandidate plans q's $text: the text plan when every match goes
// through it, or, under $or, an OR of the text plan and one index scan
// per other branch (orCandidate), as MongoDB plans it.
func (pl *planning) textCandidate(ts *query.TextSearch, nested bool) (*candidate, error) {
	q := pl.q
	tp, err := pl.prepareText(ts, nested)
	if err != nil {
		return nil, err
	}
	if nested {
		if needsScore(q) {
			// Not yet: the OR would have to carry the text branch's
			// scores; refused as every not-yet option is (72).
			return nil, mongoerr.New(mongoerr.InvalidOptions, "textScore of a $text under $or is not supported by Cairn yet")
		}
		c := pl.orCandidate(tp)
		if c == nil {
			return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
		}
		return c, nil
	}
	match, err := tp.subplan(pl.a, needsScore(q))
	if err != nil {
		return nil, err
	}
	tree := q.Filter.Tree()
	keep := make([]bool, len(tree))
	any := false
	for i, c := range tree {
		keep[i] = !(c.Kind == query.OpaqueClause && c.Key == "$text")
		any = any || keep[i]
	}
	if any {
		f := match.in().(*fetch)
		if f.filter, f.rawFilter, err = q.Filter.Select(keep); err != nil {
			return nil, err
		}
		// A $text under a top-level $and stays in the rest: it decides
		// it again, as the whole filter does.
		f.filter.BindText(tp.eval)
	}
	c := pl.finish(match, false)
	c.index = tp.ix.name
	c.fetchCnt = 1
	return c, nil
}

// textPlan is a $text search read against the collection's text index.
type textPlan struct {
	ix   *indexRef
	spec *fts.Spec
	q    *fts.Query
	eval func(doc []byte) (bool, error) // the whole $text, for the filter
}

// prepareText finds the text index, parses the search in its language and
// binds the filter's $text to it (query.Filter.BindText).
func (pl *planning) prepareText(ts *query.TextSearch, nested bool) (*textPlan, error) {
	q := pl.q
	var ix *indexRef
	for _, r := range pl.ixs {
		if r.spec.IsText() {
			ix = r
		}
	}
	if ix == nil {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	if q.Hint.Type != 0 && !(q.Hint.Type == bsoncore.TypeString && q.Hint.StringValue() == ix.name) {
		return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
	}
	if nested {
		ts = q.Filter.AnyText()
	}
	spec := ix.spec.Text()
	fq, err := spec.Search(ts.Search, ts.Language, fts.Sensitivity{Case: ts.CaseSensitive, Diacritic: ts.DiacriticSensitive})
	if err != nil {
		return nil, err
	}
	tp := &textPlan{ix: ix, spec: spec, q: fq}
	tp.eval = func(doc []byte) (bool, error) { return fq.Matches(spec, doc, true) }
	q.Filter.BindText(tp.eval)
	return tp, nil
}

// subplan is TEXT_MATCH over FETCH (no filter yet) over TEXT_OR (scores)
// or OR, over one IXSCAN per term, within the equality prefix a gives a
// compound text index.
func (tp *textPlan) subplan(a *analysis, scores bool) (*textMatch, error) {
	ix := tp.ix
	var prefix []byte
	prefixDoc := bsoncore.NewDocumentBuilder()
	for i := 0; i < ix.spec.TextPrefix(); i++ {
		f := ix.spec.KeyPattern[i]
		o := fieldOIL(a.conds[f.Path], ix.fieldMultikey(i))
		if !singlePoint(o) {
			return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)")
		}
		v := o[0].Lo
		prefix = encodePart(prefix, v, f.Kind == index.Descending, nil) // text indexes take no collation (index.ParseSpec)
		prefixDoc.AppendValue(f.Path, v)
	}
	var scans []stage
	for _, t := range tp.q.BoundsTerms {
		lo := keystring.Append(append([]byte(nil), prefix...), bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, t)})
		scans = append(scans, &textScan{ix: ix, rng: engine.KeyRange{Lo: lo, Hi: prefixEnd(lo)}, scorePart: ix.spec.TextPrefix() + 1})
	}
	union := &textOr{kids: scans, scores: scores}
	return &textMatch{oneInput: input(&fetch{oneInput: input(union)}),
		q: tp.q, spec: tp.spec, ix: ix, prefix: prefixDoc.Build(), scores: scores}, nil
}

// needsScore reports whether q reads the text score.
func needsScore(q *Query) bool {
	return q.TextScore || query.MentionsTextScore(q.RawProj) || query.MentionsTextScore(q.RawSort)
}

// textScan reads the keys of one term (MongoDB's IXSCAN under TEXT_OR),
// each with its score.
type textScan struct {
	stageStats
	ix        *indexRef
	rng       engine.KeyRange
	scorePart int // the key part holding the score
	cur       *engine.Cursor
	keys      int64
	m         member
}

func (s *textScan) work(x *execCtx) (*member, state, error) {
	if s.cur == nil {
		c, err := x.r.Entries(s.ix.name, s.rng, true)
		if err != nil {
			return nil, isEOF, err
		}
		s.cur = c
	}
	if !s.cur.Next() {
		return nil, isEOF, nil
	}
	key, rid, err := s.cur.IndexKey()
	if err != nil {
		return nil, isEOF, err
	}
	s.keys++
	vals, _, err := s.ix.spec.DecodeKey(key)
	if err != nil {
		return nil, isEOF, err
	}
	score, _ := bsonx.AsFloat64(vals[s.scorePart]) // keys decode numbers in their narrowest type: 1.0 is 1
	s.m = member{rid: rid, score: score}
	return &s.m, advanced, nil
}

func (s *textScan) children() []stage { return nil }
func (s *textScan) close() error {
	if s.cur == nil {
		return nil
	}
	return s.cur.Close()
}

func (s *textScan) describe(d *doc, withStats bool) {
	put(d, "stage", "IXSCAN")
	put(d, "keyPattern", bson.Raw(s.ix.spec.Key))
	put(d, "indexName", s.ix.name)
	put(d, "isMultiKey", true)
	put(d, "isUnique", false)
	put(d, "isSparse", false)
	put(d, "isPartial", s.ix.spec.PartialFilterExpression != nil)
	put(d, "indexVersion", int64(s.ix.spec.Version))
	put(d, "direction", "backward")
	put(d, "indexBounds", doc{})
	if withStats {
		addCommon(d, &s.stats)
		put(d, "keysExamined", s.keys)
		put(d, "seeks", int64(1))
		put(d, "dupsTested", int64(0))
		put(d, "dupsDropped", int64(0))
	}
}

// textOr unites the term scans: with scores (TEXT_OR) it reads them all,
// adding up each document's scores, then returns each document once; else
// (OR) it returns each document the first time a scan finds it.
type textOr struct {
	stageStats
	kids   []stage
	scores bool
	seen   map[string]int // rid → position in order
	order  [][]byte
	sums   []float64
	i      int // next child (reading) or next result (returning)
	done   bool
	dups   int64
	m      member
}

func (s *textOr) work(x *execCtx) (*member, state, error) {
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	if !s.done {
		if s.i >= len(s.kids) {
			s.done, s.i = true, 0
			return nil, needTime, nil
		}
		m, st, err := step(x, s.kids[s.i])
		switch {
		case err != nil:
			return nil, isEOF, err
		case st == isEOF:
			s.i++
			return nil, needTime, nil
		case st == needTime:
			return nil, needTime, nil
		}
		if j, ok := s.seen[string(m.rid)]; ok {
			s.sums[j] += m.score
			s.dups++
			return nil, needTime, nil
		}
		rid := append([]byte(nil), m.rid...)
		s.seen[string(rid)] = len(s.order)
		s.order = append(s.order, rid)
		s.sums = append(s.sums, m.score)
		if !s.scores {
			s.m = member{rid: rid}
			return &s.m, advanced, nil
		}
		return nil, needTime, nil
	}
	if !s.scores || s.i >= len(s.order) {
		return nil, isEOF, nil
	}
	s.m = member{rid: s.order[s.i], score: s.sums[s.i]}
	s.i++
	return &s.m, advanced, nil
}

func (s *textOr) children() []stage { return s.kids }
func (s *textOr) close() error      { return nil }
func (s *textOr) describe(d *doc, withStats bool) {
	if s.scores {
		put(d, "stage", "TEXT_OR")
	} else {
		put(d, "stage", "OR")
	}
	if withStats {
		addCommon(d, &s.stats)
		if s.scores {
			put(d, "docsExamined", int64(0))
		} else {
			put(d, "dupsTested", int64(len(s.order))+s.dups)
			put(d, "dupsDropped", s.dups)
		}
	}
}

// textMatch keeps the documents that satisfy the parts of the search the
// keys do not decide (MongoDB's TEXT_MATCH), and appends the score field
// when the query reads it.
type textMatch struct {
	stageStats
	oneInput
	q        *fts.Query
	spec     *fts.Spec
	ix       *indexRef
	prefix   bsoncore.Document
	scores   bool
	rejected int64
	buf      []byte
	m        member
}

func (s *textMatch) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	ok, err := s.q.Matches(s.spec, m.doc, false)
	if err != nil {
		return nil, isEOF, err
	}
	if !ok {
		s.rejected++
		return nil, needTime, nil
	}
	s.m = *m
	if s.scores {
		s.buf = query.AppendTextScore(s.buf[:0], m.doc, m.score)
		s.m.doc = s.buf
	}
	return &s.m, advanced, nil
}

func (s *textMatch) close() error { return nil }
func (s *textMatch) describe(d *doc, withStats bool) {
	put(d, "stage", "TEXT_MATCH")
	put(d, "indexPrefix", bson.Raw(s.prefix))
	put(d, "indexName", s.ix.name)
	put(d, "parsedTextQuery", doc{
		{Key: "terms", Value: strs(s.q.Terms)}, {Key: "negatedTerms", Value: strs(s.q.NegatedTerms)},
		{Key: "phrases", Value: strs(s.q.Phrases)}, {Key: "negatedPhrases", Value: strs(s.q.NegatedPhrases)},
	})
	put(d, "textIndexVersion", int64(3))
	if withStats {
		addCommon(d, &s.stats)
		put(d, "docsRejected", s.rejected)
	}
}

func strs(s []string) bson.A {
	out := bson.A{}
	for _, x := range s {
		out = append(out, x)
	}
	return out
}

// stripScore removes the TextScoreField from the results of a plan that
// sorted by the score but does not project it.
type stripScore struct {
	stageStats
	oneInput
	buf []byte
	m   member
}

func (s *stripScore) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return m, st, err
	}
	s.m = *m
	s.buf, _, _ = query.StripTextScore(s.buf[:0], m.doc)
	s.m.doc = s.buf
	return &s.m, advanced, nil
}

// MongoDB has no such stage (its scores travel beside documents), so the
// tree shows its input in its place: it describes its input and lists the
// input's children as its own (walk, render and closeAll then see the
// input's subtree once); close closes the input itself.
func (s *stripScore) children() []stage               { return s.in().children() }
func (s *stripScore) close() error                    { return s.in().close() }
func (s *stripScore) describe(d *doc, withStats bool) { s.in().describe(d, withStats) }
