package engine

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Action is what a Modify callback decides for one document.
type Action struct {
	// Replace is the document's new content; it may omit _id (kept) but not
	// change it. Nil (with Delete false) leaves the document as it is.
	Replace bsoncore.Document
	// Delete removes the document.
	Delete bool
	// BypassValidation stores Replace without checking the collection's
	// validator (bypassDocumentValidation).
	BypassValidation bool
	// Replacement says Replace is a whole new document (a replacement
	// update, $merge) rather than the result of update operators: in a
	// versioned collection its version field is overwritten, where an
	// update that changes it is refused (ImmutableField).
	Replacement bool
	// KeepStored copies the bytes Replace or Insert is stored as (its _id
	// first) into ModifyResult.Stored, for a reply that shows the document
	// as stored (findAndModify's new: true) without reading it back.
	KeepStored bool
	// Insert, for a document that does not exist (fn got nil), inserts
	// this one instead, as an insert does (the collection made if need
	// be, validated unless BypassValidation, unique and capped rules
	// applied) in the same pipeline request: an upsert that read nothing
	// inserts without a commit of its own. It must carry its _id (an
	// upsert of one _id has the filter's).
	Insert bsoncore.Document
}

// ModifyResult counts what a Modify did.
type ModifyResult struct {
	Matched  int // documents found and handed to the callback
	Modified int // documents rewritten with different bytes
	Deleted  int
	Inserted int // documents an Insert action stored
	Errors   []WriteError
	// Stored is the stored image of the last Replace whose Action asked
	// for it (KeepStored), written or equal to the document already.
	Stored bsoncore.Document
}

// Modify runs fn on the current version of each document named in ids, in
// order, inside one commit, and applies its Action. Because it runs on the
// commit pipeline ("Serial apply"), the read-modify-write of each document is
// atomic: no concurrent write slips between fn's read and its write.
//
// fn receives nil for a document that no longer exists (deleted since the
// caller chose it, or never made, its collection included), for which it
// may ask for an Insert, and may return an error for that document alone;
// with ordered, Modify then stops. cur aliases pipeline memory: fn must copy what
// it keeps. A Replace equal to the current bytes is not written and does not
// count as modified (MongoDB's nModified).
func (e *Engine) Modify(ns Namespace, ids []bsoncore.Value, ordered bool, fn func(i int, cur bsoncore.Document) (Action, error)) (ModifyResult, error) {
	return e.ModifyWith(ns, ids, ModifyOptions{Ordered: ordered}, fn)
}

// ModifyOptions are the options of ModifyWith.
type ModifyOptions struct {
	// Ordered stops at the first document whose change fails.
	Ordered bool
	// Rider, when set, runs at the end of the request with what it did;
	// what it writes commits with the changes or not at all, and its error
	// fails the whole request (rider.go).
	Rider func(tx *storage.Txn, res ModifyResult) error
	// Session, when set, is written into the changes' oplog entries
	// (lsid, txnNumber, stmtId StmtIDs[0]).
	Session *OplogSession
	// Txn, when set, makes the changes a statement of that transaction
	// (txn.go).
	Txn *Txn
	// Ctx, when set, bounds a plain write's wait for the documents a
	// prepared transaction holds (maxTimeMS, killOp: its cause is the
	// error); nil waits at most preparedWriteWait (prepare_conflicts.go).
	Ctx context.Context
}

// ModifyWith is Modify with every option.
func (e *Engine) ModifyWith(ns Namespace, ids []bsoncore.Value, opts ModifyOptions, fn func(i int, cur bsoncore.Document) (Action, error)) (ModifyResult, error) {
	if err := refuseOplogWrite(ns); err != nil {
		return ModifyResult{}, err
	}
	if opts.Txn == nil {
		if err := e.waitPreparedDocs(opts.Ctx, ns, ids, nil); err != nil { // prepare_conflicts.go
			return ModifyResult{}, err
		}
	}
	// The request's state and the function the pipeline runs come from a
	// pool ("A Modify's request from a pool", doc.go): the pipeline is
	// done with both once write returns.
	m := modifyRuns.Get().(*modifyRun)
	m.e, m.ns, m.ids, m.opts, m.fn = e, ns, ids, opts, fn
	err := e.write(opts.Txn, ns, m.run)
	res := m.res
	*m = modifyRun{run: m.run}
	modifyRuns.Put(m)
	if err != nil {
		return ModifyResult{}, err
	}
	return res, nil
}

// modifyRun is one ModifyWith's request: its arguments, what it did, and
// run, its apply bound once per modifyRun (pooled: modifyRuns).
type modifyRun struct {
	e    *Engine
	ns   Namespace
	ids  []bsoncore.Value
	opts ModifyOptions
	fn   func(i int, cur bsoncore.Document) (Action, error)
	res  ModifyResult
	run  func(tx *storage.Txn) error
}

var modifyRuns = sync.Pool{New: func() any {
	m := new(modifyRun)
	m.run = m.apply
	return m
}}

// apply is a ModifyWith's pipeline request: fn on each document of ids as
// tx reads it, and its Action applied.
func (m *modifyRun) apply(tx *storage.Txn) error {
	e, ns, opts := m.e, m.ns, &m.opts
	res := &m.res
	*res = ModifyResult{}
	e.oplog.lastTS = 0
	if s := opts.Session; s != nil {
		e.oplog.sess = s
		if len(s.StmtIDs) > 0 {
			e.oplog.stmt = s.StmtIDs[0]
		}
		defer func() { e.oplog.sess = nil }()
	}
	coll := e.writeCollection(ns)
	// The buffers of the last request, reused: the storage Txn copies
	// what it keeps, and fn copies what it keeps of cur. A ModifyWith
	// inside fn (none today) would find none and make its own.
	bufs := e.modBufs
	if bufs == nil {
		bufs = new(modifyBufs)
	}
	e.modBufs = nil
	defer func() {
		if cap(bufs.cur) <= maxKeptModifyBuf {
			e.modBufs = bufs
		}
	}()
	key, cur, idKey := bufs.key[:0], bufs.cur[:0], bufs.idKey[:0]
	defer func() { bufs.key, bufs.cur, bufs.idKey = key, cur, idKey }()
	for i, id := range m.ids {
		var found bool
		var err error
		if coll != nil {
			idKey = appendIDKey(idKey[:0], id)
			key = storage.DocKey(key[:0], coll.ID, idKey)
			cur, found, err = tx.Get(cur[:0], key)
			if err != nil {
				return err
			}
		}
		var doc bsoncore.Document
		if found {
			doc = cur
			res.Matched++
		}
		act, err := m.fn(i, doc)
		switch {
		case err != nil:
		case found:
			err = e.applyAction(tx, res, ns, key, idKey, id, doc, act)
		case act.Insert != nil:
			var read []byte // the key found absent, if the collection exists
			if coll != nil {
				read = key
			}
			coll, err = e.insertAction(tx, res, ns, act, read)
		}
		if err != nil {
			res.Errors = append(res.Errors, WriteError{Index: i, Err: err})
			if opts.Ordered {
				break
			}
		}
	}
	if opts.Rider != nil {
		return opts.Rider(tx, *res)
	}
	return nil
}

// modifyBufs are a ModifyWith request's buffers: the document key, the
// _id's keystring and the current document as read.
type modifyBufs struct{ key, cur, idKey []byte }

// maxKeptModifyBuf bounds the document buffer kept between requests, so one
// large document does not stay on the heap.
const maxKeptModifyBuf = 64 << 10

// applyAction writes one document's Action, and its index changes, inside
// tx: all or nothing.
func (e *Engine) applyAction(tx *storage.Txn, res *ModifyResult, ns Namespace, key, idKey []byte, id bsoncore.Value, cur bsoncore.Document, act Action) error {
	sp := tx.Savepoint()
	switch {
	case act.Delete:
		tx.Delete(key)
		if ver, ok := e.versioningOfNS(ns); ok {
			e.recordVersion(tx, storage.CollectionOfKey(key), idKey, versionOf(cur, ver.Field)+1, opDelete, nil)
		}
		if err := e.indexDelete(tx, ns, cur, idKey); err != nil {
			tx.RollbackTo(sp)
			return err
		}
		if collID, _, capped := e.cappedOfNS(ns); capped {
			if err := cappedDelete(tx, collID, idKey, len(cur)); err != nil {
				tx.RollbackTo(sp)
				return err
			}
		}
		e.logStored(tx, 'd', ns, nil, id) // "Change and entry commit together"
		if err := e.storePreImage(tx, ns, cur); err != nil {
			tx.RollbackTo(sp)
			return err
		}
		res.Deleted++
	case act.Replace != nil:
		next, err := prepareReplacement(act.Replace, id)
		if err != nil {
			return err
		}
		ver, versioned := e.versioningOfNS(ns)
		var v uint64
		if versioned {
			if next, v, err = versionReplace(ver, cur, next, act.Replacement); err != nil {
				return err
			}
			if next == nil {
				if act.KeepStored {
					res.Stored = append(res.Stored[:0], cur...)
				}
				return nil // a no-op update writes nothing
			}
		}
		if act.KeepStored {
			res.Stored = append(res.Stored[:0], next...)
		}
		if !versioned && string(next) == string(cur) {
			return nil // a no-op update writes nothing
		}
		if err := e.validateUpdate(ns, cur, next, act.BypassValidation); err != nil {
			return err
		}
		tx.Set(key, next)
		if versioned {
			op := opUpdate
			if act.Replacement {
				op = opReplace
			}
			e.recordVersion(tx, storage.CollectionOfKey(key), idKey, v, op, next)
		}
		if err := e.indexReplace(tx, ns, cur, next, idKey); err != nil {
			tx.RollbackTo(sp)
			return err
		}
		if collID, _, capped := e.cappedOfNS(ns); capped {
			// MongoDB 7.0 lets updates change a capped document's size;
			// the limits are enforced again at the next insert.
			if err := cappedResize(tx, collID, idKey, len(cur), len(next)); err != nil {
				tx.RollbackTo(sp)
				return err
			}
		}
		if logged(ns) { // not config.transactions' record of every retryable write: no diff to build
			var o bsoncore.Document
			o, e.oplog.obuf = updateEntry(e.oplog.obuf, cur, next, act.Replacement)
			e.logStored(tx, 'u', ns, o, id) // "Change and entry commit together"
		}
		if err := e.storePreImage(tx, ns, cur); err != nil {
			tx.RollbackTo(sp)
			return err
		}
		res.Modified++
	}
	return nil
}

// insertAction stores act.Insert for a document Modify did not find, as
// InsertWith stores one, and returns the collection (made if need be).
// read is the key Modify found absent (nil when the collection did not
// exist): an insert at that key skips insertOne's uniqueness read.
func (e *Engine) insertAction(tx *storage.Txn, res *ModifyResult, ns Namespace, act Action, read []byte) (*catalog.Collection, error) {
	p, err := prepareInsert(act.Insert, func() (bsoncore.Value, error) {
		return bsoncore.Value{}, errInsertNeedsID
	})
	if err != nil {
		return e.writeCollection(ns), err
	}
	existed := e.writeCollection(ns) != nil
	coll, err := e.ensureCollection(tx, ns)
	if err != nil {
		return nil, err
	}
	key := storage.DocKey(nil, coll.ID, p.idKey)
	p.absent = !existed || bytes.Equal(key, read) // a new collection holds nothing
	if err := e.insertOne(tx, ns, coll.ID, key, p, act.BypassValidation); err != nil {
		return coll, err
	}
	res.Inserted++
	if act.KeepStored {
		// As stored: insertOne may have stamped a version field.
		stored, _, err := tx.Get(res.Stored[:0], key)
		if err != nil {
			return coll, err
		}
		res.Stored = stored
	}
	return coll, nil
}

// errInsertNeedsID: an Insert action's document carries its _id (ids are
// made before the pipeline, not in it).
var errInsertNeedsID = errors.New("engine: a Modify insert needs an _id")

// prepareReplacement validates a replacement for the document whose _id is
// id and puts _id first.
func prepareReplacement(doc bsoncore.Document, id bsoncore.Value) (bsoncore.Document, error) {
	top, err := scanDoc(doc, false) // one walk: "Top-level scan agrees"
	switch {
	case err != nil:
		return nil, mongoerr.New(mongoerr.BadValue, "invalid BSON document: %v", err)
	case top.ids > 1: // MongoDB's storage validation of an update's result
		return nil, mongoerr.New(mongoerr.BadValue, "Can't have multiple _id fields in one document")
	case top.ids == 1 && !sameID(top.id, id):
		return nil, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s", top.id)
	case !top.idFirst:
		doc = withIDFirst(doc, id)
	}
	if len(doc) > MaxDocumentSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "Resulting document after update is larger than %d", MaxDocumentSize)
	}
	return doc, nil
}
