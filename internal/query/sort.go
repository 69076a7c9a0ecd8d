package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Sort is a parsed sort specification such as {a: 1, "b.c": -1}.
//
// The sort key of a document for one path is chosen among the values the
// path reaches, arrays contributing their elements (MongoDB's sort-key
// rule): the smallest for an ascending key, the largest for a descending
// one. A missing field sorts as null; an empty array sorts below null (as
// undefined), in both directions. Values compare in MongoDB's total order
// (bsonx.Compare). Each path of a compound sort picks its value
// independently.
//
// Ties: documents with equal keys keep their input order (the sort is
// stable). For a collection scan the input order is _id order, so ties come
// out in _id order; MongoDB promises no order for ties.
type Sort struct {
	keys []sortKey
	coll bsonx.Collator // nil: the simple collation
}

// WithCollation returns s comparing strings by coll (nil: simple), as
// MongoDB sorts under a command's collation.
func (s *Sort) WithCollation(coll bsonx.Collator) *Sort {
	c := *s
	c.coll = coll
	return &c
}

type sortKey struct {
	path path
	desc bool
}

var (
	nullKey      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedKey = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// ParseSort parses a sort specification. Directions must be 1 or -1
// (code 15975); {$meta: "textScore"} sorts by the score a text plan
// carries (TextScoreField), higher first; other $meta sorts are refused.
func ParseSort(spec bsoncore.Document) (*Sort, error) {
	s := &Sort{}
	if len(spec) == 0 {
		return s, nil
	}
	if err := spec.Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "sort is not a valid BSON document: %v", err)
	}
	it := elemsOfBytes(spec)
	for {
		k, v, ok := it.next()
		if !ok {
			return s, nil
		}
		name := string(k)
		if _, err := splitFieldPath(name); err != nil {
			return nil, err
		}
		switch {
		case isNumeric(v):
			f, _ := bsonx.AsFloat64(v)
			if f != 1 && f != -1 {
				return nil, errorf(codeSortBadDirection, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
			}
			s.keys = append(s.keys, sortKey{path: newPath(name), desc: f == -1})
		case v.Type == bsoncore.TypeEmbeddedDocument:
			if firstField(v) != "$meta" {
				return nil, errorf(codeSortMeta, "$meta is the only expression supported by $sort right now")
			}
			if !isTextScoreMeta(v) {
				return nil, badValue("$meta sort other than textScore is not supported yet")
			}
			// A text plan carries the score in TextScoreField; higher
			// scores first, as MongoDB sorts textScore.
			s.keys = append(s.keys, sortKey{path: newPath(TextScoreField), desc: true})
		default:
			return nil, errorf(codeSortBadValue, "Illegal key in $sort specification: %s: %s", name, v)
		}
	}
}

// Len is the number of keys; a Sort with none leaves the input order.
func (s *Sort) Len() int { return len(s.keys) }

// Key extracts the sort key of doc: one value per sort path. The values
// point into doc.
func (s *Sort) Key(doc bsoncore.Document) []bsoncore.Value {
	return s.appendKey(nil, doc)
}

func (s *Sort) appendKey(dst []bsoncore.Value, doc bsoncore.Document) []bsoncore.Value {
	for _, k := range s.keys {
		c := keyCollector{desc: k.desc, coll: s.coll}
		st := state{pos: -1}
		w := walker{pred: &c, expand: true, sortKeys: true, st: &st}
		w.fromDoc(doc, k.path.parts, -1)
		dst = append(dst, c.result())
	}
	return dst
}

// CompareKeys compares two keys made by Key, honouring directions.
func (s *Sort) CompareKeys(a, b []bsoncore.Value) int {
	for i, k := range s.keys {
		c := bsonx.CompareWith(a[i], b[i], s.coll)
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// Compare compares two documents by the sort (0 for ties).
func (s *Sort) Compare(a, b bsoncore.Document) int {
	return s.CompareKeys(s.Key(a), s.Key(b))
}

// keyCollector is a pred that sees every value a path reaches (a walker in
// sortKeys mode) and keeps the smallest, or the largest; it never
// "matches", so the walk visits all values.
type keyCollector struct {
	desc bool
	coll bsonx.Collator
	best bsoncore.Value
	has  bool
}

func (c *keyCollector) matchValue(v bsoncore.Value, _ *state) bool {
	if v.Type == 0 {
		v = nullKey
	}
	if !c.has {
		c.best, c.has = v, true
		return false
	}
	cmp := bsonx.CompareWith(v, c.best, c.coll)
	if c.desc && cmp > 0 || !c.desc && cmp < 0 {
		c.best = v
	}
	return false
}

func (c *keyCollector) result() bsoncore.Value {
	if !c.has {
		return nullKey
	}
	return c.best
}
