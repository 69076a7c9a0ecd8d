package geo

import (
	"math"
	"slices"

	"github.com/golang/geo/r1"
	"github.com/golang/geo/r2"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// Grid is a 2d index's flat grid (MongoDB's GeoHashConverter): the square
// [Min, Max) on both axes cut into 2^Bits cells a side; a point's key is
// its cell's geohash, the x and y cell numbers' bits interleaved (x's
// first), so the cells of a quadtree square are one key range. Keys are
// int64s whose order is the hashes' (the top bit flipped).
//
// Invariant "Grid covering is a superset": every point of a rectangle
// lies in a cell CoverRect returns, so an index scan over it followed by
// the exact predicate returns the collection scan's answer.
type Grid struct {
	Bits     int
	Min, Max float64
}

// DefaultGrid is MongoDB's default 2d index: 26 bits over [-180, 180).
var DefaultGrid = Grid{Bits: 26, Min: -180, Max: 180}

// cell is the cell number of v on one axis; ok is false outside [Min, Max).
func (g Grid) cell(v float64) (uint64, bool) {
	if !(v >= g.Min && v < g.Max) {
		return 0, false
	}
	n := uint64(1) << g.Bits
	c := uint64((v - g.Min) / (g.Max - g.Min) * float64(n))
	return min(c, n-1), true
}

// Key is p's index key; ok is false for a point outside the grid
// (MongoDB's "point not in interval of [min, max)").
func (g Grid) Key(p r2.Point) (int64, bool) {
	x, okx := g.cell(p.X)
	y, oky := g.cell(p.Y)
	if !okx || !oky {
		return 0, false
	}
	return flipKey(interleave(x, y, g.Bits)), true
}

func interleave(x, y uint64, bits int) uint64 {
	var h uint64
	for i := bits - 1; i >= 0; i-- {
		h = h<<2 | (x>>i&1)<<1 | y>>i&1
	}
	return h
}

func flipKey(h uint64) int64 { return int64(h ^ 1<<63) }

// CoverRect is the key ranges of the cells that meet r (clipped to the
// grid), at the level whose cells are about a quarter of r's larger side,
// so a scan has at most a few dozen ranges. Sorted and merged.
func (g Grid) CoverRect(r r2.Rect) []CellRange {
	r = r.Intersection(r2.Rect{X: r1.Interval{Lo: g.Min, Hi: g.Max}, Y: r1.Interval{Lo: g.Min, Hi: g.Max}})
	if r.IsEmpty() {
		return nil
	}
	span := g.Max - g.Min
	side := math.Max(r.X.Length(), r.Y.Length())
	level := g.Bits
	if side > 0 {
		level = int(math.Floor(math.Log2(4 * span / side)))
		level = max(0, min(level, g.Bits))
	}
	shift := uint(g.Bits - level)
	cx0, _ := g.cell(math.Max(r.X.Lo, g.Min))
	cy0, _ := g.cell(math.Max(r.Y.Lo, g.Min))
	cx1, _ := g.cell(math.Min(r.X.Hi, math.Nextafter(g.Max, g.Min)))
	cy1, _ := g.cell(math.Min(r.Y.Hi, math.Nextafter(g.Max, g.Min)))
	var prefixes []uint64
	for x := cx0 >> shift; x <= cx1>>shift; x++ {
		for y := cy0 >> shift; y <= cy1>>shift; y++ {
			prefixes = append(prefixes, interleave(x, y, level))
		}
	}
	slices.Sort(prefixes)
	var out []CellRange
	for _, p := range prefixes {
		lo := p << (2 * shift)
		hi := lo | (uint64(1)<<(2*shift) - 1)
		if n := len(out); n > 0 && unflipKey(out[n-1].Hi)+1 == lo {
			out[n-1].Hi = flipKey(hi)
			continue
		}
		out = append(out, CellRange{Lo: flipKey(lo), Hi: flipKey(hi)})
	}
	return out
}

func unflipKey(k int64) uint64 { return uint64(k) ^ 1<<63 }

// FlatBound is a rectangle in x/y holding every point the region can
// contain, for a 2d index's bounds: the flat shapes' own bounds, a
// $centerSphere cap's latitude/longitude bound in degrees (the whole
// longitude range when it wraps). ok is false for a GeoJSON region, which
// a 2d index does not serve.
func (r *Region) FlatBound() (r2.Rect, bool) {
	switch r.Kind {
	case RegionBox:
		return r.box, true
	case RegionCenter:
		return r2.RectFromCenterSize(r.ctr, r2.Point{X: 2 * r.rad, Y: 2 * r.rad}), true
	case RegionPolygon:
		return r2.RectFromPoints(r.poly...), true
	case RegionCenterSphere:
		return capBound(r.cap), true
	}
	return r2.Rect{}, false
}

// capBound is a cap's bounding rectangle in degrees (x longitude, y
// latitude).
func capBound(c s2.Cap) r2.Rect {
	b := c.RectBound()
	out := r2.Rect{
		X: r1.Interval{Lo: b.Lng.Lo * 180 / math.Pi, Hi: b.Lng.Hi * 180 / math.Pi},
		Y: r1.Interval{Lo: b.Lat.Lo * 180 / math.Pi, Hi: b.Lat.Hi * 180 / math.Pi},
	}
	if b.Lng.IsInverted() || b.Lng.IsFull() {
		out.X = r1.Interval{Lo: -180, Hi: 180}
	}
	return out
}

// FlatBoundWithin is a rectangle in x/y holding every point within
// distance d of the near point, in the query's units: a square in the
// plane, or a cap's bound on the sphere (d in radians, or meters for a
// GeoJSON point).
func (n *Near) FlatBoundWithin(d float64) r2.Rect {
	if !n.Sphere {
		return r2.RectFromCenterSize(n.Flat, r2.Point{X: 2 * d, Y: 2 * d})
	}
	a := n.ToAngle(d)
	if a >= s1.Angle(math.Pi) {
		return r2.Rect{X: r1.Interval{Lo: -180, Hi: 180}, Y: r1.Interval{Lo: -90, Hi: 90}}
	}
	return capBound(s2.CapFromCenterAngle(n.Point, a))
}

// FlatPointDistance is the distance from the near point to a stored
// legacy point p, in the query's units: in the plane, or on the sphere
// with p as longitude/latitude degrees.
func (n *Near) FlatPointDistance(p r2.Point) float64 {
	if !n.Sphere {
		return p.Sub(n.Flat).Norm()
	}
	d := float64(n.Point.Distance(s2.PointFromLatLng(s2.LatLngFromDegrees(p.Y, p.X))))
	if n.Meters {
		d *= EarthRadiusMeters
	}
	return d
}
