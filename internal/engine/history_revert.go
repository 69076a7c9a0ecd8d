package engine

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// RevertDocument makes version v of the document of ns whose _id is id its
// latest version again, in one request: the document becomes version v's
// content (as a replacement, a new version recorded "replace"), or, when
// it is deleted, is inserted again with it (a new version recorded
// "insert"). It returns the new version's number.
//
// Errors: NamespaceNotFound for a missing collection, InvalidOptions for
// an unversioned one, BadValue when version v is not retained (never
// written, or pruned) or is a tombstone.
func (e *Engine) RevertDocument(ns Namespace, id bsoncore.Value, v uint64) (uint64, error) {
	var next uint64
	err := e.db.Write(func(tx *storage.Txn) error {
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
		}
		ver, ok := VersioningOf(coll)
		if !ok {
			return mongoerr.New(mongoerr.InvalidOptions, "revertDocument needs a versioned collection; %s is not versioned", ns)
		}
		idKey := appendIDKey(nil, id)
		hid := append(storage.Prefix(nil, storage.SpaceHistory, coll.ID), idKey...)
		it, err := tx.NewIter(hid, storage.PrefixEnd(hid))
		if err != nil {
			return err
		}
		found, err := seekVersion(tx, it, coll.ID, idKey, hid, v)
		var rec []byte
		if found && err == nil {
			var val []byte
			if val, err = it.Value(); err == nil {
				rec = append(rec, val...)
			}
		}
		if err = errors.Join(err, it.Close()); err != nil {
			return err
		}
		if !found {
			return mongoerr.New(mongoerr.BadValue, "version %d of _id %s of %s does not exist or is no longer retained", v, id, ns)
		}
		old, ok, err := recordDoc(rec)
		if err != nil {
			return err
		}
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "version %d of _id %s of %s is a delete; delete the document instead", v, id, ns)
		}
		key := storage.DocKey(nil, coll.ID, idKey)
		cur, exists, err := tx.Get(nil, key)
		if err != nil {
			return err
		}
		if exists {
			var res ModifyResult
			if err := e.applyAction(tx, &res, ns, key, idKey, id, cur, Action{Replace: old, Replacement: true}); err != nil {
				return err
			}
			next = versionOf(cur, ver.Field)
			if res.Modified > 0 {
				next++
			}
			return nil
		}
		if next, err = lastVersion(tx, coll.ID, idKey); err != nil {
			return err
		}
		next++ // the version insertOne gives it
		return e.insertOne(tx, ns, coll.ID, key, prepared{doc: old, id: id, idKey: idKey}, false)
	})
	return next, err
}
