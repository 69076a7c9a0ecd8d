package engine

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Riders are writes that describe another write and must commit in the
// same commit-pipeline request as it (DESIGN.md §8): a retryable write's
// record of executed statements (package session) rides on the insert,
// update or delete it records, so after a crash either both are on disk or
// neither is. InsertOptions.Rider and ModifyOptions.Rider run at the end
// of the write's request; WriteRider runs a rider alone when a statement
// changed nothing but must still be recorded. Inside a rider, PutInTxn,
// GetInTxn and DeleteInTxn change server-owned collections (such as
// config.transactions) with their indexes, as the request sees them.

// WriteRider runs fn as a request of its own: its writes commit together
// or not at all.
func (e *Engine) WriteRider(fn func(tx *storage.Txn) error) error {
	return e.db.Write(func(tx *storage.Txn) error {
		e.oplog.lastTS = 0
		return fn(tx)
	})
}

// GetInTxn appends the document of ns whose _id is id, as the request tx
// sees it (its own writes included), to dst.
func (e *Engine) GetInTxn(tx *storage.Txn, dst []byte, ns Namespace, id bsoncore.Value) ([]byte, bool, error) {
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return dst, false, nil
	}
	return tx.Get(dst, storage.DocKey(nil, coll.ID, appendIDKey(nil, id)))
}

// PutInTxn stores doc (which must have an _id) in ns inside tx, replacing
// the document with the same _id if there is one, keeping indexes; the
// collection is created when missing. It is for collections the server
// owns (config.transactions, config.system.sessions): no validator, no
// capped limits, no name check.
func (e *Engine) PutInTxn(tx *storage.Txn, ns Namespace, doc bsoncore.Document) error {
	id, err := doc.LookupErr("_id")
	if err != nil {
		return mongoerr.New(mongoerr.InternalError, "engine: a server document for %s has no _id", ns)
	}
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	if coll == nil {
		if coll, err = e.cat.CreateCollection(tx, ns.DB, ns.Coll, nil); err != nil {
			return err
		}
	}
	idKey := appendIDKey(nil, id)
	key := storage.DocKey(nil, coll.ID, idKey)
	if plainServerColl(coll, ns) && e.txn.in == nil {
		return e.putPlain(tx, ns, coll, key, doc)
	}
	cur, found, err := tx.Get(nil, key)
	if err != nil {
		return err
	}
	if !found {
		p := prepared{doc: doc, id: id, idKey: idKey}
		return e.insertOne(tx, ns, coll.ID, key, p, true)
	}
	var res ModifyResult
	return e.applyAction(tx, &res, ns, key, idKey, id, cur, Action{Replace: doc, BypassValidation: true})
}

// plainServerColl reports whether a put into coll (ns) is a store of the
// document's key and nothing more, whether it inserts or replaces
// (invariant "Plain puts need no read"): no options (so not capped,
// versioned, validated, time-series or keeping pre-images), no index but
// _id's, and no oplog entry (config.transactions, config.system.preimages).
func plainServerColl(coll *catalog.Collection, ns Namespace) bool {
	return len(coll.Options) == 0 && len(coll.Indexes) == 0 && !logged(ns)
}

// putPlain is PutInTxn into a plain collection (plainServerColl), outside
// a transaction's statement: the key is set without reading what it held
// (an insert and a replacement store the same bytes and nothing else), and
// the collection's tail bound is loaded (before the key is written, as
// insertOne's) and raised past the key, which may be new ("Tail bound").
// A retryable write's config.transactions record is put this way: the
// read spared is a second point read per write (BENCHMARKS.md, session
// 14's "CPU per update").
func (e *Engine) putPlain(tx *storage.Txn, ns Namespace, coll *catalog.Collection, key []byte, doc bsoncore.Document) error {
	if invariants.Enabled {
		if _, capped := CappedOf(coll); capped || PreImagesOn(coll) {
			invariants.Fail("Plain puts need no read", "%s is capped or keeps pre-images without options", ns)
		}
		if _, versioned := e.versioningOfNS(ns); versioned {
			invariants.Fail("Plain puts need no read", "%s is versioned without options", ns)
		}
		if el, err := doc.IndexErr(0); err != nil || el.Key() != "_id" {
			invariants.Fail("Plain puts need no read", "a server document for %s does not start with its _id", ns)
		}
	}
	if _, err := e.tails.beyond(tx, coll.ID, key); err != nil {
		return err
	}
	tx.Set(key, doc)
	e.tails.raise(coll.ID, key)
	return nil
}

// DeleteInTxn removes the document of ns whose _id is id inside tx, with
// its index entries; a missing one is not an error.
func (e *Engine) DeleteInTxn(tx *storage.Txn, ns Namespace, id bsoncore.Value) error {
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil
	}
	idKey := appendIDKey(nil, id)
	key := storage.DocKey(nil, coll.ID, idKey)
	cur, found, err := tx.Get(nil, key)
	if err != nil || !found {
		return err
	}
	var res ModifyResult
	return e.applyAction(tx, &res, ns, key, idKey, id, cur, Action{Delete: true})
}
