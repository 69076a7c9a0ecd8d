package engine

import (
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// ConvertToCapped replaces ns by a capped collection with options (capped,
// size, max, as the command layer normalizes them) holding its newest
// documents that fit, in one commit. As in MongoDB, the result is a new
// collection (a new UUID) with only the _id index: secondary indexes are
// not kept. The documents are copied in natural order (insertion order for
// a capped collection, _id order otherwise), so the last ones stay.
func (e *Engine) ConvertToCapped(ns Namespace, options bson.Raw) error {
	if err := catalog.ValidateCollectionName(ns.DB, ns.Coll); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		src := e.cat.Working().Collection(ns.DB, ns.Coll)
		if src == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "source collection %s does not exist", ns)
		}
		merged := mergeOptions(options, src.Options)
		e.cat.DropCollection(tx, ns.DB, ns.Coll)
		return e.copyInto(tx, src, ns, merged)
	})
}

// CloneCollectionAsCapped copies from into a new capped collection to of
// the same database, in one commit; to must not exist.
func (e *Engine) CloneCollectionAsCapped(from, to Namespace, options bson.Raw) error {
	if err := catalog.ValidateCollectionName(from.DB, from.Coll); err != nil {
		return err
	}
	if err := catalog.ValidateUserCollectionName(to.DB, to.Coll); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		src := e.cat.Working().Collection(from.DB, from.Coll)
		if src == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "source collection %s does not exist", from)
		}
		if e.cat.Working().Collection(to.DB, to.Coll) != nil {
			return mongoerr.New(mongoerr.NamespaceExists, "collection %s already exists", to)
		}
		return e.copyInto(tx, src, to, options)
	})
}

// copyInto creates dst with options and inserts src's documents, as the
// group saw them before this request, in src's natural order, through
// insertOne, so dst's limits apply as they do to any insert.
func (e *Engine) copyInto(tx *storage.Txn, src *catalog.Collection, dst Namespace, options bson.Raw) error {
	coll, err := e.cat.CreateCollection(tx, dst.DB, dst.Coll, options)
	if err != nil {
		return err
	}
	noID := func() (bsoncore.Value, error) {
		return bsoncore.Value{}, errors.New("engine: stored document without _id")
	}
	var key []byte
	return e.eachNatural(tx, src, func(doc []byte) error {
		p, err := prepareInsert(append(bsoncore.Document(nil), doc...), noID)
		if err != nil {
			return err
		}
		key = storage.DocKey(key[:0], coll.ID, p.idKey)
		return e.insertOne(tx, dst, coll.ID, key, p, true)
	})
}

// eachNatural calls fn with every document of c in natural order, as the
// group sees them (not this request's own writes).
func (e *Engine) eachNatural(tx *storage.Txn, c *catalog.Collection, fn func(doc []byte) error) error {
	_, capped := CappedOf(c)
	var lo, hi []byte
	if capped {
		lo, hi = naturalKey(nil, c.ID, 'f'), naturalKey(nil, c.ID, 'f'+1)
	} else {
		lo = storage.Prefix(nil, storage.SpaceDocument, c.ID)
		hi = storage.PrefixEnd(lo)
	}
	it, err := tx.NewIter(lo, hi)
	if err != nil {
		return err
	}
	var dk []byte
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		var v []byte
		if v, err = it.Value(); err != nil {
			break
		}
		if capped {
			var found bool
			rid, _, ok := splitForward(v)
			if !ok {
				continue
			}
			dk = storage.DocKey(dk[:0], c.ID, rid)
			if v, found, err = tx.Get(nil, dk); err != nil || !found {
				continue
			}
		}
		err = fn(v)
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// mergeOptions is capped (capped, size, max) followed by the other
// options of old (a validator, idGenerator), which a conversion keeps.
func mergeOptions(capped, old bson.Raw) bson.Raw {
	out := append(bson.Raw(nil), capped[:len(capped)-1]...)
	elems, _ := bsoncore.Document(old).Elements()
	for _, el := range elems {
		switch el.Key() {
		case "capped", "size", "max":
			continue
		}
		out = append(out, el...)
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}
