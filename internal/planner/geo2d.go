package planner

import (
	"math"
	"slices"

	"github.com/golang/geo/r2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/query"
)

// Plans over 2d indexes.
//
// $geoWithin with a legacy shape ($box, $center, $polygon, $centerSphere)
// bounds a "2d" field by the grid cells of the shape's bounding rectangle
// (geo.Grid.CoverRect, invariant "Grid covering is a superset"); FETCH
// applies the exact predicate.
//
// $near and $nearSphere with a legacy point are the GEO_NEAR_2D stage:
// the same expanding search as GEO_NEAR_2DSPHERE, with rings measured in
// the query's units (coordinates in the plane for $near, radians for
// $nearSphere) and each ring scanning the cells of the rectangle around
// its outer circle (geo.Near.FlatBoundWithin). Documents already returned
// or refused are not fetched again; one farther than the ring waits for a
// later one.

// geo2dOIL is the bounds of a 2d field from its conditions: the cells of
// the first legacy-shape $geoWithin; nil when none.
func geo2dOIL(conds []cond, g geo.Grid) OIL {
	for _, c := range conds {
		if c.op != "$geoWithin" && c.op != "$within" {
			continue
		}
		r, _ := geo.ParseWithin(c.v)
		if r == nil {
			continue
		}
		if rect, ok := r.FlatBound(); ok {
			return cellOIL(g.CoverRect(rect))
		}
	}
	return nil
}

// near2dCandidate plans a legacy-point $near or $nearSphere over the first
// 2d index on its path; nil when there is none.
func (pl *planning) near2dCandidate(nc *nearClause) *candidate {
	if nc.near.Meters {
		return nil // a GeoJSON point: 2dsphere only
	}
	for _, ix := range pl.ixs {
		fs := ix.keyFields()
		if len(fs) > 0 && fs[0].Kind == index.Geo2d && fs[0].Path == nc.path {
			st := &geoNear2dStage{ix: ix, near: nc.near, filter: pl.q.Filter, rawFilter: pl.q.RawFilter}
			st.bounds = pl.bounds(ix)
			c := pl.finish(st, false)
			c.index = ix.name
			return c
		}
	}
	return nil
}

// geoNear2dStage is GEO_NEAR_2D (see the comment at the top).
type geoNear2dStage struct {
	stageStats
	ix        *indexRef
	bounds    []OIL // the other fields' bounds; the 2d field's is each ring's
	near      *geo.Near
	filter    *query.Filter
	rawFilter bsoncore.Document

	started      bool
	inner, outer float64 // the current ring, in the query's units
	maxDist      float64
	step         float64
	settled      map[string]bool
	scan         *ixScan
	nearQueue
	keys, docs int64
	rings      int64
}

func (s *geoNear2dStage) start() {
	s.started = true
	s.settled = map[string]bool{}
	g, _ := s.ix.spec.Grid()
	cell := (g.Max - g.Min) / math.Exp2(float64(g.Bits))
	reach := math.Hypot(g.Max-g.Min, g.Max-g.Min) + math.Hypot(s.near.Flat.X-g.Min, s.near.Flat.Y-g.Min)
	if s.near.Sphere {
		cell *= math.Pi / 180
		reach = math.Pi
	}
	s.inner = s.near.Min
	s.maxDist = min(s.near.Max, reach)
	s.step = 4 * cell
	s.outer = min(s.inner+s.step, s.maxDist)
}

func (s *geoNear2dStage) work(x *execCtx) (*member, state, error) {
	if !s.started {
		s.start()
	}
	if m, ok := s.pop(); ok {
		return m, advanced, nil
	}
	if s.inner > s.maxDist || (s.rings > 0 && s.inner >= s.maxDist) {
		return nil, isEOF, nil
	}
	if s.scan == nil {
		g, _ := s.ix.spec.Grid()
		b := slices.Clone(s.bounds)
		b[0] = cellOIL(g.CoverRect(s.near.FlatBoundWithin(s.outer)))
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
		last := s.outer >= s.maxDist
		s.inner = s.outer
		if last {
			s.inner = s.maxDist + 1
		}
		s.step *= 2
		s.outer = min(s.inner+s.step, s.maxDist)
		return nil, needTime, nil
	}
	rid := string(m.rid)
	if s.settled[rid] {
		return nil, needTime, nil
	}
	buf, found, err := x.r.Fetch(nil, m.rid)
	if err != nil {
		return nil, isEOF, err
	}
	if !found {
		return nil, needTime, nil
	}
	s.docs++
	d, ok := s.distance(buf)
	if !ok || d < s.near.Min {
		s.settled[rid] = true
		return nil, needTime, nil
	}
	if d > s.outer {
		return nil, needTime, nil // a later ring's
	}
	s.settled[rid] = true
	r, err := s.filter.Exec(buf)
	if err != nil {
		return nil, isEOF, err
	}
	if r.Matched && d <= s.near.Max {
		s.pending = append(s.pending, nearResult{dist: d, rid: []byte(rid), doc: buf})
	}
	return nil, needTime, nil
}

// distance is the document's distance from the near point: to the
// nearest of the pairs at the 2d path.
func (s *geoNear2dStage) distance(doc bsoncore.Document) (float64, bool) {
	best, found := math.Inf(1), false
	for _, v := range geo.ValuesAt(doc, s.ix.keyFields()[0].Parts) {
		for _, p := range legacyPoints(v) {
			if d := s.near.FlatPointDistance(p); d < best {
				best, found = d, true
			}
		}
	}
	return best, found
}

// legacyPoints are the pairs of a 2d field's value: one pair, or an array
// of them.
func legacyPoints(v bsoncore.Value) []r2.Point {
	if p, ok := geo.ParseFlat(v); ok {
		return []r2.Point{p}
	}
	if v.Type != bsoncore.TypeArray {
		return nil
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	var out []r2.Point
	for _, x := range vals {
		if p, ok := geo.ParseFlat(x); ok {
			out = append(out, p)
		}
	}
	return out
}

func (s *geoNear2dStage) children() []stage { return nil }
func (s *geoNear2dStage) close() error {
	if s.scan != nil {
		return s.scan.close()
	}
	return nil
}

func (s *geoNear2dStage) describe(d *doc, withStats bool) {
	put(d, "stage", "GEO_NEAR_2D")
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
