package geo

import (
	"slices"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// IndexParams are a 2dsphere index's covering parameters (MongoDB's
// S2IndexingParams for index version 3).
type IndexParams struct {
	// CoarsestLevel and FinestLevel bound the levels of the cells a
	// geometry is covered with (coarsestIndexedLevel, finestIndexedLevel).
	CoarsestLevel, FinestLevel int
	// MaxCells bounds the cells of one geometry's covering.
	MaxCells int
}

// DefaultParams are MongoDB's defaults: cells no coarser than the level
// whose average edge is closest to 100 km, no finer than level 23, at most
// 50 cells per geometry.
var DefaultParams = IndexParams{
	CoarsestLevel: s2.AvgEdgeMetric.ClosestLevel(100 * 1000 / EarthRadiusMeters),
	FinestLevel:   23,
	MaxCells:      50,
}

// queryMaxCells bounds the cells of a query region's covering: fewer, so
// that the scan has few ranges (MongoDB uses the same number).
const queryMaxCells = 20

// Covering is the cells a geometry's index keys name: a point's cell at
// the finest level, and for lines and polygons S2's covering within the
// index's levels. Each cell is an index key (the cell id as a signed
// int64, as MongoDB stores it).
func (g *Geometry) Covering(p IndexParams) []s2.CellID {
	var out []s2.CellID
	rc := &s2.RegionCoverer{MinLevel: p.CoarsestLevel, MaxLevel: p.FinestLevel, MaxCells: p.MaxCells}
	for i := range g.shapes {
		out = g.shapes[i].cover(out, rc, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cover appends the cells covering s: a point's cell at the finest level,
// S2's covering of a line or polygon.
func (s *shape) cover(dst []s2.CellID, rc *s2.RegionCoverer, p IndexParams) []s2.CellID {
	switch s.kind {
	case shPoint:
		return append(dst, s2.CellFromPoint(s.pt).ID().Parent(p.FinestLevel))
	case shLine:
		return append(dst, rc.Covering(s.line)...)
	}
	return append(dst, rc.Covering(s.poly)...)
}

// CellRange is a range of index keys, as signed cell ids, inclusive.
type CellRange struct{ Lo, Hi int64 }

// QueryCells is the key ranges an index scan reads for a region: each cell
// of the region's covering as the range of its descendants, and each of
// their ancestors down to the coarsest indexed level as a single key (a
// geometry covered by a coarser cell). Sorted and merged.
func (r *Region) QueryCells(p IndexParams) []CellRange {
	rc := queryCoverer(p)
	var cov s2.CellUnion
	switch r.Kind {
	case RegionCenterSphere:
		cov = rc.Covering(r.cap)
	case RegionGeometry:
		for i := range r.geom.shapes {
			cov = r.geom.shapes[i].cover(cov, rc, p)
		}
	default:
		return []CellRange{{Lo: minInt64, Hi: maxInt64}}
	}
	return cellRanges(cov, p)
}

// RingCells is the key ranges of a ring of the $near search: the cells
// covering the cap out to outer, less the cells wholly inside the cap out
// to inner. Every geometry within the ring has a key there (or in an
// ancestor); one with a key only inside the inner cap comes within inner
// of the center, so an earlier ring found it.
func RingCells(center s2.Point, inner, outer s1.Angle, p IndexParams) []CellRange {
	rc := queryCoverer(p)
	cov := rc.Covering(s2.CapFromCenterAngle(center, outer))
	if inner > 0 {
		in := rc.InteriorCovering(s2.CapFromCenterAngle(center, inner))
		cov.Normalize()
		in.Normalize()
		cov = s2.CellUnionFromDifference(cov, in)
	}
	return cellRanges(cov, p)
}

// queryCoverer covers query regions. It has no minimum level: a cell
// coarser than the index's coarsest level scans the range of its
// descendants, which holds every key under it, where forcing the minimum
// would split a large region into thousands of cells.
func queryCoverer(p IndexParams) *s2.RegionCoverer {
	return &s2.RegionCoverer{MaxLevel: p.FinestLevel, MaxCells: queryMaxCells}
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

func cellRanges(cov s2.CellUnion, p IndexParams) []CellRange {
	var out []CellRange
	for _, c := range cov {
		out = append(out, CellRange{int64(c.RangeMin()), int64(c.RangeMax())})
		for l := c.Level() - 1; l >= p.CoarsestLevel; l-- {
			a := int64(c.Parent(l))
			out = append(out, CellRange{a, a})
		}
	}
	slices.SortFunc(out, func(a, b CellRange) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	merged := out[:0]
	for _, c := range out {
		if n := len(merged); n > 0 && c.Lo <= merged[n-1].Hi {
			merged[n-1].Hi = max(merged[n-1].Hi, c.Hi)
			continue
		}
		merged = append(merged, c)
	}
	return merged
}

// Key is the index key of a cell: its id as a signed int64.
func Key(c s2.CellID) int64 { return int64(c) }

// AvgEdge is the average edge of an S2 cell at a level, in radians.
func AvgEdge(level int) float64 { return s2.AvgEdgeMetric.Value(level) }
