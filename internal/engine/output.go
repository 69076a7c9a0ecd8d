package engine

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Writes of the aggregation stages $out and $merge. Both go through the
// same insert and replace paths as the write commands, inside the commit
// pipeline, so every index of the target stays consistent.

// TempOutPrefix starts the names of the collections $out fills before
// renaming them onto its target, as in MongoDB ("tmp.agg_out.<uuid>").
const TempOutPrefix = "tmp.agg_out."

// dropTempOutCollections drops what a $out interrupted by a crash left
// behind: nothing else refers to a temporary collection, and MongoDB drops
// them at startup too. Open calls it before index builds resume, so none
// is rebuilt for a collection about to go.
func (e *Engine) dropTempOutCollections() error {
	var stale []*catalog.Collection
	for _, c := range e.cat.Current().Collections("") {
		if strings.HasPrefix(c.Name, TempOutPrefix) {
			stale = append(stale, c)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	err := e.db.Write(func(tx *storage.Txn) error {
		for _, c := range stale {
			e.cat.DropCollection(tx, c.DB, c.Name)
		}
		return nil
	})
	if err == nil {
		e.log.Info("dropped temporary $out collections left by an earlier run", "count", len(stale))
	}
	return err
}

// ReplaceCollection renames from onto to, dropping to, in one commit: the
// atomic last step of $out. check sees to's metadata as it is inside that
// commit (nil when to does not exist) and may refuse, for instance when its
// options or indexes changed while from was being filled.
func (e *Engine) ReplaceCollection(from, to Namespace, check func(cur *catalog.Collection) error) error {
	if err := catalog.ValidateCollectionName(from.DB, from.Coll); err != nil {
		return err
	}
	if err := catalog.ValidateUserCollectionName(to.DB, to.Coll); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		if _, ok := VersioningOf(e.cat.Working().Collection(to.DB, to.Coll)); ok {
			// Replacing it would drop every version it keeps.
			return mongoerr.New(mongoerr.InvalidOptions, "$out cannot replace versioned collection %s: its history would be lost; use $merge", to)
		}
		if check != nil {
			if err := check(e.cat.Working().Collection(to.DB, to.Coll)); err != nil {
				return err
			}
		}
		return e.cat.RenameCollection(tx, from.DB, from.Coll, to.DB, to.Coll, true)
	})
}

// MergeAction is what a Merge callback decides for one incoming document.
// Both nil means leave the target as it is (discard, keepExisting).
type MergeAction struct {
	// Insert is a new document to store (only when nothing matched); it
	// gets an _id if it has none.
	Insert bsoncore.Document
	// Replace is the matched document's new content; it may omit _id
	// (kept) but not change it (ImmutableField).
	Replace bsoncore.Document
	// BypassValidation writes without checking the target's validator
	// (bypassDocumentValidation).
	BypassValidation bool
}

// MergeResult counts what a Merge did. Err is the first failing document's
// error; the documents before it are written, the ones after it are not
// attempted (a failed $merge leaves what it wrote, as in MongoDB).
type MergeResult struct {
	Inserted, Matched, Modified int
	Err                         error
}

// Merge matches each of docs against ns and applies what fn decides, in
// order, in one commit. A document is matched by _id when by is "", else
// through the unique index named by, whose key the document must yield
// exactly once (the caller checks the fields are present and not arrays).
// fn receives the matched document, or nil; cur aliases pipeline memory.
// The collection is created when the first document is inserted.
func (e *Engine) Merge(ns Namespace, by string, docs []bsoncore.Document, fn func(i int, doc, cur bsoncore.Document) (MergeAction, error)) (MergeResult, error) {
	var res MergeResult
	err := e.db.Write(func(tx *storage.Txn) error {
		res = MergeResult{}
		m := merger{e: e, tx: tx, ns: ns, by: by}
		for i, d := range docs {
			if err := m.one(&res, i, d, fn); err != nil {
				res.Err = err
				break
			}
		}
		return nil
	})
	if err != nil {
		return MergeResult{}, err
	}
	return res, nil
}

// merger carries one Merge request's state inside the commit pipeline.
type merger struct {
	e           *Engine
	tx          *storage.Txn
	ns          Namespace
	by          string
	key, holder []byte
	cur         []byte
}

// one matches and writes one document: all or nothing.
func (m *merger) one(res *MergeResult, i int, doc bsoncore.Document, fn func(int, bsoncore.Document, bsoncore.Document) (MergeAction, error)) error {
	coll := m.e.cat.Working().Collection(m.ns.DB, m.ns.Coll)
	var idKey []byte
	var found bool
	if coll != nil {
		var err error
		if idKey, err = m.match(coll, doc); err != nil {
			return err
		}
		if idKey != nil {
			m.key = storage.DocKey(m.key[:0], coll.ID, idKey)
			if m.cur, found, err = m.tx.Get(m.cur[:0], m.key); err != nil {
				return err
			}
		}
	}
	var cur bsoncore.Document
	if found {
		cur = m.cur
		res.Matched++
	}
	act, err := fn(i, doc, cur)
	if err != nil {
		return err
	}
	switch {
	case act.Replace != nil && found:
		id, err := cur.LookupErr("_id")
		if err != nil {
			return mongoerr.New(mongoerr.InternalError, "stored document without _id in %s", m.ns)
		}
		var mr ModifyResult
		if err := m.e.applyAction(m.tx, &mr, m.ns, m.key, idKey, id, cur, Action{Replace: act.Replace, BypassValidation: act.BypassValidation, Replacement: true}); err != nil {
			return err
		}
		res.Modified += mr.Modified
	case act.Insert != nil:
		if coll == nil {
			if coll, err = m.e.ensureCollection(m.tx, m.ns); err != nil {
				return err
			}
		}
		p, err := prepareInsert(act.Insert, m.e.idMaker(m.ns))
		if err != nil {
			return err
		}
		if err := m.e.insertOne(m.tx, m.ns, coll.ID, storage.DocKey(nil, coll.ID, p.idKey), p, act.BypassValidation); err != nil {
			return err
		}
		res.Inserted++
	}
	return nil
}

// match returns the encoded _id of the document doc matches in coll, or
// nil when none does.
func (m *merger) match(coll *catalog.Collection, doc bsoncore.Document) ([]byte, error) {
	if m.by == "" {
		id, err := doc.LookupErr("_id")
		if err != nil {
			return nil, mongoerr.New(mongoerr.InternalError, "$merge on _id: document without _id")
		}
		return appendIDKey(nil, id), nil
	}
	ix := coll.Index(m.by)
	if ix == nil {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "index %s of %s no longer exists", m.by, m.ns)
	}
	spec, err := m.e.specs.get(*ix)
	if err != nil {
		return nil, err
	}
	if !spec.Unique {
		return nil, mongoerr.New(mongoerr.InternalError, "index %s of %s is not unique", m.by, m.ns)
	}
	keys, _, err := spec.Keys(doc, nil)
	if err != nil {
		return nil, err
	}
	if len(keys) != 1 {
		return nil, mongoerr.New(mongoerr.InternalError, "$merge: the document yields %d keys of index %s", len(keys), m.by)
	}
	m.key = append(storage.Prefix(m.key[:0], storage.SpaceIndex, ix.ID), keys[0]...)
	var found bool
	if m.holder, found, err = m.tx.Get(m.holder[:0], m.key); err != nil || !found {
		return nil, err
	}
	rid, _, err := splitUniqueValue(m.holder)
	return append([]byte(nil), rid...), err
}
