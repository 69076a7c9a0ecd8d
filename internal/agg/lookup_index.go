package agg

import (
	"context"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// IndexCatalog is a Catalog that can also read the documents of a
// collection whose field equals one of some values through an index on that
// field. $lookup with localField/foreignField uses it, per input document,
// instead of holding the whole foreign collection and scanning it for
// every input document.
type IndexCatalog interface {
	Catalog
	// FindIn returns the documents of db.coll matching {path: {$in: vals}}
	// under the collation by (nil: simple), read through an index on path
	// that can answer that (for strings, one of the same collation). ok is
	// false (and the Source nil) when no index can serve that query; the
	// caller then reads the collection.
	FindIn(ctx context.Context, db, coll, path string, vals []bsoncore.Value, by *collation.Collator) (src Source, ok bool, err error)
}

// lookupReader finds the foreign documents of one $lookup run: those equal
// on foreignField through the catalog's index when it has one, else from
// the whole foreign collection, read once on first need and held.
type lookupReader struct {
	l        *lookupStage
	rc       *runContext
	noIndex  bool // the catalog has no index on foreignField
	all      []bsoncore.Document
	haveAll  bool
	localBuf []bsoncore.Value
}

// candidates returns the foreign documents for input d: with
// localField/foreignField, those that match by equality; without, all.
func (r *lookupReader) candidates(d bsoncore.Document) ([]bsoncore.Document, error) {
	if r.l.hasFields && !r.noIndex {
		if ic, ok := r.rc.opts.Catalog.(IndexCatalog); ok && r.l.from != "" {
			vals := r.localValues(d)
			if indexable(vals) {
				src, ok, err := ic.FindIn(r.rc.ctx, r.rc.opts.DB, r.l.from, r.l.foreignField, vals, r.rc.opts.Collation)
				if err != nil {
					return nil, err
				}
				if ok {
					return ReadAll(src)
				}
				r.noIndex = true
			}
		}
	}
	if !r.haveAll {
		r.haveAll = true
		var err error
		if r.all, err = readCollection(r.rc, r.l.from); err != nil {
			return nil, err
		}
	}
	if !r.l.hasFields {
		return r.all, nil
	}
	return r.l.equalityMatches(r.rc, d, r.all)
}

// localValues are the values $lookup matches foreignField against: every
// value localField reaches, or null when it reaches none.
func (r *lookupReader) localValues(d bsoncore.Document) []bsoncore.Value {
	r.localBuf = valuesAlongPath(docValue(d), r.l.localPath, r.localBuf[:0])
	if len(r.localBuf) == 0 {
		r.localBuf = append(r.localBuf, expr.Null)
	}
	return r.localBuf
}

// indexable reports whether {f: {$in: vals}} is plain key equality that an
// index answers exactly: arrays and regular expressions (which $in matches
// differently) and undefined are left to the in-memory match.
func indexable(vals []bsoncore.Value) bool {
	for _, v := range vals {
		switch v.Type {
		case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
			return false
		}
	}
	return true
}
