package geo

import (
	"math"

	"github.com/golang/geo/r2"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// EarthRadiusMeters is MongoDB's radius of the earth (kRadiusOfEarthInMeters):
// distances in meters are S2 angles times it.
const EarthRadiusMeters = 6378.1 * 1000

// RegionKind says what a query region is.
type RegionKind uint8

// The kinds of query region.
const (
	// RegionGeometry is a GeoJSON $geometry on the sphere.
	RegionGeometry RegionKind = iota + 1
	// RegionCenterSphere is $centerSphere: a cap, radius in radians.
	RegionCenterSphere
	// RegionBox, RegionCenter and RegionPolygon are the flat legacy
	// shapes $box, $center and $polygon over x/y coordinates.
	RegionBox
	RegionCenter
	RegionPolygon
)

// Region is a parsed $geoWithin or $geoIntersects operand.
type Region struct {
	Kind RegionKind
	geom *Geometry // RegionGeometry
	cap  s2.Cap    // RegionCenterSphere
	box  r2.Rect   // RegionBox
	ctr  r2.Point  // RegionCenter
	rad  float64   // RegionCenter
	poly []r2.Point
}

// IsFlat reports a legacy flat shape, which only a 2d index serves.
func (r *Region) IsFlat() bool { return r.Kind >= RegionBox }

// ParseWithin reads $geoWithin's operand: {$geometry: Polygon or
// MultiPolygon}, {$box: [[x1, y1], [x2, y2]]}, {$polygon: [[x, y], …]},
// {$center: [[x, y], r]} or {$centerSphere: [[lng, lat], radians]}.
func ParseWithin(v bsoncore.Value) (*Region, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf("$geoWithin not supported with provided geometry: %s", v)
	}
	elems, _ := v.Document().Elements()
	if len(elems) == 0 {
		return nil, errorf("$geoWithin not supported with provided geometry: %s", v)
	}
	e := elems[0]
	arg := e.Value()
	switch e.Key() {
	case "$geometry":
		g, err := geometryArg(arg)
		if err != nil {
			return nil, err
		}
		if g.Kind != Polygon && g.Kind != MultiPolygon {
			return nil, errorf("$geoWithin not supported with provided geometry: %s", v)
		}
		return &Region{Kind: RegionGeometry, geom: g}, nil
	case "$box":
		pts, ok := flatPoints(arg)
		if !ok || len(pts) != 2 {
			return nil, errorf("Point must only contain numeric elements")
		}
		return &Region{Kind: RegionBox, box: r2.RectFromPoints(pts[0], pts[1])}, nil
	case "$polygon":
		pts, ok := flatPoints(arg)
		if !ok {
			return nil, errorf("Point must only contain numeric elements")
		}
		if len(pts) < 3 {
			return nil, errorf("Polygon must have at least 3 points")
		}
		return &Region{Kind: RegionPolygon, poly: pts}, nil
	case "$center", "$centerSphere":
		vals, _ := bsoncore.Document(arg.Data).Values()
		if arg.Type != bsoncore.TypeArray || len(vals) != 2 {
			return nil, errorf("%s requires an array of a point and a radius: %s", e.Key(), v)
		}
		c, ok := ParseFlat(vals[0])
		if !ok {
			return nil, errorf("Point must only contain numeric elements")
		}
		r, ok := number(vals[1])
		if !ok || r < 0 || math.IsNaN(r) {
			return nil, errorf("radius must be a non-negative number")
		}
		if e.Key() == "$center" {
			return &Region{Kind: RegionCenter, ctr: c, rad: r}, nil
		}
		p, err := spherePoint(c.X, c.Y)
		if err != nil {
			return nil, err
		}
		return &Region{Kind: RegionCenterSphere, cap: s2.CapFromCenterAngle(p, s1.Angle(r))}, nil
	}
	return nil, errorf("$geoWithin not supported with provided geometry: %s", v)
}

// ParseIntersects reads $geoIntersects' operand: {$geometry: any GeoJSON}.
func ParseIntersects(v bsoncore.Value) (*Region, error) {
	if v.Type == bsoncore.TypeEmbeddedDocument {
		if arg, err := v.Document().LookupErr("$geometry"); err == nil {
			g, err := geometryArg(arg)
			if err != nil {
				return nil, err
			}
			return &Region{Kind: RegionGeometry, geom: g}, nil
		}
	}
	return nil, errorf("$geoIntersects not supported with provided geometry: %s", v)
}

// geometryArg reads the value of $geometry: a GeoJSON object.
func geometryArg(arg bsoncore.Value) (*Geometry, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf("$geometry must be an object: %s", arg)
	}
	if t, err := arg.Document().LookupErr("type"); err != nil || t.Type != bsoncore.TypeString {
		return nil, errorf("unknown GeoJSON type: %s", arg)
	}
	return ParseGeoJSON(arg.Document())
}

func flatPoints(v bsoncore.Value) ([]r2.Point, bool) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, false
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	out := make([]r2.Point, 0, len(vals))
	for _, e := range vals {
		p, ok := ParseFlat(e)
		if !ok {
			return nil, false
		}
		out = append(out, p)
	}
	return out, true
}

// Within reports whether g lies entirely within the region ($geoWithin).
// The flat shapes hold single points only (MongoDB's
// GeometryContainer::contains), not even a MultiPoint.
func (r *Region) Within(g *Geometry) bool {
	if r.IsFlat() && !g.IsPoint() {
		return false
	}
	for i := range g.shapes {
		if !r.shapeWithin(&g.shapes[i]) {
			return false
		}
	}
	return len(g.shapes) > 0
}

func (r *Region) shapeWithin(s *shape) bool {
	switch r.Kind {
	case RegionGeometry:
		for i := range r.geom.shapes {
			if polyContains(r.geom.shapes[i].poly, s) {
				return true
			}
		}
		return false
	case RegionCenterSphere:
		return allVertices(s, r.cap.ContainsPoint)
	}
	if s.kind != shPoint {
		return false
	}
	p := s.flat
	switch r.Kind {
	case RegionBox:
		return r.box.ContainsPoint(p)
	case RegionCenter:
		return p.Sub(r.ctr).Norm() <= r.rad
	case RegionPolygon:
		return flatPolygonContains(r.poly, p)
	}
	return false
}

// Intersects reports whether g and the region's geometry share a point
// ($geoIntersects).
func (r *Region) Intersects(g *Geometry) bool {
	if r.Kind != RegionGeometry {
		return false
	}
	for i := range g.shapes {
		for j := range r.geom.shapes {
			if intersects(&g.shapes[i], &r.geom.shapes[j]) {
				return true
			}
		}
	}
	return false
}

// polyContains: s lies within polygon p.
func polyContains(p *s2.Polygon, s *shape) bool {
	switch s.kind {
	case shPoint:
		return p.ContainsPoint(s.pt)
	case shLine:
		return allVertices(s, p.ContainsPoint) && !lineCrossesPolygon(*s.line, p)
	default:
		return p.Contains(s.poly)
	}
}

// allVertices reports f of every vertex of s.
func allVertices(s *shape, f func(s2.Point) bool) bool {
	switch s.kind {
	case shPoint:
		return f(s.pt)
	case shLine:
		for _, v := range *s.line {
			if !f(v) {
				return false
			}
		}
		return true
	default:
		for _, l := range s.poly.Loops() {
			for _, v := range l.Vertices() {
				if !f(v) {
					return false
				}
			}
		}
		return true
	}
}

// lineCrossesPolygon reports an edge of line crossing an edge of p.
func lineCrossesPolygon(line s2.Polyline, p *s2.Polygon) bool {
	for i := 0; i+1 < len(line); i++ {
		c := s2.NewChainEdgeCrosser(line[i], line[i+1], line[i])
		for _, l := range p.Loops() {
			n := l.NumVertices()
			c.RestartAt(l.Vertex(0))
			for k := 1; k <= n; k++ {
				if c.ChainCrossingSign(l.Vertex(k)) == s2.Cross {
					return true
				}
			}
		}
	}
	return false
}

// pointTolerance is how close two points must be to meet: S2's rounding
// of a lng/lat pair is well below it.
const pointTolerance = s1.Angle(1e-14)

func intersects(a, b *shape) bool {
	if a.kind > b.kind {
		a, b = b, a
	}
	switch {
	case a.kind == shPoint && b.kind == shPoint:
		return a.pt.Distance(b.pt) <= pointTolerance
	case a.kind == shPoint && b.kind == shLine:
		l := *b.line
		for i := 0; i+1 < len(l); i++ {
			if s2.DistanceFromSegment(a.pt, l[i], l[i+1]) <= pointTolerance {
				return true
			}
		}
		return false
	case a.kind == shPoint:
		return b.poly.ContainsPoint(a.pt) || onBoundary(a.pt, b.poly)
	case a.kind == shLine && b.kind == shLine:
		return a.line.Intersects(b.line) || touches(*a.line, *b.line)
	case a.kind == shLine:
		for _, v := range *a.line {
			if b.poly.ContainsPoint(v) {
				return true
			}
		}
		return lineCrossesPolygon(*a.line, b.poly)
	default:
		return a.poly.Intersects(b.poly)
	}
}

// touches reports a vertex of one line lying on the other (crossings at
// vertices, which Polyline.Intersects leaves out).
func touches(a, b s2.Polyline) bool {
	on := func(p s2.Point, l s2.Polyline) bool {
		for i := 0; i+1 < len(l); i++ {
			if s2.DistanceFromSegment(p, l[i], l[i+1]) <= pointTolerance {
				return true
			}
		}
		return false
	}
	for _, v := range a {
		if on(v, b) {
			return true
		}
	}
	for _, v := range b {
		if on(v, a) {
			return true
		}
	}
	return false
}

// flatPolygonContains is the even-odd test of a point against a polygon
// in the plane ($polygon); a point on an edge is inside, as MongoDB's
// Polygon::contains with its fudge counts boundary points.
func flatPolygonContains(poly []r2.Point, p r2.Point) bool {
	in := false
	n := len(poly)
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if onSegment(p, a, b) {
			return true
		}
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

func onSegment(p, a, b r2.Point) bool {
	if b.Sub(a).Cross(p.Sub(a)) != 0 {
		return false
	}
	return math.Min(a.X, b.X) <= p.X && p.X <= math.Max(a.X, b.X) && math.Min(a.Y, b.Y) <= p.Y && p.Y <= math.Max(a.Y, b.Y)
}

// Distance is the angle from p to the nearest point of g: zero inside a
// polygon.
func Distance(p s2.Point, g *Geometry) s1.Angle {
	best := s1.InfAngle()
	for i := range g.shapes {
		s := &g.shapes[i]
		var d s1.Angle
		switch s.kind {
		case shPoint:
			d = p.Distance(s.pt)
		case shLine:
			d = s1.InfAngle()
			l := *s.line
			for k := 0; k+1 < len(l); k++ {
				d = min(d, s2.DistanceFromSegment(p, l[k], l[k+1]))
			}
		default:
			if s.poly.ContainsPoint(p) {
				return 0
			}
			d = s1.InfAngle()
			for _, l := range s.poly.Loops() {
				n := l.NumVertices()
				for k := 0; k < n; k++ {
					d = min(d, s2.DistanceFromSegment(p, l.Vertex(k), l.Vertex(k+1)))
				}
			}
		}
		best = min(best, d)
	}
	return best
}

// FlatDistance is the plane distance from p to a geometry's point (the
// legacy coordinates), for $near over a 2d index; ok is false when g is
// not a point.
func FlatDistance(p r2.Point, g *Geometry) (float64, bool) {
	if !g.IsPoint() {
		return 0, false
	}
	return g.shapes[0].flat.Sub(p).Norm(), true
}

// onBoundary reports p on an edge of poly (S2's containment is semi-open:
// it leaves out some boundary points, which MongoDB's intersection counts).
func onBoundary(p s2.Point, poly *s2.Polygon) bool {
	for _, l := range poly.Loops() {
		n := l.NumVertices()
		for k := 0; k < n; k++ {
			if s2.DistanceFromSegment(p, l.Vertex(k), l.Vertex(k+1)) <= pointTolerance {
				return true
			}
		}
	}
	return false
}
