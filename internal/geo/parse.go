package geo

import (
	"fmt"
	"math"

	"github.com/golang/geo/r2"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
)

// Kind is a geometry's GeoJSON type, or Legacy for a coordinate pair.
type Kind uint8

// The kinds of geometry.
const (
	Point Kind = iota + 1
	LineString
	Polygon
	MultiPoint
	MultiLineString
	MultiPolygon
	GeometryCollection
	// Legacy is a coordinate pair, [x, y] or {x: …, y: …} (the first two
	// fields, whatever their names).
	Legacy
)

var kindNames = map[string]Kind{
	"Point": Point, "LineString": LineString, "Polygon": Polygon,
	"MultiPoint": MultiPoint, "MultiLineString": MultiLineString,
	"MultiPolygon": MultiPolygon, "GeometryCollection": GeometryCollection,
}

// shapeKind is what one simple shape of a geometry is.
type shapeKind uint8

const (
	shPoint shapeKind = iota
	shLine
	shPolygon
)

// shape is one simple geometry: a point, a line or a polygon.
type shape struct {
	kind shapeKind
	pt   s2.Point
	flat r2.Point // a point's coordinates as given, for the flat shapes
	line *s2.Polyline
	poly *s2.Polygon
}

// Geometry is a parsed stored geometry: the simple shapes it is made of
// (one for Point, LineString, Polygon and Legacy; the members of the
// others).
type Geometry struct {
	Kind   Kind
	shapes []shape
}

// IsPoint reports a geometry that is one point (GeoJSON or legacy).
func (g *Geometry) IsPoint() bool { return len(g.shapes) == 1 && g.shapes[0].kind == shPoint }

// errorf makes a validation error; callers attach MongoDB's code.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Parse reads a stored value as a geometry: a GeoJSON object (a document
// with a string "type"), or a legacy coordinate pair (an array or a
// document whose first two values are numbers). Spherical coordinates must
// be in bounds (longitude in [-180, 180], latitude in [-90, 90]). ok is
// false for a value that is neither (a 2dsphere index refuses it; a query
// does not match it); err reports a geometry that claims to be one but is
// invalid.
func Parse(v bsoncore.Value) (g *Geometry, ok bool, err error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		d := v.Document()
		if t, err := d.LookupErr("type"); err == nil && t.Type == bsoncore.TypeString {
			g, err := ParseGeoJSON(d)
			return g, true, err
		}
		fallthrough
	case bsoncore.TypeArray:
		x, y, ok := legacyPair(v)
		if !ok {
			return nil, false, nil
		}
		p, err := spherePoint(x, y)
		if err != nil {
			return nil, true, err
		}
		return &Geometry{Kind: Legacy, shapes: []shape{{kind: shPoint, pt: p, flat: r2.Point{X: x, Y: y}}}}, true, nil
	}
	return nil, false, nil
}

// ParseFlat reads a legacy coordinate pair as a flat point, for the 2d
// shapes: ok is false for anything else.
func ParseFlat(v bsoncore.Value) (r2.Point, bool) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return r2.Point{}, false
	}
	x, y, ok := legacyPair(v)
	return r2.Point{X: x, Y: y}, ok
}

// legacyPair reads the first two values of an array or document as
// numbers (MongoDB's isLegacyPoint: exactly two for a document's pair,
// more are ignored for an array).
func legacyPair(v bsoncore.Value) (x, y float64, ok bool) {
	vals, err := bsoncore.Document(v.Data).Values()
	if err != nil || len(vals) < 2 {
		return 0, 0, false
	}
	x, ok1 := number(vals[0])
	y, ok2 := number(vals[1])
	return x, y, ok1 && ok2
}

func number(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return bsonx.AsFloat64(v)
	}
	return 0, false
}

// spherePoint is the S2 point of a longitude/latitude pair in bounds.
func spherePoint(lng, lat float64) (s2.Point, error) {
	if !(lng >= -180 && lng <= 180 && lat >= -90 && lat <= 90) {
		return s2.Point{}, errorf("longitude/latitude is out of bounds, lng: %s lat: %s", fmtNum(lng), fmtNum(lat))
	}
	return s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng)), nil
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// ParseGeoJSON reads a GeoJSON object (MongoDB's GeoParser): its type,
// its coordinates (or geometries), and an optional crs, which must name
// WGS84 (EPSG:4326 or urn:ogc:def:crs:OGC:1.3:CRS84).
func ParseGeoJSON(d bsoncore.Document) (*Geometry, error) {
	t, _ := d.LookupErr("type")
	name, _ := t.StringValueOK()
	kind, ok := kindNames[name]
	if !ok {
		return nil, errorf("unknown GeoJSON type: %s", d)
	}
	if err := checkCRS(d); err != nil {
		return nil, err
	}
	g := &Geometry{Kind: kind}
	if kind == GeometryCollection {
		gs, err := d.LookupErr("geometries")
		if err != nil || gs.Type != bsoncore.TypeArray {
			return nil, errorf("GeometryCollection geometries must be an array")
		}
		vals, _ := bsoncore.Document(gs.Data).Values()
		for _, m := range vals {
			if m.Type != bsoncore.TypeEmbeddedDocument {
				return nil, errorf("Element %s of \"geometries\" is not an object", m)
			}
			sub, err := ParseGeoJSON(m.Document())
			if err != nil {
				return nil, err
			}
			if sub.Kind == GeometryCollection {
				return nil, errorf("GeometryCollections cannot be nested: %s", d)
			}
			g.shapes = append(g.shapes, sub.shapes...)
		}
		return g, nil
	}
	c, err := d.LookupErr("coordinates")
	if err != nil || c.Type != bsoncore.TypeArray {
		return nil, errorf("coordinates must be an array")
	}
	switch kind {
	case Point:
		s, err := parsePosition(c)
		if err != nil {
			return nil, err
		}
		g.shapes = []shape{s}
	case LineString:
		s, err := parseLine(c)
		if err != nil {
			return nil, err
		}
		g.shapes = []shape{s}
	case Polygon:
		s, err := parsePolygon(c)
		if err != nil {
			return nil, err
		}
		g.shapes = []shape{s}
	default:
		vals, _ := bsoncore.Document(c.Data).Values()
		if len(vals) == 0 {
			return nil, errorf("%s coordinates must have at least 1 element", name)
		}
		for _, m := range vals {
			var s shape
			var err error
			switch kind {
			case MultiPoint:
				s, err = parsePosition(m)
			case MultiLineString:
				s, err = parseLine(m)
			default:
				s, err = parsePolygon(m)
			}
			if err != nil {
				return nil, err
			}
			g.shapes = append(g.shapes, s)
		}
	}
	return g, nil
}

func checkCRS(d bsoncore.Document) error {
	crs, err := d.LookupErr("crs")
	if err != nil {
		return nil
	}
	if crs.Type != bsoncore.TypeEmbeddedDocument {
		return errorf("GeoJSON CRS must be an object")
	}
	name, err := crs.Document().LookupErr("properties", "name")
	if err != nil || name.Type != bsoncore.TypeString {
		return errorf("GeoJSON CRS must have field \"properties.name\" of type string")
	}
	switch name.StringValue() {
	case "EPSG:4326", "urn:ogc:def:crs:OGC:1.3:CRS84":
		return nil
	case "urn:x-mongodb:crs:strictwinding:EPSG:4326":
		return errorf("big polygons (strictwinding CRS) are not supported yet")
	}
	return errorf("Unknown CRS name: %s", name.StringValue())
}

// parsePosition reads [lng, lat] (an altitude after them is ignored).
func parsePosition(v bsoncore.Value) (shape, error) {
	if v.Type != bsoncore.TypeArray {
		return shape{}, errorf("Point must be an array or object, instead got type %s", typeName(v.Type))
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	for _, e := range vals {
		if _, ok := number(e); !ok {
			return shape{}, errorf("Point must only contain numeric elements")
		}
	}
	if len(vals) < 2 {
		return shape{}, errorf("Point must contain at least two numeric elements")
	}
	x, _ := number(vals[0])
	y, _ := number(vals[1])
	p, err := spherePoint(x, y)
	if err != nil {
		return shape{}, err
	}
	return shape{kind: shPoint, pt: p, flat: r2.Point{X: x, Y: y}}, nil
}

func positions(v bsoncore.Value) ([]s2.Point, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, errorf("GeoJSON coordinates must be an array of coordinates")
	}
	vals, _ := bsoncore.Document(v.Data).Values()
	pts := make([]s2.Point, 0, len(vals))
	for _, e := range vals {
		s, err := parsePosition(e)
		if err != nil {
			return nil, err
		}
		pts = append(pts, s.pt)
	}
	return pts, nil
}

func parseLine(v bsoncore.Value) (shape, error) {
	pts, err := positions(v)
	if err != nil {
		return shape{}, err
	}
	if len(pts) < 2 {
		return shape{}, errorf("GeoJSON LineString must have at least 2 vertices: %s", v)
	}
	line := s2.Polyline(pts)
	if err := line.Validate(); err != nil {
		return shape{}, errorf("GeoJSON LineString is not valid: %v %s", err, v)
	}
	return shape{kind: shLine, line: &line}, nil
}

func parsePolygon(v bsoncore.Value) (shape, error) {
	if v.Type != bsoncore.TypeArray {
		return shape{}, errorf("Polygon coordinates must be an array")
	}
	rings, _ := bsoncore.Document(v.Data).Values()
	if len(rings) == 0 {
		return shape{}, errorf("Polygon has no loops.")
	}
	var loops []*s2.Loop
	for _, r := range rings {
		pts, err := positions(r)
		if err != nil {
			return shape{}, err
		}
		if len(pts) < 4 {
			return shape{}, errorf("Loop must have at least 4 vertices: %s", r)
		}
		if pts[0] != pts[len(pts)-1] {
			return shape{}, errorf("Loop is not closed, first vertex does not equal last vertex: %s", r)
		}
		pts = pts[:len(pts)-1]
		for j := range pts {
			if pts[j] == pts[(j+1)%len(pts)] {
				return shape{}, errorf("Loop is not valid: %s Duplicate vertices: %d and %d", r, j, (j+1)%len(pts))
			}
		}
		if i, j, crossed := selfCrossing(pts); crossed {
			return shape{}, errorf("Loop is not valid: %s Edges %d and %d cross", r, i, j)
		}
		loop := s2.LoopFromPoints(pts)
		if err := loop.Validate(); err != nil {
			return shape{}, errorf("Loop is not valid: %s %v", r, err)
		}
		// GeoJSON gives no reliable orientation: MongoDB takes each loop
		// as the smaller of the two regions it bounds.
		loop.Normalize()
		loops = append(loops, loop)
	}
	if len(loops) > 1 {
		for _, h := range loops[1:] {
			if !loops[0].Contains(h) {
				return shape{}, errorf("Secondary loops not contained by first exterior loop - secondary loops must be holes: %s", v)
			}
		}
	}
	poly := s2.PolygonFromLoops(loops)
	if err := poly.Validate(); err != nil {
		return shape{}, errorf("Polygon is not valid: %v %s", err, v)
	}
	return shape{kind: shPolygon, poly: poly}, nil
}

func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeString:
		return "string"
	}
	return t.String()
}

// selfCrossing finds two edges of a loop that cross (S2-Go's Validate does
// not look for them; S2-C++'s, which MongoDB runs, does).
func selfCrossing(pts []s2.Point) (int, int, bool) {
	n := len(pts)
	for i := 0; i < n; i++ {
		c := s2.NewChainEdgeCrosser(pts[i], pts[(i+1)%n], pts[(i+2)%n])
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				break
			}
			if c.ChainCrossingSign(pts[(j+1)%n]) == s2.Cross {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// ValuesAt are the values at a dotted path's parts, as a geo field reads
// them: through documents and arrays of documents, the leaf value whole
// (a legacy pair is an array).
func ValuesAt(doc bsoncore.Document, parts []string) []bsoncore.Value {
	var out []bsoncore.Value
	var walk func(v bsoncore.Value, i int)
	walk = func(v bsoncore.Value, i int) {
		if i == len(parts) {
			out = append(out, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			if e, err := v.Document().LookupErr(parts[i]); err == nil {
				walk(e, i+1)
			}
		case bsoncore.TypeArray:
			vals, _ := bsoncore.Document(v.Data).Values()
			for _, e := range vals {
				if e.Type == bsoncore.TypeEmbeddedDocument {
					walk(e, i)
				}
			}
		}
	}
	walk(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, 0)
	return out
}
