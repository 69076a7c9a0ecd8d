package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/geo"
)

// Geospatial operators: $geoWithin (and its old name $within),
// $geoIntersects, $near and $nearSphere, over package geo. A value that is
// not a geometry never matches. $near and $nearSphere match the documents
// within their distance bounds; the order by distance, and the rule that
// they need a geospatial index, belong to the planner, which refuses a
// plan without one (NoQueryExecutionPlans), so a collection scan never
// runs them.

type geoWithinPred struct{ r *geo.Region }

func (p geoWithinPred) matchValue(v bsoncore.Value, _ *state) bool {
	g, ok, err := geo.Parse(v)
	return ok && err == nil && p.r.Within(g)
}

type geoIntersectsPred struct{ r *geo.Region }

func (p geoIntersectsPred) matchValue(v bsoncore.Value, _ *state) bool {
	g, ok, err := geo.Parse(v)
	return ok && err == nil && p.r.Intersects(g)
}

// nearPred matches the values within a $near's distance bounds.
type nearPred struct{ n *geo.Near }

func (p nearPred) matchValue(v bsoncore.Value, _ *state) bool {
	g, ok, err := geo.Parse(v)
	if !ok || err != nil {
		return false
	}
	d, ok := p.n.DistanceTo(g)
	return ok && p.n.InRange(d)
}

func parseGeoWithin(v bsoncore.Value) (pred, error) {
	r, err := geo.ParseWithin(v)
	if err != nil {
		return nil, badValue("%v", err)
	}
	return geoWithinPred{r}, nil
}

func parseGeoIntersects(v bsoncore.Value) (pred, error) {
	r, err := geo.ParseIntersects(v)
	if err != nil {
		return nil, badValue("%v", err)
	}
	return geoIntersectsPred{r}, nil
}

// parseNear reads $near/$nearSphere with the sibling $minDistance and
// $maxDistance of its operator document ops.
func parseNear(op string, v, ops bsoncore.Value) (pred, error) {
	n, err := ParseNear(op, v, ops)
	if err != nil {
		return nil, err
	}
	return nearPred{n}, nil
}

// ParseNear reads a $near or $nearSphere condition: op's operand v and
// the operator document ops it sits in (for the legacy form's sibling
// $minDistance and $maxDistance). Errors are BadValue, as MongoDB's.
func ParseNear(op string, v, ops bsoncore.Value) (*geo.Near, error) {
	minV, maxV := lookup(ops.Data, "$minDistance"), lookup(ops.Data, "$maxDistance")
	n, err := geo.ParseNear(op, v, minV, maxV)
	if err != nil {
		return nil, badValue("%v", err)
	}
	return n, nil
}

// NearCount counts the $near and $nearSphere conditions anywhere in the
// filter: the planner allows one, at the top level; a context that cannot
// order by distance ($match) allows none.
func (f *Filter) NearCount() int { return countNear(f.Tree()) }

func countNear(c Conjunction) int {
	n := 0
	var ops func([]Op)
	ops = func(os []Op) {
		for _, op := range os {
			if op.Name == "$near" || op.Name == "$nearSphere" {
				n++
			}
			ops(op.Sub)
			n += countNear(op.Elem)
		}
	}
	for i := range c {
		ops(c[i].Ops)
		for _, b := range c[i].Branches {
			n += countNear(b)
		}
	}
	return n
}
