package exec

import (
	"context"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// $geoNear, the aggregation stage, becomes the collection read: a $near
// (or $nearSphere) selection on its key, with its query beside it, which
// the planner runs as GEO_NEAR_2DSPHERE; each result then gets its
// distance (times distanceMultiplier) in distanceField and, with
// includeLocs, the location it was measured to. It must be the pipeline's
// first stage (40602). The options are MongoDB 7.0's: near, distanceField
// (required), spherical, maxDistance, minDistance, query, includeLocs,
// distanceMultiplier, key. Without key, the collection must have exactly
// one 2dsphere field (else IndexNotFound, as MongoDB).

// geoNearSpec is a parsed $geoNear.
type geoNearSpec struct {
	key           string
	distanceField string
	includeLocs   string
	multiplier    float64
	near          *geo.Near
}

// splitGeoNear takes a leading $geoNear off stages: the selection it
// reads, its spec, and the stages after it. ok is false when the pipeline
// has no $geoNear; one after the first stage is an error.
func (e *Env) splitGeoNear(ns engine.Namespace, stages []bsoncore.Document) (sel Selection, gn *geoNearSpec, rest []bsoncore.Document, ok bool, err error) {
	for i, st := range stages {
		if el, err := st.IndexErr(0); err == nil && el.Key() == "$geoNear" && i > 0 {
			return sel, nil, nil, false, mongoerr.New(mongoerr.StageNotFirst, "$geoNear is only valid as the first stage in a pipeline")
		}
	}
	if len(stages) == 0 {
		return sel, nil, nil, false, nil
	}
	el, err := stages[0].IndexErr(0)
	if err != nil || el.Key() != "$geoNear" {
		return sel, nil, nil, false, nil
	}
	arg, isDoc := el.Value().DocumentOK()
	if !isDoc {
		return sel, nil, nil, false, mongoerr.New(mongoerr.BadValue, "$geoNear must take a nested object but found: %s", el.Value())
	}
	gn, filter, err := e.parseGeoNear(ns, arg)
	if err != nil {
		return sel, nil, nil, false, err
	}
	sel, err = NewSelection(ns, filter, query.Options{})
	return sel, gn, stages[1:], true, err
}

func (e *Env) parseGeoNear(ns engine.Namespace, arg bsoncore.Document) (*geoNearSpec, bsoncore.Document, error) {
	gn := &geoNearSpec{multiplier: 1}
	var near, minD, maxD bsoncore.Value
	var q bsoncore.Document
	spherical := false
	elems, _ := arg.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "near":
			near = v
		case "distanceField", "includeLocs", "key":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, nil, mongoerr.New(mongoerr.TypeMismatch, "$geoNear: %s must be a string", el.Key())
			}
			switch el.Key() {
			case "distanceField":
				gn.distanceField = s
			case "includeLocs":
				gn.includeLocs = s
			default:
				gn.key = s
			}
		case "spherical":
			spherical = v.Type == bsoncore.TypeBoolean && v.Boolean()
		case "maxDistance":
			maxD = v
		case "minDistance":
			minD = v
		case "query":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, nil, mongoerr.New(mongoerr.TypeMismatch, "$geoNear: query must be an object")
			}
			q = d
		case "distanceMultiplier":
			f, ok := bsonx.AsFloat64(v)
			if !ok || f < 0 || math.IsNaN(f) {
				return nil, nil, mongoerr.New(mongoerr.BadValue, "distanceMultiplier must be a non-negative number")
			}
			gn.multiplier = f
		default:
			return nil, nil, mongoerr.New(mongoerr.FailedToParse, "Unknown argument to $geoNear: %s", el.Key())
		}
	}
	if near.Type == 0 {
		return nil, nil, mongoerr.New(mongoerr.FailedToParse, "$geoNear requires a 'near' option as an Array")
	}
	if gn.distanceField == "" {
		return nil, nil, mongoerr.New(mongoerr.FailedToParse, "$geoNear requires a 'distanceField' option as a String")
	}
	if gn.key == "" {
		key, err := e.onlyGeoField(ns)
		if err != nil {
			return nil, nil, err
		}
		gn.key = key
	}
	// The selection: {key: {$near|$nearSphere: near, $minDistance, $maxDistance}, …query}.
	op := "$near"
	if spherical || near.Type == bsoncore.TypeEmbeddedDocument && hasType(near) {
		op = "$nearSphere"
	}
	cond := bsoncore.NewDocumentBuilder()
	if near.Type == bsoncore.TypeEmbeddedDocument && hasType(near) {
		g := bsoncore.NewDocumentBuilder().AppendDocument("$geometry", near.Document())
		if minD.Type != 0 {
			g.AppendValue("$minDistance", minD)
		}
		if maxD.Type != 0 {
			g.AppendValue("$maxDistance", maxD)
		}
		cond.AppendDocument(op, g.Build())
	} else {
		cond.AppendValue(op, near)
		if minD.Type != 0 {
			cond.AppendValue("$minDistance", minD)
		}
		if maxD.Type != 0 {
			cond.AppendValue("$maxDistance", maxD)
		}
	}
	condDoc := cond.Build()
	f := bsoncore.NewDocumentBuilder().AppendDocument(gn.key, condDoc)
	if q != nil {
		qe, _ := q.Elements()
		for _, el := range qe {
			f.AppendValue(el.Key(), el.Value())
		}
	}
	first, _ := condDoc.IndexErr(0)
	var err error
	if gn.near, err = query.ParseNear(op, first.Value(), bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: condDoc}); err != nil {
		return nil, nil, err
	}
	return gn, f.Build(), nil
}

func hasType(v bsoncore.Value) bool {
	_, err := v.Document().LookupErr("type")
	return err == nil
}

// onlyGeoField is the one 2dsphere field of the collection's indexes.
func (e *Env) onlyGeoField(ns engine.Namespace) (string, error) {
	_, specs, err := e.eng.Indexes(ns)
	if err != nil {
		return "", err
	}
	var fields []string
	for _, spec := range specs {
		for _, f := range spec.KeyPattern {
			if f.Kind == index.Geo2dsphere || f.Kind == index.Geo2d {
				fields = append(fields, f.Path)
			}
		}
	}
	switch len(fields) {
	case 0:
		return "", mongoerr.New(mongoerr.IndexNotFound, "$geoNear requires a 2d or 2dsphere index, but none were found")
	case 1:
		return fields[0], nil
	}
	return "", mongoerr.New(mongoerr.IndexNotFound, "There is more than one 2dsphere index on %s.%s; unsure which to use for $geoNear", ns.DB, ns.Coll)
}

// geoNearSource adds $geoNear's output fields to the plan's results.
type geoNearSource struct {
	ex *planner.Exec
	gn *geoNearSpec
}

func (s *geoNearSource) Close() error { return s.ex.Close() }

func (s *geoNearSource) Next() (bsoncore.Document, error) {
	d, err := s.ex.Next()
	if d == nil || err != nil {
		return d, err
	}
	dist, _ := s.ex.NearDistance()
	fs := bsonx.FieldsOf(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	fs = setPath(fs, s.gn.distanceField, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, dist*s.gn.multiplier)})
	if s.gn.includeLocs != "" {
		if loc, ok := s.nearestLoc(d, dist); ok {
			fs = setPath(fs, s.gn.includeLocs, loc)
		}
	}
	return bsonx.BuildDoc(fs), nil
}

// nearestLoc is the location at the key the distance was measured to.
func (s *geoNearSource) nearestLoc(d bsoncore.Document, dist float64) (bsoncore.Value, bool) {
	for _, v := range geo.ValuesAt(d, strings.Split(s.gn.key, ".")) {
		if g, ok, err := geo.Parse(v); ok && err == nil {
			if x, ok := s.gn.near.DistanceTo(g); ok && x == dist {
				return v, true
			}
		}
	}
	return bsoncore.Value{}, false
}

// setPath sets a dotted path in fs, making subdocuments on the way.
func setPath(fs []bsonx.Field, path string, v bsoncore.Value) []bsonx.Field {
	head, tail, dotted := strings.Cut(path, ".")
	if !dotted {
		return bsonx.SetField(fs, head, v)
	}
	sub := bsonx.FieldsOf(bsonx.GetField(fs, head))
	sub = setPath(sub, tail, v)
	return bsonx.SetField(fs, head, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsonx.BuildDoc(sub)})
}

// openGeoNear opens a pipeline's leading $geoNear as its source.
func (e *Env) openGeoNear(ctx context.Context, sel Selection, gn *geoNearSpec, mode Mode) (*geoNearSource, error) {
	ex, err := e.Open(ctx, sel, mode)
	if err != nil {
		return nil, err
	}
	return &geoNearSource{ex: ex, gn: gn}, nil
}
