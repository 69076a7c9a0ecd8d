package index

import (
	"github.com/golang/geo/r2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// 2d indexes (MongoDB's 2d access method): the first field of the key
// pattern is "2d", keyed by the geohash of its legacy coordinate pair on
// the index's grid (geo.Grid: bits, min, max), an int64; the other fields
// are keyed as in a btree index. A field holding an array of pairs has a
// key per pair (multikey). Like 2dsphere indexes they are sparse on the 2d
// field: a document without a point there has no key. A value that is not
// a pair is refused (13026), a point off the grid too (13027).

// Geo2d is a "2d" field: the geohash of a legacy coordinate pair.
const Geo2d Kind = Geo2dsphere + 1

// Grid is a 2d index's grid; ok is false for other indexes.
func (s *Spec) Grid() (geo.Grid, bool) {
	if s.grid == nil {
		return geo.Grid{}, false
	}
	return *s.grid, true
}

// prepare2d checks a 2d specification's options (bits, min, max) and its
// key pattern: one 2d field, first.
func (p *specParser) prepare2d() error {
	s := p.s
	for i, f := range s.KeyPattern {
		if f.Kind == Geo2d && i > 0 {
			if s.KeyPattern[0].Kind == Geo2d {
				return mongoerr.New(mongoerr.Geo2dTwoGeoFields, "can't have 2 geo fields")
			}
			return mongoerr.New(mongoerr.Geo2dNotFirst, "2d has to be first in index")
		}
	}
	g := geo.DefaultGrid
	if v, err := p.spec.LookupErr("bits"); err == nil {
		n, ok := bsonx.AsInt64(v)
		if !ok || n < 1 || n > 32 {
			return mongoerr.New(mongoerr.Geo2dBits, "bits in geo index must be between 1 and 32")
		}
		g.Bits = int(n)
	}
	for _, o := range []struct {
		name string
		dst  *float64
	}{{"min", &g.Min}, {"max", &g.Max}} {
		if v, err := p.spec.LookupErr(o.name); err == nil {
			f, _ := bsonx.AsFloat64(v)
			*o.dst = f
		}
	}
	if !(g.Max > g.Min) {
		return cannotCreate("region for hash must be valid and have positive area")
	}
	if s.Unique {
		return cannotCreate("unique 2d indexes are not supported yet")
	}
	s.gen = genGeo
	s.grid = &g
	return nil
}

// geo2dKeys are the encoded keys of a 2d field's value v (several for an
// array of pairs); none for null.
func (s *Spec) geo2dKeys(doc bsoncore.Document, v bsoncore.Value) ([]int64, error) {
	if v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return nil, nil
	}
	var pts []r2.Point
	if p, ok := geo.ParseFlat(v); ok {
		pts = append(pts, p)
	} else if v.Type == bsoncore.TypeArray || v.Type == bsoncore.TypeEmbeddedDocument {
		vals, _ := bsoncore.Document(v.Data).Values()
		for _, x := range vals {
			p, ok := geo.ParseFlat(x)
			if !ok {
				return nil, geo2dNotPoint(doc)
			}
			pts = append(pts, p)
		}
	} else {
		return nil, geo2dNotPoint(doc)
	}
	keys := make([]int64, 0, len(pts))
	for _, p := range pts {
		k, ok := s.grid.Key(p)
		if !ok {
			return nil, mongoerr.New(mongoerr.Geo2dOutOfRange, "point not in interval of [ %g, %g )", s.grid.Min, s.grid.Max)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func geo2dNotPoint(doc bsoncore.Document) error {
	return mongoerr.New(mongoerr.Geo2dNotPoint, "geo values must be 'legacy coordinate pairs' for 2d indexes: %s", doc)
}
