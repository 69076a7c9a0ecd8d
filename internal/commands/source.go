package commands

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/planner"
)

// A find (and every other read of a selection) runs as a plan from the
// planner: a tree of stages over one snapshot, pulled one document at a
// time through Source.

// open plans sp and returns the running plan as a Source.
func (sp findSpec) open(eng *engine.Engine) (Source, error) {
	return sp.prepare(eng, false)
}

// prepare plans sp; explain keeps what explain reports (timings, the
// candidates' trial statistics).
func (sp findSpec) prepare(eng *engine.Engine, explain bool) (*planner.Exec, error) {
	r, err := eng.NewReader(sp.ns)
	if err != nil {
		return nil, err
	}
	return planner.Prepare(r, sp.query(), planner.Options{Cache: planCache(eng), NS: sp.ns.String(), Explain: explain})
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
		Deadline: sp.deadline,
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

// sliceSource serves documents already in memory.
type sliceSource struct{ docs []bsoncore.Document }

func (s *sliceSource) Next() (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, nil
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

func (s *sliceSource) Close() error { s.docs = nil; return nil }
