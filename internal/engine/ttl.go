package engine

import (
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// Expiry of documents through TTL indexes. The engine finds and deletes
// expired documents; package ttl decides when.

// TTLIndex is an index with expireAfterSeconds.
type TTLIndex struct {
	NS          Namespace
	Name        string
	ExpireAfter time.Duration
}

// TTLIndexes lists every ready TTL index of every collection. Only
// ascending or descending single-field indexes expire documents (a hashed
// key does not order dates).
func (e *Engine) TTLIndexes() ([]TTLIndex, error) {
	var out []TTLIndex
	for _, c := range e.cat.Current().Collections("") {
		for _, ix := range c.Indexes {
			if ix.Building {
				continue
			}
			spec, err := e.specs.get(ix)
			if err != nil {
				return nil, err
			}
			if ttlUsable(spec) {
				out = append(out, TTLIndex{NS: Namespace{DB: c.DB, Coll: c.Name}, Name: ix.Name,
					ExpireAfter: time.Duration(*spec.ExpireAfterSeconds) * time.Second})
			}
		}
	}
	return out, nil
}

func ttlUsable(s *index.Spec) bool {
	if s.ExpireAfterSeconds == nil || len(s.KeyPattern) != 1 {
		return false
	}
	k := s.KeyPattern[0].Kind
	return k == index.Ascending || k == index.Descending
}

// ttlBatch is how many documents one delete request of a TTL pass holds.
const ttlBatch = 500

// DeleteExpired deletes the documents of ns whose value in TTL index name
// is a date before cutoff (for an array, its earliest date), and returns
// how many it deleted. Values that are not dates never expire. Deletes go
// through Modify, the delete path of every write, so every index of the
// collection stays consistent; each document is checked again inside the
// delete, so one updated since the index was read is kept if no longer
// expired.
func (e *Engine) DeleteExpired(ns Namespace, name string, cutoff time.Time) (int, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return 0, nil
	}
	ix := coll.Index(name)
	if ix == nil || ix.Building {
		return 0, nil
	}
	spec, err := e.specs.get(*ix)
	if err != nil || !ttlUsable(spec) {
		return 0, err
	}
	cut := cutoff.UnixMilli()
	prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
	lo, hi := dateBounds(prefix, cut, spec.KeyPattern[0].Kind == index.Descending)
	snap := e.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(lo, hi)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	expired := func(_ int, cur bsoncore.Document) (Action, error) {
		if cur != nil && expiredDoc(spec, cur, cut) {
			return Action{Delete: true}, nil
		}
		return Action{}, nil
	}
	seen := map[string]bool{}
	b := expiryBatch{e: e, ns: ns, fn: expired}
	for ok := it.First(); ok; ok = it.Next() {
		idKey, err := entryID(it, prefix, spec)
		if err != nil {
			return b.deleted, err
		}
		if seen[string(idKey)] {
			continue
		}
		seen[string(idKey)] = true
		id, _, err := keystring.Decode(idKey)
		if err != nil {
			return b.deleted, err
		}
		if err := b.add(id); err != nil {
			return b.deleted, err
		}
	}
	return b.deleted, b.flush()
}

// expiryBatch deletes the documents a TTL pass finds through Modify, in
// requests of ttlBatch documents, fn deciding again for each inside the
// request.
type expiryBatch struct {
	e       *Engine
	ns      Namespace
	fn      func(int, bsoncore.Document) (Action, error)
	ids     []bsoncore.Value
	deleted int
}

func (b *expiryBatch) add(id bsoncore.Value) error {
	b.ids = append(b.ids, id)
	if len(b.ids) == ttlBatch {
		return b.flush()
	}
	return nil
}

func (b *expiryBatch) flush() error {
	if len(b.ids) == 0 {
		return nil
	}
	res, err := b.e.Modify(b.ns, b.ids, false, b.fn)
	b.deleted += res.Deleted
	b.ids = b.ids[:0]
	return err
}

// dateBounds is the key range of an index on one field holding the dates
// before cut (milliseconds), in the field's direction; it may include the
// date cut itself, which expiredDoc then refuses.
func dateBounds(prefix []byte, cut int64, desc bool) (lo, hi []byte) {
	first := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MinInt64)}
	last := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, cut)}
	p := func(b []byte) []byte { return append(append([]byte(nil), prefix...), b...) }
	if desc {
		return p(keystring.AppendDesc(nil, last)), storage.PrefixEnd(p(keystring.AppendDesc(nil, first)))
	}
	return p(keystring.Append(nil, first)), storage.PrefixEnd(p(keystring.Append(nil, last)))
}

// expiredDoc reports whether doc has a date key before cut in spec (its
// earliest date is before cut).
func expiredDoc(spec *index.Spec, doc bsoncore.Document, cut int64) bool {
	keys, _, err := spec.Keys(doc, nil)
	if err != nil {
		return false
	}
	for _, k := range keys {
		vals, _, err := spec.DecodeKey(k)
		if err != nil || len(vals) != 1 {
			continue
		}
		if ms, ok := vals[0].DateTimeOK(); ok && ms < cut {
			return true
		}
	}
	return false
}

// entryID is the encoded _id of the index entry at it: the value of a
// unique index, the key's tail otherwise.
func entryID(it *storage.Iter, prefix []byte, spec *index.Spec) ([]byte, error) {
	if spec.Unique {
		v, err := it.Value()
		if err != nil {
			return nil, err
		}
		rid, _, err := splitUniqueValue(v)
		return append([]byte(nil), rid...), err
	}
	rest := it.Key()[len(prefix):]
	for range spec.KeyParts() {
		n, err := keystring.Len(rest)
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return append([]byte(nil), rest...), nil
}
