package planner

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/golang/geo/s1"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// Geospatial plans over 2dsphere indexes.
//
// $geoWithin and $geoIntersects bound a "2dsphere" field by the S2 cells
// of the region (geo.Region.QueryCells): each covering cell as the range of
// its descendants, each of their ancestors as one key, printed as int64
// intervals the way MongoDB's explain prints GEO bounds. The bounds are a
// superset (geo's covering invariant), never exact: FETCH applies the
// predicate to every document. A 2dsphere index is sparse on its geo
// fields, so it is a candidate only when a geo field is bounded.
//
// $near and $nearSphere are the GEO_NEAR_2DSPHERE stage: an expanding
// annulus search. Each ring scans the index over the cells of the cap out
// to the ring's outer radius less the cells wholly inside the earlier
// rings (geo.RingCells; the other fields' bounds as usual), fetches
// the documents not yet settled, measures their distance (geo.Distance,
// the nearest point of the nearest geometry at the path), and returns, in
// distance order, those whose distance falls in the ring and that match
// the filter; the next ring doubles its width. A document farther than
// the ring waits for a later one. So results come in distance order and
// each once. A query with $near and no 2dsphere index on its path is
// NoQueryExecutionPlans (291), as MongoDB answers; a legacy-pair $near
// (flat distances) is served by a 2d index (geo2d.go).

// geoOIL is the bounds of a 2dsphere field from its conditions: the cells
// of the first spherical $geoWithin or $geoIntersects; nil when none.
func geoOIL(conds []cond, p geo.IndexParams) OIL {
	for _, c := range conds {
		var r *geo.Region
		switch c.op {
		case "$geoWithin", "$within":
			r, _ = geo.ParseWithin(c.v)
		case "$geoIntersects":
			r, _ = geo.ParseIntersects(c.v)
		}
		if r == nil || r.IsFlat() {
			continue
		}
		return cellOIL(r.QueryCells(p))
	}
	return nil
}

// cellOIL is key ranges of cells as intervals of int64s.
func cellOIL(rs []geo.CellRange) OIL {
	o := make(OIL, 0, len(rs))
	for _, r := range rs {
		o = append(o, Interval{Lo: int64Value(r.Lo), Hi: int64Value(r.Hi), LoIncl: true, HiIncl: true})
	}
	return o
}

func int64Value(n int64) bsoncore.Value {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(n))
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: b}
}

// geoBounded reports whether a 2dsphere index has a bounded geo field
// (its only use: the index holds no key for documents without geometry).
func geoBounded(ix *indexRef, bounds []OIL) bool {
	for i, f := range ix.keyFields() {
		if (f.Kind == index.Geo2dsphere || f.Kind == index.Geo2d) && !bounds[i].IsFull() {
			return true
		}
	}
	return false
}

// nearClause is the $near or $nearSphere of a filter.
type nearClause struct {
	path string
	near *geo.Near
}

// findNear finds the filter's $near/$nearSphere: nil when none. One at
// the top level (or under a top-level $and) is allowed; one anywhere else,
// or two, is BadValue, as MongoDB says.
func findNear(f *query.Filter) (*nearClause, error) {
	c := f.Tree()
	var top []nearClause
	var err error
	var walkTop func(c query.Conjunction)
	walkTop = func(c query.Conjunction) {
		for i := range c {
			cl := &c[i]
			switch cl.Kind {
			case query.AndClause:
				for _, b := range cl.Branches {
					walkTop(b)
				}
			case query.PathClause:
				for _, op := range cl.Ops {
					if op.Name == "$near" || op.Name == "$nearSphere" {
						n, e := query.ParseNear(op.Name, op.Value, cl.Value)
						if e != nil && err == nil {
							err = e
						}
						top = append(top, nearClause{path: cl.Key, near: n})
					}
				}
			}
		}
	}
	walkTop(c)
	if err != nil {
		return nil, err
	}
	if total := f.NearCount(); total > len(top) {
		return nil, mongoerr.New(mongoerr.BadValue, "geoNear must be top-level expr")
	}
	switch len(top) {
	case 0:
		return nil, nil
	case 1:
		return &top[0], nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "Too many geoNear expressions")
}

// nearCandidate plans a $near query: the GEO_NEAR_2DSPHERE stage over the
// first 2dsphere index with a geo field at the path.
func (pl *planning) nearCandidate(nc *nearClause) (*candidate, error) {
	if nc.near.Sphere {
		for _, ix := range pl.ixs {
			for i, f := range ix.keyFields() {
				if f.Kind == index.Geo2dsphere && f.Path == nc.path {
					st := &geoNearStage{ix: ix, field: i, path: nc.path, near: nc.near, filter: pl.q.Filter, rawFilter: pl.q.RawFilter}
					st.bounds = pl.bounds(ix)
					c := pl.finish(st, false)
					c.index = ix.name
					return c, nil
				}
			}
		}
	}
	if c := pl.near2dCandidate(nc); c != nil { // geo2d.go
		return c, nil
	}
	return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: unable to find index for $geoNear query")
}

// geoNearStage is GEO_NEAR_2DSPHERE (see the comment at the top).
type geoNearStage struct {
	stageStats
	ix        *indexRef
	field     int   // the geo field's position in the key pattern
	bounds    []OIL // the other fields' bounds; the geo field's is each ring's
	path      string
	near      *geo.Near
	filter    *query.Filter
	rawFilter bsoncore.Document

	started      bool
	inner, outer s1.Angle // the current ring
	ringInner    s1.Angle // what earlier rings scanned: their largest outer
	maxAngle     s1.Angle
	step         s1.Angle
	settled      map[string]bool // returned, or failed the filter: never again
	scan         *ixScan
	nearQueue
	keys, docs int64
	rings      int64
	fetchBuf   []byte
}

type nearResult struct {
	dist float64
	rid  []byte
	doc  bsoncore.Document
}

// nearQueue holds a ring search's results (GEO_NEAR_2DSPHERE and
// GEO_NEAR_2D): a ring's while it is scanned, then, sorted, the ones it
// returns nearest first.
type nearQueue struct {
	pending  []nearResult // the ring's results, while it is scanned
	buf      []nearResult // the last ring's results, farthest first
	m        member
	lastDist float64 // the distance of the result returned last
}

// pop returns the nearest result of the last ring, if one is left.
func (q *nearQueue) pop() (*member, bool) {
	n := len(q.buf)
	if n == 0 {
		return nil, false
	}
	r := q.buf[n-1]
	q.buf = q.buf[:n-1]
	q.lastDist = r.dist
	q.m = member{rid: r.rid, doc: r.doc}
	return &q.m, true
}

// ringDone makes the ring's results the ones to return, nearest last so
// that they pop from the end.
func (q *nearQueue) ringDone() {
	q.buf, q.pending = q.pending, q.buf[:0]
	slices.SortStableFunc(q.buf, func(a, b nearResult) int {
		switch {
		case a.dist > b.dist:
			return -1
		case a.dist < b.dist:
			return 1
		}
		return 0
	})
}

func (s *geoNearStage) start() {
	s.started = true
	s.settled = map[string]bool{}
	s.inner = s.near.ToAngle(s.near.Min)
	s.maxAngle = min(s.near.ToAngle(s.near.Max), s1.Angle(math.Pi))
	// The first ring: a few cells of the finest indexed level.
	s.step = s1.Angle(4 * geoAvgEdge(s.ix.spec.GeoParams().FinestLevel))
	s.outer = min(s.inner+s.step, s.maxAngle)
}

func (s *geoNearStage) work(x *execCtx) (*member, state, error) {
	if !s.started {
		s.start()
	}
	if m, ok := s.pop(); ok {
		return m, advanced, nil
	}
	if s.inner > s.maxAngle || (s.rings > 0 && s.inner >= s.maxAngle) {
		return nil, isEOF, nil
	}
	if s.scan == nil {
		b := slices.Clone(s.bounds)
		b[s.field] = cellOIL(geo.RingCells(s.near.Point, s.ringInner, s.outer, s.ix.spec.GeoParams()))
		s.scan = newIXScan(s.ix, b, false)
		s.rings++
	}
	m, st, err := s.scan.work(x)
	if err != nil {
		return nil, isEOF, err
	}
	switch st {
	case needTime:
		return nil, needTime, nil
	case isEOF:
		s.keys += s.scan.keys
		if err := s.scan.close(); err != nil {
			return nil, isEOF, err
		}
		s.scan = nil
		s.ringDone()
		last := s.outer >= s.maxAngle
		s.ringInner = s.outer
		s.inner = s.outer
		if last {
			s.inner = s.maxAngle + 1
		}
		s.step *= 2
		s.outer = min(s.inner+s.step, s.maxAngle)
		return nil, needTime, nil
	}
	if s.settled[string(m.rid)] {
		return nil, needTime, nil
	}
	rid := string(m.rid)
	buf, found, err := x.r.Fetch(nil, m.rid)
	if err != nil {
		return nil, isEOF, err
	}
	if !found {
		return nil, needTime, nil
	}
	s.docs++
	d, ok := s.distance(buf)
	if !ok {
		s.settled[rid] = true
		return nil, needTime, nil
	}
	if s.near.ToAngle(d) > s.outer {
		return nil, needTime, nil // a later ring's
	}
	s.settled[rid] = true
	r, err := s.filter.Exec(buf)
	if err != nil {
		return nil, isEOF, err
	}
	if r.Matched {
		s.pending = append(s.pending, nearResult{dist: d, rid: []byte(rid), doc: buf})
	}
	return nil, needTime, nil
}

// distance is the document's distance from the near point in the query's
// units: to the nearest geometry at the path.
func (s *geoNearStage) distance(doc bsoncore.Document) (float64, bool) {
	best, found := math.Inf(1), false
	for _, v := range geo.ValuesAt(doc, s.ix.keyFields()[s.field].Parts) {
		g, ok, err := geo.Parse(v)
		if !ok || err != nil {
			continue
		}
		if d, ok := s.near.DistanceTo(g); ok && d < best {
			best, found = d, true
		}
	}
	return best, found
}

// geoAvgEdge is the average edge of an S2 cell at a level, in radians.
func geoAvgEdge(level int) float64 { return geo.AvgEdge(level) }

// NearDistance is the distance of the last result of a $near plan, in
// the query's units ($geoNear's distanceField); false for other plans.
func (e *Exec) NearDistance() (float64, bool) {
	var d float64
	found := false
	walk(e.root, func(s stage) {
		switch g := s.(type) {
		case *geoNearStage:
			d, found = g.lastDist, true
		case *geoNear2dStage:
			d, found = g.lastDist, true
		}
	})
	return d, found
}

func (s *geoNearStage) children() []stage { return nil }
func (s *geoNearStage) close() error {
	if s.scan != nil {
		return s.scan.close()
	}
	return nil
}

func (s *geoNearStage) describe(d *doc, withStats bool) {
	put(d, "stage", "GEO_NEAR_2DSPHERE")
	put(d, "keyPattern", bson.Raw(s.ix.keyDoc()))
	put(d, "indexName", s.ix.name)
	put(d, "indexVersion", int32(2))
	if len(s.rawFilter) > 5 {
		put(d, "filter", bson.Raw(s.rawFilter))
	}
	if withStats {
		addCommon(d, &s.stats)
		put(d, "searchIntervals", s.rings)
		put(d, "keysExamined", s.keys)
		put(d, "docsExamined", s.docs)
	}
}
