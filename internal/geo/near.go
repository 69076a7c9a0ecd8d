package geo

import (
	"math"

	"github.com/golang/geo/r2"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Near is a parsed $near or $nearSphere (or $geoNear's near): the point,
// the distance bounds, and the units they are in.
type Near struct {
	// Sphere: distances are measured on the sphere ($nearSphere, or any
	// GeoJSON point); otherwise in the plane, over legacy coordinates,
	// which only a 2d index serves.
	Sphere bool
	// Meters: distances are meters (a GeoJSON point); otherwise radians
	// on the sphere or coordinate units in the plane.
	Meters bool
	Point  s2.Point
	Flat   r2.Point
	// Min and Max bound the distance, in the query's units; Max is +Inf
	// when not given.
	Min, Max float64
}

// ParseNear reads $near or $nearSphere: op's operand v and its sibling
// $minDistance/$maxDistance (absent: Type 0). The GeoJSON form carries its
// bounds inside: {$geometry: Point, $maxDistance, $minDistance}.
func ParseNear(op string, v, minSib, maxSib bsoncore.Value) (*Near, error) {
	n := &Near{Sphere: op == "$nearSphere", Max: math.Inf(1)}
	minV, maxV := minSib, maxSib
	if v.Type == bsoncore.TypeEmbeddedDocument {
		if g, err := v.Document().LookupErr("$geometry"); err == nil {
			if g.Type != bsoncore.TypeEmbeddedDocument {
				return nil, errorf("invalid point in geo near query $geometry argument: %s", g)
			}
			geom, err := ParseGeoJSON(g.Document())
			if err != nil {
				return nil, errorf("invalid point in geo near query $geometry argument: %s  %v", g, err)
			}
			if geom.Kind != Point {
				return nil, errorf("$near requires a point, given %s", g)
			}
			n.Sphere, n.Meters = true, true
			n.Point, n.Flat = geom.shapes[0].pt, geom.shapes[0].flat
			if x, err := v.Document().LookupErr("$minDistance"); err == nil {
				minV = x
			}
			if x, err := v.Document().LookupErr("$maxDistance"); err == nil {
				maxV = x
			}
			return n, n.bounds(minV, maxV)
		}
	}
	p, ok := ParseFlat(v)
	if !ok {
		return nil, errorf("%s must be a point", op)
	}
	n.Flat = p
	if n.Sphere {
		sp, err := spherePoint(p.X, p.Y)
		if err != nil {
			return nil, err
		}
		n.Point = sp
	}
	return n, n.bounds(minV, maxV)
}

func (n *Near) bounds(minV, maxV bsoncore.Value) error {
	var err error
	if n.Min, err = distanceArg("minDistance", minV, 0); err != nil {
		return err
	}
	n.Max, err = distanceArg("maxDistance", maxV, math.Inf(1))
	return err
}

// distanceArg reads $minDistance or $maxDistance: absent gives def.
func distanceArg(name string, v bsoncore.Value, def float64) (float64, error) {
	if v.Type == 0 {
		return def, nil
	}
	f, ok := number(v)
	if !ok {
		return 0, errorf("%s must be a number", name)
	}
	if f < 0 || math.IsNaN(f) {
		return 0, errorf("%s must be non-negative", name)
	}
	return f, nil
}

// ToAngle converts a distance in the query's units to an angle on the
// sphere.
func (n *Near) ToAngle(d float64) s1.Angle {
	if n.Meters {
		return s1.Angle(d / EarthRadiusMeters)
	}
	return s1.Angle(d)
}

// DistanceTo is the distance from the near point to g in the query's
// units; ok is false when g cannot be measured (a non-point in the plane).
func (n *Near) DistanceTo(g *Geometry) (float64, bool) {
	if !n.Sphere {
		return FlatDistance(n.Flat, g)
	}
	d := float64(Distance(n.Point, g))
	if n.Meters {
		d *= EarthRadiusMeters
	}
	return d, true
}

// InRange reports whether a distance lies within [Min, Max].
func (n *Near) InRange(d float64) bool { return d >= n.Min && d <= n.Max }
