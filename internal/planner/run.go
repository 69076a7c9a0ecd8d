package planner

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Trial execution, as MongoDB's multi-planner: every candidate works in
// turn until one returns trialResults results or reaches its end, or each
// has worked trialWorks times (internalQueryPlanEvaluationWorks).
const (
	trialResults = 101
	trialWorks   = 10000
)

// Exec is a chosen plan, ready to run (and, for explain, the plans it beat).
type Exec struct {
	x        *execCtx
	q        *Query
	root     stage
	rejected []stage
	buffered []bsoncore.Document // results the winner returned during its trial
	bi       int
	n        int64
	start    time.Time
	closed   bool

	trialStats []bson.D // allPlansExecution: every candidate's stats at the end of the trial
	fromCache  bool
	ns         string
}

// SetContext makes the plan run under ctx from its next work on, instead
// of the context Open or Prepare was given: a plan a cursor keeps past the
// request that opened it runs under a context of its own (opctx.Bound).
// The point read keeps no context and ignores it (see Open).
func (e *Exec) SetContext(ctx context.Context) {
	if e.x.r != nil {
		e.x.ctx = ctx
		e.x.r.SetContext(ctx) // its prepare conflicts' waits
	}
}

// FromCache reports whether the plan came from the plan cache.
func (e *Exec) FromCache() bool { return e.fromCache }

// Next returns the next result, or nil at the end. The document is valid
// until the next call.
func (e *Exec) Next() (bsoncore.Document, error) {
	if e.bi < len(e.buffered) {
		d := e.buffered[e.bi]
		e.bi++
		e.n++
		return d, nil
	}
	for {
		m, st, err := step(e.x, e.root)
		if err != nil {
			return nil, err
		}
		switch st {
		case advanced:
			e.n++
			return m.doc, nil
		case isEOF:
			return nil, nil
		}
	}
}

// Close releases the plan and its snapshot.
func (e *Exec) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	var first error
	if e.root != nil {
		first = closeAll(e.root)
	}
	for _, s := range e.rejected {
		if err := closeAll(s); err != nil && first == nil {
			first = err
		}
	}
	if e.x.r == nil {
		return first // a point read (Open) holds no snapshot
	}
	if err := e.x.r.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// choose picks the plan to run: the only candidate, the cached winner of
// this query shape, or the best of a trial.
func (e *Exec) choose(cands []*candidate, cache *Cache) error {
	if len(cands) == 1 {
		e.root = cands[0].root
		return nil
	}
	var key, sig string
	if cache != nil {
		key, sig = e.ns+"\x00"+shapeOf(e.q), indexSignature(e.x.r)
		if ent, ok := cache.get(key, sig); ok {
			for i, c := range cands {
				if c.index == ent.index && c.reverse == ent.reverse {
					e.root, e.fromCache = c.root, true
					for j, o := range cands {
						if j != i {
							_ = closeAll(o.root)
						}
					}
					return nil
				}
			}
		}
	}
	limit := int64(trialResults)
	if q := e.q; q.Limit > 0 && q.Limit+q.Skip < limit {
		limit = q.Limit + q.Skip
	}
	type trial struct {
		c    *candidate
		docs []bsoncore.Document
		eof  bool
		err  error
	}
	trials := make([]*trial, len(cands))
	for i, c := range cands {
		trials[i] = &trial{c: c}
	}
	for w := 0; w < trialWorks; w++ {
		done := false
		live := 0
		for _, t := range trials {
			if t.eof || t.err != nil {
				continue
			}
			live++
			m, st, err := step(e.x, t.c.root)
			switch {
			case err != nil:
				t.err = err
			case st == advanced:
				t.docs = append(t.docs, append(bsoncore.Document(nil), m.doc...))
				if int64(len(t.docs)) >= limit {
					done = true
				}
			case st == isEOF:
				t.eof, done = true, true
			}
		}
		if done || live == 0 {
			break
		}
	}
	best, bestScore := -1, 0.0
	for i, t := range trials {
		if t.err != nil {
			continue
		}
		if s := score(t.c, len(t.docs), t.eof); best < 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		// Every plan failed (maxTimeMS, sort memory): report the first
		// failure, after closing the candidates, which Close no longer sees.
		for _, t := range trials {
			_ = closeAll(t.c.root)
		}
		return trials[0].err
	}
	if e.x.timing {
		for _, t := range trials {
			e.trialStats = append(e.trialStats, planStats(t.c.root))
		}
	}
	if cache != nil {
		cache.put(key, cacheEntry{sig: sig, index: trials[best].c.index, reverse: trials[best].c.reverse})
	}
	for i, t := range trials {
		if i == best {
			e.root, e.buffered = t.c.root, t.docs
			continue
		}
		e.rejected = append(e.rejected, t.c.root)
		_ = closeAll(t.c.root)
	}
	return nil
}

// score is MongoDB's plan ranking: productivity (results per work), a
// bonus for reaching the end, and small tie-breakers for plans that need
// no blocking sort and fewer fetches.
func score(c *candidate, results int, eof bool) float64 {
	works := c.root.common().Works
	if works == 0 {
		works = 1
	}
	s := 1 + float64(results)/float64(works)
	eps := min(1/(10*float64(works)), 1e-4)
	if eof {
		s++
	}
	if c.sorted {
		s += eps
	}
	if c.fetchCnt == 0 {
		s += eps
	}
	return s
}

// planStats is one plan's executionStats summary, as allPlansExecution
// lists them.
func planStats(root stage) bson.D {
	keys, docs := examined(root)
	d := bson.D{}
	put(&d, "nReturned", root.common().Advanced)
	put(&d, "executionTimeMillisEstimate", root.common().nanos/1e6)
	put(&d, "totalKeysExamined", keys)
	put(&d, "totalDocsExamined", docs)
	put(&d, "executionStages", render(root, true))
	return d
}

// examined sums the keys and documents a tree examined.
func examined(root stage) (keys, docs int64) {
	walk(root, func(s stage) {
		switch s := s.(type) {
		case *ixScan:
			keys += s.keys
			docs += s.docs
		case *idHack:
			keys += s.keys
			docs += s.docs
		case *collScan:
			docs += s.docs
		case *textScan:
			keys += s.keys
		case *fetch:
			docs += s.docs
		case *geoNearStage:
			keys += s.keys
			docs += s.docs
		case *geoNear2dStage:
			keys += s.keys
			docs += s.docs
		}
	})
	return keys, docs
}

// render is a tree as explain shows it: each stage's document, its input
// as inputStage (or inputStages for OR).
func render(s stage, withStats bool) bson.D {
	d := bson.D{}
	if f, scan, ok := clusteredScan(s); ok {
		describeClustered(&d, f, scan, withStats) // clustered.go
		return d
	}
	s.describe(&d, withStats)
	kids := s.children()
	switch {
	case len(kids) == 1:
		put(&d, "inputStage", render(kids[0], withStats))
	case len(kids) > 1:
		arr := bson.A{}
		for _, k := range kids {
			arr = append(arr, render(k, withStats))
		}
		put(&d, "inputStages", arr)
	}
	return d
}

// addCommon appends the counters every stage reports.
func addCommon(d *doc, st *Stats) {
	put(d, "nReturned", st.Advanced)
	put(d, "executionTimeMillisEstimate", st.nanos/1e6)
	put(d, "works", st.Works)
	put(d, "advanced", st.Advanced)
	put(d, "needTime", st.NeedTime)
	put(d, "needYield", int64(0))
	put(d, "saveState", int64(0))
	put(d, "restoreState", int64(0))
	put(d, "isEOF", boolInt(st.EOF))
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// Drain runs the plan to its end, discarding results (explain's
// executionStats).
func (e *Exec) Drain() error {
	for {
		d, err := e.Next()
		if err != nil || d == nil {
			return err
		}
	}
}

// Returned is how many results Next has returned.
func (e *Exec) Returned() int64 { return e.n }

// Examined is the keys and documents the winning plan examined so far.
func (e *Exec) Examined() (keys, docs int64) { return examined(e.root) }

// WinningPlan renders the chosen plan, with its counters when withStats.
func (e *Exec) WinningPlan(withStats bool) bson.D { return render(e.root, withStats) }

// RejectedPlans renders the plans the trial rejected.
func (e *Exec) RejectedPlans() bson.A {
	out := bson.A{}
	for _, s := range e.rejected {
		out = append(out, render(s, false))
	}
	return out
}

// AllPlansExecution is every candidate's trial statistics (empty when
// there was no trial).
func (e *Exec) AllPlansExecution() bson.A {
	out := bson.A{}
	for _, d := range e.trialStats {
		out = append(out, d)
	}
	return out
}

// QueryPlanner is explain's queryPlanner section.
func (e *Exec) QueryPlanner(ns string) bson.D {
	d := bson.D{}
	put(&d, "namespace", ns)
	put(&d, "indexFilterSet", false)
	put(&d, "parsedQuery", parsedQuery(e.q.Filter.Tree()))
	shape := shapeOf(e.q)
	put(&d, "queryHash", hashHex(shape))
	put(&d, "planCacheKey", hashHex(shape+"\x00"+indexSignature(e.x.r)))
	put(&d, "maxIndexedOrSolutionsReached", false)
	put(&d, "maxIndexedAndSolutionsReached", false)
	put(&d, "maxScansToExplodeReached", false)
	put(&d, "winningPlan", e.WinningPlan(false))
	put(&d, "rejectedPlans", e.RejectedPlans())
	return d
}

// ExecutionStats is explain's executionStats section; the plan must have
// been drained.
func (e *Exec) ExecutionStats(allPlans bool) bson.D {
	keys, docs := e.Examined()
	d := bson.D{}
	put(&d, "executionSuccess", true)
	put(&d, "nReturned", e.n)
	put(&d, "executionTimeMillis", time.Since(e.start).Milliseconds())
	put(&d, "totalKeysExamined", keys)
	put(&d, "totalDocsExamined", docs)
	put(&d, "executionStages", e.WinningPlan(true))
	if allPlans {
		put(&d, "allPlansExecution", e.AllPlansExecution())
	}
	return d
}

// recordAccesses counts, for $indexStats, one access to each index the
// winning plan reads, as MongoDB counts its plan summary's indexesUsed once
// per query: "_id_" for an _id lookup or scan, each index once however
// many ranges or $or branches read it, and nothing for the plans the trial
// rejected. Explain does not count (it executes no query for the client).
func (e *Exec) recordAccesses() {
	var seen []string
	walk(e.root, func(s stage) {
		name := ""
		switch s := s.(type) {
		case *ixScan:
			name = s.ix.name
			if s.ix.isID {
				name = "_id_"
			}
		case *idHack:
			name = "_id_"
		case *textScan:
			name = s.ix.name
		}
		if name != "" && !slices.Contains(seen, name) {
			seen = append(seen, name)
			if e.x.r == nil {
				e.x.eng.RecordIndexAccess(e.x.ns, name)
			} else {
				e.x.r.RecordIndexAccess(name)
			}
		}
	})
}

// IndexesUsed lists the indexes the winning plan scans, in plan order
// (none for a collection scan or an _id lookup).
func (e *Exec) IndexesUsed() []string {
	var out []string
	walk(e.root, func(s stage) {
		if ix, ok := s.(*ixScan); ok {
			out = append(out, ix.ix.name)
		}
	})
	return out
}

// ScansCollection reports whether the chosen plan reads the collection with
// a COLLSCAN anywhere in its tree (callers that only want an index plan,
// such as $lookup's indexed join, check it).
func (e *Exec) ScansCollection() bool {
	found := false
	walk(e.root, func(s stage) {
		if _, ok := s.(*collScan); ok {
			found = true
		}
	})
	return found
}

// PlanSummary is the plan as MongoDB's slow-query log and profiler name it:
// each leaf that reads data, in plan order, joined by ", " — "COLLSCAN",
// "IDHACK", "IXSCAN { a: 1 }" (an index read twice is named once).
func (e *Exec) PlanSummary() string {
	var parts []string
	walk(e.root, func(s stage) {
		var p string
		switch s := s.(type) {
		case *collScan:
			p = "COLLSCAN"
		case *idHack:
			p = "IDHACK"
		case *ixScan:
			p = "IXSCAN " + keyPatternText(s.ix.keyDoc())
		case *geoNearStage:
			p = "GEO_NEAR_2DSPHERE " + keyPatternText(s.ix.keyDoc())
		case *geoNear2dStage:
			p = "GEO_NEAR_2D " + keyPatternText(s.ix.keyDoc())
		default:
			return
		}
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	})
	return strings.Join(parts, ", ")
}

// keyPatternText writes a key pattern as the server's log does: { a: 1, b: -1 }.
func keyPatternText(d bsoncore.Document) string {
	var b strings.Builder
	b.WriteString("{ ")
	els, _ := d.Elements()
	for i, el := range els {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(el.Key())
		b.WriteString(": ")
		switch v := el.Value(); v.Type {
		case bsoncore.TypeInt32:
			b.WriteString(strconv.Itoa(int(v.Int32())))
		case bsoncore.TypeInt64:
			b.WriteString(strconv.FormatInt(v.Int64(), 10))
		case bsoncore.TypeDouble:
			b.WriteString(strconv.FormatFloat(v.Double(), 'g', -1, 64))
		case bsoncore.TypeString:
			b.WriteString(strconv.Quote(v.StringValue()))
		default:
			b.WriteString(v.String())
		}
	}
	b.WriteString(" }")
	return b.String()
}
