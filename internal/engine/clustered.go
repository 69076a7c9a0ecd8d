package engine

import (
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// Clustered collections. Every Cairn collection stores its documents by
// _id (DESIGN.md §2), which is what MongoDB's clustered collections add:
// a collection created with clusteredIndex differs in what it lists
// (listCollections' clusteredIndex option and no idIndex; listIndexes'
// clustered: true), in explain (CLUSTERED_IXSCAN for an _id range), and in
// its TTL, expireAfterSeconds on the _id itself.

// ClusteredOf returns the clusteredIndex option of c ({v, key, name,
// unique}) and whether c is clustered.
func ClusteredOf(c *catalog.Collection) (bsoncore.Document, bool) {
	if c == nil || len(c.Options) == 0 {
		return nil, false
	}
	d, ok := bsoncore.Document(c.Options).Lookup("clusteredIndex").DocumentOK()
	return d, ok
}

// Clustered reports whether the collection read is clustered.
func (r *Reader) Clustered() bool { _, ok := ClusteredOf(r.coll); return ok }

// ClusteredTTL is a clustered collection with expireAfterSeconds.
type ClusteredTTL struct {
	NS          Namespace
	ExpireAfter time.Duration
}

// ClusteredTTLs lists the clustered collections with expireAfterSeconds.
func (e *Engine) ClusteredTTLs() []ClusteredTTL {
	var out []ClusteredTTL
	for _, c := range e.cat.Current().Collections("") {
		if _, ok := ClusteredOf(c); !ok {
			continue
		}
		v, err := bsoncore.Document(c.Options).LookupErr("expireAfterSeconds")
		if err != nil {
			continue
		}
		if n, ok := v.AsInt64OK(); ok {
			out = append(out, ClusteredTTL{NS: Namespace{DB: c.DB, Coll: c.Name}, ExpireAfter: time.Duration(n) * time.Second})
		}
	}
	return out
}

// DeleteExpiredIDs deletes the documents of ns whose _id is a date before
// cutoff (a clustered collection's TTL; other _id types never expire, as
// in MongoDB). Documents are stored in _id order, so the dates before the
// cutoff are one key range.
func (e *Engine) DeleteExpiredIDs(ns Namespace, cutoff time.Time) (int, error) {
	lo := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MinInt64)}
	hi := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, cutoff.UnixMilli())}
	return e.deleteIDRange(ns, lo, hi)
}

// deleteIDRange deletes the documents of ns with lo <= _id < hi.
func (e *Engine) deleteIDRange(ns Namespace, lo, hi bsoncore.Value) (int, error) {
	return e.deleteScanned(ns, &lo, &hi, nil)
}

// deleteScanned deletes the documents of ns, those with lo <= _id < hi
// when given, that expired reports (every one when nil), through Modify in
// batches of ttlBatch (expiryBatch).
func (e *Engine) deleteScanned(ns Namespace, lo, hi *bsoncore.Value, expired func(bsoncore.Document) bool) (int, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return 0, nil
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	start, end := prefix, storage.PrefixEnd(prefix)
	if lo != nil {
		start = keystring.Append(append([]byte(nil), prefix...), *lo)
	}
	if hi != nil {
		end = keystring.Append(append([]byte(nil), prefix...), *hi)
	}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(start, end)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := expiryBatch{e: e, ns: ns, fn: func(_ int, cur bsoncore.Document) (Action, error) {
		return Action{Delete: cur != nil}, nil
	}}
	for ok := it.First(); ok; ok = it.Next() {
		if expired != nil {
			v, err := it.Value()
			if err != nil {
				return b.deleted, err
			}
			if !expired(v) {
				continue
			}
		}
		id, _, err := keystring.Decode(it.Key()[len(prefix):])
		if err != nil {
			return b.deleted, err
		}
		if err := b.add(id); err != nil {
			return b.deleted, err
		}
	}
	return b.deleted, b.flush()
}
