package engine

import (
	"bytes"
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Chunk migrations of versioned collections (package shardsvr) move each
// document's whole history, not the document: the donor reads histories
// (ReadHistories, DeletedHistories), the recipient installs them
// (InstallHistories) and a range deletion purges them (PurgeHistories).
//
// A history moves verbatim: every version keeps its number, validFrom and
// record, so the recipient answers $versions, as-of reads and
// compare-and-swap on the version field exactly as the donor did. The
// document is derived from the newest version installed (a tombstone: no
// document), written in the same request as the versions, so "History
// follows documents" holds on the recipient after every request, not only
// at the end of the migration. Installing is idempotent (a version's key
// is its time and number), so a version sent twice — by the clone and by
// the catch-up — counts once.
//
// These writes make no oplog entry (a migration's copies and deletions are
// not the user's changes: MongoDB marks them fromMigrate and change
// streams skip them) and no new version; they replicate as every request
// does, as one committed group.

// DocHistory is one document's history as a migration carries it.
type DocHistory struct {
	ID bsoncore.Value
	// First, when installing, says the recipient holds nothing of ID yet:
	// any version or document of ID already there belongs to another
	// document with the same _id (on another chunk), and the install is
	// refused with DuplicateKey rather than merging two histories.
	First bool
	// Versions, newest first. IDKey is not needed to install.
	Versions []Version
}

// ReadHistories reads, from one snapshot, the versions of each document
// ids[i] whose validFrom is at least from[i] (0: every retained version),
// newest first, and the collection's retention horizon (versions before it
// were pruned: the recipient must refuse as-of reads before it too). A
// document with no such version has no entry.
func (e *Engine) ReadHistories(ns Namespace, ids []bsoncore.Value, from []uint64) ([]DocHistory, hlc.Timestamp, error) {
	r, err := e.NewReader(ns)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	if _, ok := r.Versioning(); !ok {
		return nil, 0, errNotVersionedHistory(ns)
	}
	horizon, err := e.horizons.get(e.db, r.coll.ID)
	if err != nil {
		return nil, 0, err
	}
	var out []DocHistory
	for i, id := range ids {
		var since uint64
		if i < len(from) {
			since = from[i]
		}
		h, err := r.history(appendIDKey(nil, id), since)
		if err != nil {
			return nil, 0, err
		}
		if len(h.Versions) > 0 {
			h.ID = copyValue(id)
			out = append(out, h)
		}
	}
	return out, horizon, nil
}

// history reads the versions of the document idKey from validFrom since
// on, newest first, copied out of the iterator.
func (r *Reader) history(idKey []byte, since uint64) (DocHistory, error) {
	hid := append(storage.Prefix(nil, storage.SpaceHistory, r.coll.ID), idKey...)
	it, err := r.snap.NewIter(hid, storage.PrefixEnd(hid))
	if err != nil {
		return DocHistory{}, err
	}
	var h DocHistory
	for ok := it.First(); ok; ok = it.Next() {
		val, err := it.Value()
		if err != nil {
			return h, errors.Join(err, it.Close())
		}
		v, err := decodeRecord(it.Key(), val, len(hid)-len(idKey))
		if err != nil {
			return h, errors.Join(err, it.Close())
		}
		if v.ValidFrom == pendingTS {
			continue // a transaction's, not committed in this snapshot's view
		}
		if v.ValidFrom < since {
			break
		}
		v.IDKey = append([]byte(nil), v.IDKey...)
		if v.Doc != nil {
			v.Doc = append(bsoncore.Document(nil), v.Doc...)
		}
		h.Versions = append(h.Versions, v)
	}
	return h, it.Close()
}

// DeletedHistories lists the documents of ns whose newest version is a
// tombstone, in _id order after the _id startAfter (Type 0: from the
// first), with the document of each one's newest live version (nil when
// retention kept only the tombstone), until about maxBytes of documents;
// more is false when the list is complete. A migration finds by that
// document's shard key whether a deleted document's history is the
// range's.
func (e *Engine) DeletedHistories(ns Namespace, startAfter bsoncore.Value, maxBytes int) (ids []bsoncore.Value, last []bsoncore.Document, more bool, err error) {
	r, err := e.NewReader(ns)
	if err != nil {
		return nil, nil, false, err
	}
	defer r.Close()
	if _, ok := r.Versioning(); !ok {
		return nil, nil, false, errNotVersionedHistory(ns)
	}
	prefix := storage.Prefix(nil, storage.SpaceHistory, r.coll.ID)
	it, err := r.snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return nil, nil, false, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	var ok bool
	if startAfter.Type != 0 {
		ok = it.SeekGE(storage.PrefixEnd(append(append([]byte(nil), prefix...), appendIDKey(nil, startAfter)...)))
	} else {
		ok = it.First()
	}
	size := 0
	for ok {
		if size >= maxBytes {
			return ids, last, true, nil
		}
		k := it.Key()
		if len(k) < len(prefix)+storage.HistorySuffix {
			return nil, nil, false, errCorruptRecord
		}
		hid := append([]byte(nil), k[:len(k)-storage.HistorySuffix]...)
		val, err := it.Value()
		if err != nil {
			return nil, nil, false, err
		}
		if len(val) > 0 && val[0] == opDelete {
			id, _, err := keystring.Decode(hid[len(prefix):])
			if err != nil {
				return nil, nil, false, err
			}
			var doc bsoncore.Document
			if it.Next() && bytes.HasPrefix(it.Key(), hid) && len(it.Key()) == len(hid)+storage.HistorySuffix {
				pv, err := it.Value()
				if err != nil {
					return nil, nil, false, err
				}
				if d, live, err := recordDoc(pv); err == nil && live {
					doc = append(bsoncore.Document(nil), d...)
				}
			}
			ids = append(ids, copyValue(id))
			last = append(last, doc)
			size += len(doc) + len(hid)
		}
		ok = it.SeekGE(storage.PrefixEnd(hid))
	}
	return ids, last, false, nil
}

// InstallHistories writes migrated histories into ns, in one request: each
// version at its own time and number (with its version key), and the
// document as the newest version now held says (a tombstone: none), its
// indexes following. horizon, the donor's retention horizon, raises this
// collection's: an as-of read before it is SnapshotTooOld here too.
//
// Errors: NamespaceNotFound, InvalidOptions for an unversioned collection,
// DuplicateKey when a First history finds something of its _id here or a
// document breaks a unique index.
//
// The versions' times come from the donor's clock: this node's clock first
// observes the newest of them (ClusterTimeFailsRateLimiter when it is too
// far ahead), and the request takes a time of its own above it, so the
// next version written here is newer than every version installed
// ("History follows documents": rising time order) and an as-of read at an
// installed time is not beyond the last committed time.
func (e *Engine) InstallHistories(ns Namespace, docs []DocHistory, horizon hlc.Timestamp) error {
	var newest hlc.Timestamp
	for _, h := range docs {
		for _, v := range h.Versions {
			newest = max(newest, hlc.Timestamp(v.ValidFrom))
		}
	}
	if err := e.db.Clock().Observe(newest); err != nil {
		return err
	}
	var collID uint64
	err := e.db.Write(func(tx *storage.Txn) error {
		if newest > 0 {
			tx.Tick()
		}
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
		}
		if _, ok := VersioningOf(coll); !ok {
			return errNotVersionedHistory(ns)
		}
		collID = coll.ID
		for _, h := range docs {
			if err := e.installHistory(tx, ns, coll.ID, h); err != nil {
				return err
			}
		}
		if horizon > 0 {
			hk := horizonKey(coll.ID)
			old, found, err := tx.Get(nil, hk)
			if err != nil {
				return err
			}
			if ts, ok := hlc.FromBinary(old); !found || !ok || ts < horizon {
				tx.Set(hk, horizon.AppendBinary(nil))
			}
		}
		return nil
	})
	if err == nil && horizon > 0 {
		e.horizons.raise(collID, horizon)
	}
	return err
}

func (e *Engine) installHistory(tx *storage.Txn, ns Namespace, collID uint64, h DocHistory) error {
	if len(h.Versions) == 0 {
		return nil
	}
	idKey := appendIDKey(nil, h.ID)
	key := storage.DocKey(nil, collID, idKey)
	cur, exists, err := tx.Get(nil, key)
	if err != nil {
		return err
	}
	have, err := lastVersion(tx, collID, idKey)
	if err != nil {
		return err
	}
	if h.First && (exists || have > 0) {
		return mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s dup key: { _id: %s }: this shard already holds a document or history with that _id", ns, h.ID)
	}
	newest := h.Versions[0]
	var tb [8]byte
	for _, v := range h.Versions {
		if v.V > newest.V {
			newest = v
		}
		tx.Set(storage.HistoryKey(nil, collID, idKey, v.ValidFrom, v.V), appendRecord(nil, v.Op, v.Doc))
		if hasVersionKey(v.V) {
			tx.Set(storage.HistoryVersionKey(nil, collID, idKey, v.V), binary.BigEndian.AppendUint64(tb[:0], v.ValidFrom))
		}
	}
	if newest.V < have {
		return nil // an older batch than what is here: the document already follows the newer one
	}
	cur = append(bsoncore.Document(nil), cur...)
	switch {
	case newest.Doc == nil && exists:
		tx.Delete(key)
		return e.indexDelete(tx, ns, cur, idKey)
	case newest.Doc == nil:
		return nil
	case exists:
		if bytes.Equal(cur, newest.Doc) {
			return nil
		}
		tx.Set(key, newest.Doc)
		return e.indexReplace(tx, ns, cur, newest.Doc, idKey)
	}
	// "Tail bound": the bound is loaded before the key is written, then
	// raised to it, as insertOne does.
	if _, err := e.tails.beyond(tx, collID, key); err != nil {
		return err
	}
	tx.Set(key, newest.Doc)
	e.tails.raise(collID, key)
	return e.indexInsert(tx, ns, newest.Doc, idKey)
}

// PurgeHistories removes the documents of ns whose _ids are ids together
// with their whole histories (versions and version keys), in one request,
// leaving no tombstone: the range deleter's removal of a donated range,
// and a recipient's of an abandoned copy. It returns how many documents
// (live or deleted) had anything to remove.
func (e *Engine) PurgeHistories(ns Namespace, ids []bsoncore.Value) (int, error) {
	n := 0
	err := e.db.Write(func(tx *storage.Txn) error {
		n = 0
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return nil
		}
		for _, id := range ids {
			idKey := appendIDKey(nil, id)
			key := storage.DocKey(nil, coll.ID, idKey)
			cur, exists, err := tx.Get(nil, key)
			if err != nil {
				return err
			}
			have, err := lastVersion(tx, coll.ID, idKey)
			if err != nil {
				return err
			}
			if exists {
				cur = append(bsoncore.Document(nil), cur...)
				tx.Delete(key)
				if err := e.indexDelete(tx, ns, cur, idKey); err != nil {
					return err
				}
			}
			if have > 0 {
				hid := append(storage.Prefix(nil, storage.SpaceHistory, coll.ID), idKey...)
				tx.DeleteRange(hid, storage.PrefixEnd(hid))
				vid := append(storage.Prefix(nil, storage.SpaceHistoryVersion, coll.ID), idKey...)
				tx.DeleteRange(vid, storage.PrefixEnd(vid))
			}
			if exists || have > 0 {
				n++
			}
		}
		return nil
	})
	return n, err
}

func errNotVersionedHistory(ns Namespace) error {
	return mongoerr.New(mongoerr.InvalidOptions, "%s is not a versioned collection: there is no history to migrate", ns)
}

func copyValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// ValidOp reports whether op is a stored version op (i, u, r, d).
func ValidOp(op byte) bool {
	switch op {
	case opInsert, opUpdate, opReplace, opDelete:
		return true
	}
	return false
}

// LastLive returns the document whose encoded _id is idKey as it is now, or,
// when it is deleted, its newest live version from the history (nil when
// retention kept only the tombstone): the document whose shard key says
// which chunk the history is in (a shard's SHARDING_FILTER of $versions).
func (r *Reader) LastLive(idKey []byte) (bsoncore.Document, error) {
	if r.coll == nil {
		return nil, nil
	}
	var kb [64]byte
	doc, found, err := r.snap.Get(nil, storage.DocKey(kb[:0], r.coll.ID, idKey))
	if err != nil || found {
		return doc, err
	}
	h, err := r.history(idKey, 0)
	if err != nil {
		return nil, err
	}
	for _, v := range h.Versions {
		if v.Doc != nil {
			return v.Doc, nil
		}
	}
	return nil, nil
}
