package index

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/geo"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// 2dsphere indexes (index version 3 semantics, MongoDB's
// ExpressionKeysPrivate::getS2Keys): a "2dsphere" field's keys are the S2
// cells covering its geometry (geo.Geometry.Covering), each the cell id as
// an int64, so one geometry has several keys and the index is multikey;
// the other fields are keyed as in a btree index, and a document's keys
// are every combination. The index is sparse on its geo fields: a document
// whose geo fields are all missing, null or empty arrays has no key (a
// missing geo field beside a present one is keyed null). A geo field's
// value must be a geometry (package geo), or the write fails with
// GeoExtractKeys (16755), "Can't extract geo keys".

// Geo2dsphere is a "2dsphere" field: the int64 ids of the S2 cells
// covering the field's geometry.
const Geo2dsphere Kind = Wildcard + 1

// GeoParams is the spec's covering parameters (coarsestIndexedLevel,
// finestIndexedLevel), for the planner's query bounds.
func (s *Spec) GeoParams() geo.IndexParams { return s.geo }

// IsGeo reports a 2dsphere index.
func (s *Spec) IsGeo() bool { return s.gen == genGeo }

// prepareGeo checks a 2dsphere specification's options.
func (p *specParser) prepareGeo() error {
	s := p.s
	s.gen = genGeo
	s.geo = geo.DefaultParams
	if v, err := p.spec.LookupErr("2dsphereIndexVersion"); err == nil {
		if n, ok := bsonx.AsInt64(v); !ok || n != 3 {
			return cannotCreate("unsupported geo index version { 2dsphereIndexVersion : %s }, only version 3 is supported", v)
		}
	}
	for _, o := range []struct {
		name string
		dst  *int
	}{{"coarsestIndexedLevel", &s.geo.CoarsestLevel}, {"finestIndexedLevel", &s.geo.FinestLevel}} {
		if v, err := p.spec.LookupErr(o.name); err == nil {
			n, ok := bsonx.AsInt64(v)
			if !ok || n < 0 || n > 30 {
				return cannotCreate("%s must be between 0 and 30", o.name)
			}
			*o.dst = int(n)
		}
	}
	if s.geo.CoarsestLevel > s.geo.FinestLevel {
		return cannotCreate("finestIndexedLevel must be greater than coarsestIndexedLevel")
	}
	if s.Unique {
		return cannotCreate("unique 2dsphere indexes are not supported yet")
	}
	return nil
}

// geoKeys generates a 2dsphere index's keys for doc.
func (s *Spec) geoKeys(doc bsoncore.Document, dst [][]byte) ([][]byte, Multikey, error) {
	ks := keySet{dst}
	parts := make([][][]byte, len(s.KeyPattern)) // encoded values per field
	mk := Multikey{Components: make([][]int, len(s.KeyPattern))}
	anyGeo := false
	for i, f := range s.KeyPattern {
		geoField := f.Kind == Geo2dsphere || f.Kind == Geo2d
		vals, arrays := valuesAlong(doc, f.Parts, !geoField)
		mk.Components[i] = arrays
		if !geoField {
			for _, v := range vals {
				if f.Kind == Descending {
					parts[i] = append(parts[i], keystring.AppendDesc(nil, v))
				} else {
					parts[i] = append(parts[i], keystring.Append(nil, v))
				}
			}
			continue
		}
		var cells []int64
		for _, v := range vals {
			if f.Kind == Geo2d {
				keys, err := s.geo2dKeys(doc, v) // geo2d.go
				if err != nil {
					return ks.keys, Multikey{}, err
				}
				cells = append(cells, keys...)
				continue
			}
			if v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
				continue
			}
			g, ok, err := geo.Parse(v)
			if !ok {
				return ks.keys, Multikey{}, geoKeysError(doc, "geo element must be an array or object: %s: %s", f.Path, v)
			}
			if err != nil {
				return ks.keys, Multikey{}, geoKeysError(doc, "%v", err)
			}
			for _, c := range g.Covering(s.geo) {
				cells = append(cells, geo.Key(c))
			}
		}
		if len(cells) == 0 {
			parts[i] = [][]byte{keystring.Append(nil, nullValue)}
			continue
		}
		anyGeo = true
		slices.Sort(cells)
		cells = slices.Compact(cells)
		if len(cells) > 1 && !containsInt(mk.Components[i], len(f.Parts)-1) {
			mk.Components[i] = append(mk.Components[i], len(f.Parts)-1)
		}
		var b [8]byte
		for _, c := range cells {
			binary.LittleEndian.PutUint64(b[:], uint64(c))
			parts[i] = append(parts[i], keystring.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt64, Data: b[:]}))
		}
	}
	if !anyGeo {
		return ks.keys, Multikey{}, nil
	}
	var emit func(i int, prefix []byte)
	emit = func(i int, prefix []byte) {
		if i == len(parts) {
			b := ks.start()
			ks.finish(append(b, prefix...))
			return
		}
		for _, p := range parts[i] {
			emit(i+1, append(prefix[:len(prefix):len(prefix)], p...))
		}
	}
	emit(0, nil)
	return ks.keys, mk, nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func geoKeysError(doc bsoncore.Document, format string, args ...any) error {
	return mongoerr.New(mongoerr.GeoExtractKeys, "Can't extract geo keys: %s  %s", doc, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// valuesAlong collects the values a path reaches, through documents and
// through arrays of documents, and the positions of the path components
// that held arrays. For a btree field (expand) a leaf array gives its
// elements (undefined when empty) and a missing field null; for a geo field
// the leaf value is taken whole (a legacy pair is an array) and a missing
// field gives nothing.
func valuesAlong(doc bsoncore.Document, parts []string, expand bool) (vals []bsoncore.Value, arrays []int) {
	var walk func(v bsoncore.Value, i int)
	walk = func(v bsoncore.Value, i int) {
		if i == len(parts) {
			if expand && v.Type == bsoncore.TypeArray {
				elems, _ := bsoncore.Document(v.Data).Values()
				if len(elems) == 0 {
					vals = append(vals, undefinedValue)
				}
				vals = append(vals, elems...)
				if !containsInt(arrays, i-1) {
					arrays = append(arrays, i-1)
				}
				return
			}
			vals = append(vals, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			e, err := v.Document().LookupErr(parts[i])
			if err != nil {
				if expand {
					vals = append(vals, nullValue)
				}
				return
			}
			walk(e, i+1)
		case bsoncore.TypeArray:
			if !containsInt(arrays, i-1) {
				arrays = append(arrays, i-1)
			}
			elems, _ := bsoncore.Document(v.Data).Values()
			for _, e := range elems {
				if e.Type == bsoncore.TypeEmbeddedDocument {
					walk(e, i)
				}
			}
		default:
			if expand {
				vals = append(vals, nullValue)
			}
		}
	}
	walk(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, 0)
	if expand && len(vals) == 0 {
		vals = append(vals, nullValue)
	}
	return vals, arrays
}
