package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// A find runs as a chain of Sources: a point lookup or a filtered scan, then
// sort, skip/limit and projection. Each stage pulls documents one at a time.

// open builds the chain for sp.
func (sp findSpec) open(eng *engine.Engine) (Source, error) {
	src, _, err := sp.base(eng)
	if err != nil {
		return nil, err
	}
	return sp.wrap(src)
}

// baseKind names how a find reads the collection, in explain's words.
type baseKind string

const (
	stageCollScan baseKind = "COLLSCAN"
	stageIDHack   baseKind = "IDHACK"
	stageIXScan   baseKind = "IXSCAN"
)

// baseInfo says which base stage a find chose, for explain.
type baseInfo struct {
	kind baseKind
	plan planner.Plan
}

// base opens the stage that reads the collection: a point lookup by _id, a
// range of an index, or a collection scan; the last two apply the filter.
func (sp findSpec) base(eng *engine.Engine) (Source, baseInfo, error) {
	if id, ok := sp.filter.IDEquality(); ok {
		doc, found, err := eng.Get(nil, sp.ns, id)
		if err != nil {
			return nil, baseInfo{}, err
		}
		ss := &sliceSource{}
		if found {
			ss.docs = []bsoncore.Document{doc}
		}
		return ss, baseInfo{kind: stageIDHack}, nil
	}
	return sp.scan(eng)
}

// wrap adds sort, skip/limit and projection over a base source.
func (sp findSpec) wrap(src Source) (Source, error) {
	if sp.sort != nil {
		sorted, err := sortSource(src, sp)
		if err != nil {
			return nil, err
		}
		src = sorted
	}
	src = limitSource(src, sp.skip, sp.limit)
	if sp.proj != nil {
		src = &projectSource{src: src, proj: sp.proj, filter: sp.filter, positional: sp.positional}
	}
	return src, nil
}

// scan reads the collection as the plan says: a range of an index, or the
// whole collection; either way each document is checked against the filter.
func (sp findSpec) scan(eng *engine.Engine) (Source, baseInfo, error) {
	plan, err := sp.plan(eng)
	if err != nil {
		return nil, baseInfo{}, err
	}
	if !plan.IsCollScan() {
		is, err := eng.ScanIndex(sp.ns, plan.Index, plan.Lower, plan.Upper)
		if err != nil {
			return nil, baseInfo{}, err
		}
		if is != nil {
			return &indexSource{scan: is, filter: sp.filter, deadline: sp.deadline}, baseInfo{kind: stageIXScan, plan: plan}, nil
		}
	}
	it, err := eng.Scan(sp.ns)
	if err != nil {
		return nil, baseInfo{}, err
	}
	return &scanSource{it: it, filter: sp.filter, deadline: sp.deadline}, baseInfo{kind: stageCollScan}, nil
}

// plan asks the planner, or follows the hint.
func (sp findSpec) plan(eng *engine.Engine) (planner.Plan, error) {
	if sp.hint == naturalHint {
		return planner.Plan{}, nil
	}
	names, specs, err := eng.Indexes(sp.ns)
	if err != nil || len(specs) == 0 {
		return planner.Plan{}, err
	}
	if sp.hint == "" {
		indexNames := make([]string, len(names))
		for i, ix := range names {
			indexNames[i] = ix.Name
		}
		return planner.Choose(sp.rawFilter(), indexNames, specs), nil
	}
	for i, ix := range names {
		if ix.Name == sp.hint {
			return planner.ForIndex(sp.rawFilter(), ix.Name, specs[i]), nil
		}
	}
	return planner.Plan{}, nil
}

// indexSource filters the documents an index range yields.
type indexSource struct {
	scan     *engine.IndexScan
	filter   *query.Filter
	deadline time.Time
	n        int
}

func (s *indexSource) Next() (bsoncore.Document, error) {
	for {
		d := s.scan.Next()
		if d == nil {
			return nil, s.scan.Err()
		}
		s.n++
		if !s.deadline.IsZero() && s.n%deadlineCheckEvery == 0 && time.Now().After(s.deadline) {
			return nil, mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
		}
		r, err := s.filter.Exec(d)
		if err != nil {
			return nil, err
		}
		if r.Matched {
			return d, nil
		}
	}
}

func (s *indexSource) Close() error { return s.scan.Close() }

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

// scanSource filters a collection scan.
type scanSource struct {
	it       *engine.DocIter
	filter   *query.Filter
	deadline time.Time
	n        int
}

// deadlineCheckEvery spaces the clock reads of maxTimeMS.
const deadlineCheckEvery = 256

func (s *scanSource) Next() (bsoncore.Document, error) {
	for s.it.Next() {
		s.n++
		if !s.deadline.IsZero() && s.n%deadlineCheckEvery == 0 && time.Now().After(s.deadline) {
			return nil, mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
		}
		d := s.it.Doc()
		r, err := s.filter.Exec(d)
		if err != nil {
			return nil, err
		}
		if r.Matched {
			return d, nil
		}
	}
	return nil, s.it.Err()
}

func (s *scanSource) Close() error { return s.it.Close() }

// sortSource drains src into a sorter (top-k when a limit is known).
func sortSource(src Source, sp findSpec) (Source, error) {
	defer src.Close()
	limit := int64(0)
	if sp.limit > 0 {
		limit = sp.skip + sp.limit
	}
	sorter := query.NewSorter(sp.sort, query.SorterOptions{Limit: limit, MaxMemory: sp.sortMemory, AllowDiskUse: sp.allowDiskUse})
	for {
		d, err := src.Next()
		if err != nil {
			_ = sorter.Close()
			return nil, err
		}
		if d == nil {
			break
		}
		if err := sorter.Add(d); err != nil {
			_ = sorter.Close()
			return nil, err
		}
	}
	return &sorterSource{sorter: sorter, it: sorter.Iter()}, nil
}

type sorterSource struct {
	sorter *query.Sorter
	it     *query.SortIterator
}

func (s *sorterSource) Next() (bsoncore.Document, error) {
	if s.it.Next() {
		return s.it.Doc(), nil
	}
	return nil, s.it.Err()
}

func (s *sorterSource) Close() error { return s.sorter.Close() }

// skipLimit applies skip and limit (0 = none) to a source.
type skipLimit struct {
	src         Source
	skip, limit int64
	n           int64
}

func limitSource(src Source, skip, limit int64) Source {
	if skip == 0 && limit == 0 {
		return src
	}
	return &skipLimit{src: src, skip: skip, limit: limit}
}

func (s *skipLimit) Next() (bsoncore.Document, error) {
	for s.skip > 0 {
		d, err := s.src.Next()
		if d == nil || err != nil {
			return nil, err
		}
		s.skip--
	}
	if s.limit > 0 && s.n >= s.limit {
		return nil, nil
	}
	d, err := s.src.Next()
	if d != nil {
		s.n++
	}
	return d, err
}

func (s *skipLimit) Close() error { return s.src.Close() }

// projectSource shapes each document with a projection. A positional
// projection needs the array position the filter bound, recomputed here
// because sorting has detached documents from their match.
type projectSource struct {
	src        Source
	proj       *query.Projection
	filter     *query.Filter
	positional bool
	buf        []byte
}

func (p *projectSource) Next() (bsoncore.Document, error) {
	d, err := p.src.Next()
	if d == nil || err != nil {
		return nil, err
	}
	pos := -1
	if p.positional {
		_, pos = p.filter.MatchDetails(d)
	}
	p.buf, err = p.proj.Apply(p.buf[:0], d, pos)
	if err != nil {
		return nil, err
	}
	return p.buf, nil
}

func (p *projectSource) Close() error { return p.src.Close() }
