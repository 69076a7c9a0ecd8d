package commands

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/planner"
)

// A find (and every other read of a selection) runs as a plan from the
// planner: a tree of stages over one snapshot, pulled one document at a
// time through Source.

// open plans sp and returns the running plan as a Source.
func (sp findSpec) open(ctx context.Context, eng *engine.Engine) (Source, error) {
	if src, ok, err := sp.pointRead(eng); ok || err != nil {
		return src, err
	}
	return sp.prepare(ctx, eng, false)
}

// pointRead answers {_id: v} with one read, as the planner's IDHACK plan
// does (explain shows that plan), without building a plan: the point read
// is the hot path, and a snapshot, a plan tree and a stage per step cost
// more than the read itself. ok is false for any other selection.
func (sp findSpec) pointRead(eng *engine.Engine) (Source, bool, error) {
	if sp.hint.Type != 0 || sp.min != nil || sp.max != nil {
		return nil, false, nil
	}
	id, ok := sp.filter.IDEquality()
	if !ok {
		return nil, false, nil
	}
	eng.RecordIndexAccess(sp.ns, "_id_") // as the IDHACK plan counts
	doc, found, err := eng.Get(nil, sp.ns, id)
	if err != nil || !found || sp.skip > 0 {
		return &oneDoc{}, true, err
	}
	if sp.proj != nil {
		pos := -1
		if sp.positional {
			_, pos = sp.filter.MatchDetails(doc)
		}
		if doc, err = sp.proj.Apply(nil, doc, pos); err != nil {
			return nil, true, err
		}
	}
	return &oneDoc{doc: doc}, true, nil
}

// oneDoc serves at most one document.
type oneDoc struct{ doc bsoncore.Document }

func (s *oneDoc) Next() (bsoncore.Document, error) {
	d := s.doc
	s.doc = nil
	return d, nil
}

func (s *oneDoc) Close() error { s.doc = nil; return nil }

// prepare plans sp; explain keeps what explain reports (timings, the
// candidates' trial statistics) and, as MongoDB's explain, plans afresh:
// it neither reads nor fills the plan cache.
func (sp findSpec) prepare(ctx context.Context, eng *engine.Engine, explain bool) (*planner.Exec, error) {
	r, err := eng.NewReader(sp.ns)
	if err != nil {
		return nil, err
	}
	opts := planner.Options{NS: sp.ns.String(), Explain: explain}
	if !explain {
		opts.Cache = planCache(eng)
	}
	return planner.Prepare(ctx, r, sp.query(), opts)
}

// query is the selection as the planner reads it.
func (sp findSpec) query() *planner.Query {
	return &planner.Query{
		Filter: sp.filter, RawFilter: sp.rawFilter(),
		Sort: sp.sort, RawSort: sp.rawSort,
		Proj: sp.proj, RawProj: sp.rawProj, Positional: sp.positional,
		Skip: sp.skip, Limit: sp.limit,
		Hint: sp.hint, Min: sp.min, Max: sp.max,
		SortMemory: sp.sortMemory, AllowDiskUse: sp.allowDiskUse,
		Count:        sp.countOnly,
		DistinctPath: sp.distinct,
	}
}

// planCaches holds one plan cache per engine (a server has one engine; tests
// open many in one process).
var planCaches sync.Map // *engine.Engine → *planner.Cache

func planCache(eng *engine.Engine) *planner.Cache {
	if c, ok := planCaches.Load(eng); ok {
		return c.(*planner.Cache)
	}
	c, _ := planCaches.LoadOrStore(eng, planner.NewCache())
	return c.(*planner.Cache)
}
