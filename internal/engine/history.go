package engine

import (
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// The history of a versioned collection (storage keyspaces h and v).
//
// Every write of a versioned document — insert, update, replacement,
// delete — stores the version it makes at storage.HistoryKey(collID,
// keystring(_id), validFrom, version), in the same commit-pipeline request
// as the document itself, so history and latest cannot disagree after a
// crash (invariant "History follows documents"). validFrom is the cluster
// time of the write (Txn.Tick, an hlc.Timestamp). The value is the
// version's record:
//
//	1 byte   op: 'i' insert, 'u' update, 'r' replace, 'd' delete
//	rest     the document as stored (with its version field); empty for a
//	         delete's tombstone
//
// A document's versions rise with their times, so its history keys sort
// newest first by either, and "the version of X at T" is one seek to
// HistoryKey(X, T, ^0) that lands on the record itself (history_asof.go):
// the as-of read of one document is one iterator seek, however many
// versions it has. Beside every versionKeyEvery-th version (those whose
// number it divides), storage.HistoryVersionKey(collID, keystring(_id),
// version) holds its validFrom, so "version n of X" is one point read
// there, one seek here and fewer than versionKeyEvery steps (seekVersion:
// $versions' version bounds, revertDocument). A key for every version
// cost an update ~8% more CPU (its memtable entry, flush and compaction)
// for reads that only bounds by version make.
//
// The latest version is stored twice: as the document (where every read
// of the latest finds it at no extra cost) and as its newest history
// record. Writing the new version rather than the replaced one needs no
// read of the replaced version's record on the write path (its validFrom
// would otherwise have to be fetched), and lets $versions and as-of reads
// work from the history keyspace alone. A version's validTo is the next
// version's validFrom.
//
// A transaction's versions get their time at its commit (txn.go): until
// then they are recorded at time pendingTS, which sorts before every
// committed time, so inside the transaction they are the newest.
//
// Invariant "History follows documents": for every document X of a
// versioned collection with version field value n, the history holds
// versions 1…n of X (those retention has not pruned, always at least n)
// contiguously, in rising time order (several versions a transaction made
// share its commit time), and version n's record holds X's bytes; a
// deleted document's newest record is a tombstone. A document re-inserted
// after a delete continues its numbering after the tombstone. Each version
// whose number versionKeyEvery divides has exactly one version key,
// holding its validFrom, and no other version has one. Secondary indexes
// index only the documents (the latest versions).

// A history index could come later: a keyspace of its own holding, for
// each version, index id, keystring(key), keystring(_id), ^version, written
// in the same request as the version (as the version keys are), so "the
// documents whose attrN was x at T" would seek by key and keep the entries
// whose version was valid at T (a version's validity is its key's
// validFrom and the next version's). Today indexes hold only the latest
// versions, and as-of reads scan the collection's history.

// Version ops as stored.
const (
	opInsert  byte = 'i'
	opUpdate  byte = 'u'
	opReplace byte = 'r'
	opDelete  byte = 'd'
)

// OpName is the op as $versions shows it.
func OpName(op byte) string {
	switch op {
	case opInsert:
		return "insert"
	case opUpdate:
		return "update"
	case opReplace:
		return "replace"
	case opDelete:
		return "delete"
	}
	return "unknown"
}

// versionKeyEvery: versions whose number it divides have a version key.
const versionKeyEvery = 32

func hasVersionKey(v uint64) bool { return v%versionKeyEvery == 0 }

// pointGetter reads one key: a snapshot, or a request's Txn.
type pointGetter interface {
	Get(dst, key []byte) ([]byte, bool, error)
}

// seekVersion positions it, an iterator over the history of one document
// (hid its prefix: collID's history prefix and idKey), on version v and
// reports whether the history holds it (false: never written, or pruned).
// It seeks to the version key at or above v (or to the newest version) and
// steps down fewer than versionKeyEvery versions.
func seekVersion(g pointGetter, it *storage.Iter, collID uint64, idKey, hid []byte, v uint64) (bool, error) {
	if v == 0 {
		return false, nil
	}
	c := (v + versionKeyEvery - 1) / versionKeyEvery * versionKeyEvery
	tb, found, err := g.Get(nil, storage.HistoryVersionKey(nil, collID, idKey, c))
	if err != nil {
		return false, err
	}
	var ok bool
	if found {
		if len(tb) != 8 {
			return false, errCorruptRecord
		}
		ok = it.SeekGE(storage.HistoryKey(nil, collID, idKey, binary.BigEndian.Uint64(tb), c))
	} else if ok = it.First(); ok && storage.HistoryKeyVersion(it.Key()) >= c {
		return false, nil // c was pruned, and every older version with it
	}
	for ; ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(hid)+storage.HistorySuffix {
			return false, errCorruptRecord
		}
		switch kv := storage.HistoryKeyVersion(k); {
		case kv == v:
			return true, nil
		case kv < v:
			return false, nil
		}
	}
	return false, nil
}

// pendingTS is the time of a transaction's version until its commit
// stamps it (complemented in the key, it sorts first: the newest).
const pendingTS = ^uint64(0)

func appendRecord(dst []byte, op byte, doc []byte) []byte {
	dst = append(dst, op)
	return append(dst, doc...)
}

// Version is one version of a document, read from the history.
type Version struct {
	IDKey     []byte // keystring(_id)
	V         uint64
	ValidFrom uint64 // cluster time (seconds<<32 | increment)
	ValidTo   uint64 // the next version's validFrom; 0 for the newest
	Op        byte
	Doc       bsoncore.Document // nil for a tombstone
}

// ID decodes the version's _id.
func (v *Version) ID() (bsoncore.Value, error) {
	id, _, err := keystring.Decode(v.IDKey)
	return id, err
}

func decodeRecord(key, val []byte, prefixLen int) (Version, error) {
	if len(val) < 1 || len(key) < prefixLen+storage.HistorySuffix {
		return Version{}, errCorruptRecord
	}
	v := Version{
		IDKey:     key[prefixLen : len(key)-storage.HistorySuffix],
		V:         storage.HistoryKeyVersion(key),
		ValidFrom: storage.HistoryKeyTime(key),
		Op:        val[0],
	}
	if len(val) > 1 {
		v.Doc = val[1:]
	}
	return v, nil
}

// lastVersion is the newest version recorded for the document idKey of
// collID as the group sees it (0: none). A request never inserts a
// document whose history it wrote itself, so Txn.NewIter, blind to the
// request's own writes, is enough.
func lastVersion(tx *storage.Txn, collID uint64, idKey []byte) (uint64, error) {
	lo := append(storage.Prefix(nil, storage.SpaceHistory, collID), idKey...)
	it, err := tx.NewIter(lo, storage.PrefixEnd(lo))
	if err != nil {
		return 0, err
	}
	var v uint64
	if it.First() && len(it.Key()) == len(lo)+storage.HistorySuffix {
		v = storage.HistoryKeyVersion(it.Key())
	}
	return v, it.Close()
}

// versionInsert stamps a document about to be inserted into a versioned
// collection with its version (overwriting any client value) and records
// it in the history. It returns the document to store.
func (e *Engine) versionInsert(tx *storage.Txn, ver Versioning, collID uint64, idKey []byte, doc bsoncore.Document) (bsoncore.Document, error) {
	last, err := lastVersion(tx, collID, idKey)
	if err != nil {
		return nil, err
	}
	doc = withVersion(nil, doc, ver.Field, last+1)
	if len(doc) > MaxDocumentSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "object to insert too large. size in bytes: %d, max size: %d", len(doc), MaxDocumentSize)
	}
	e.recordVersion(tx, collID, idKey, last+1, opInsert, doc)
	return doc, nil
}

// versionReplace checks and stamps the new content next of a versioned
// document cur. An update (replacement false) may not change the version
// field (ImmutableField); a replacement's value is overwritten. It returns
// the document to store and its version, or nil when next changes nothing.
func versionReplace(ver Versioning, cur, next bsoncore.Document, replacement bool) (bsoncore.Document, uint64, error) {
	curV := versionOf(cur, ver.Field)
	if !replacement {
		a, b := cur.Lookup(ver.Field), next.Lookup(ver.Field)
		if a.Type != b.Type || string(a.Data) != string(b.Data) {
			return nil, 0, mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '%s' would modify the immutable field '%s'", ver.Field, ver.Field)
		}
		if string(next) == string(cur) {
			return nil, 0, nil
		}
	} else if next = withVersion(nil, next, ver.Field, curV); string(next) == string(cur) {
		return nil, 0, nil
	}
	// next is the update's own result or withVersion's copy: the version
	// field is an int64 (the stored one, kept, or the one just written),
	// so the new version is written in place.
	if !replacement {
		next = append([]byte(nil), next...)
	}
	if !setVersion(next, ver.Field, curV+1) {
		next = withVersion(nil, next, ver.Field, curV+1)
	}
	return next, curV + 1, nil
}

// recordVersion writes version v of a document (doc nil: a tombstone). No
// request reads back the keys it writes itself (lastVersion reads through
// Txn.NewIter, blind to them), so they are appended unindexed, except in a
// transaction, whose commit reads each record back (stampVersion). The
// record is built in the pipeline's scratch buffer: the Txn keeps a copy.
func (e *Engine) recordVersion(tx *storage.Txn, collID uint64, idKey []byte, v uint64, op byte, doc []byte) {
	t := e.txn.in
	ts := pendingTS
	if t != nil {
		t.addVersion(tx, collID, idKey, v) // the commit stamps its time (txn.go)
	} else {
		ts = uint64(tx.Tick())
	}
	var kb [96]byte
	var tb [8]byte
	binary.BigEndian.PutUint64(tb[:], ts)
	e.recordBuf = appendRecord(e.recordBuf[:0], op, doc)
	rk := storage.HistoryKey(kb[:0], collID, idKey, ts, v)
	vk := storage.HistoryVersionKey(rk[len(rk):], collID, idKey, v)
	keyed := hasVersionKey(v)
	if t != nil {
		tx.Set(rk, e.recordBuf)
		if keyed {
			tx.Set(vk, tb[:])
		}
		return
	}
	tx.Append(rk, e.recordBuf)
	if keyed {
		tx.Append(vk, tb[:])
	}
}

// startHistory begins the history of every document of a collection whose
// versioning collMod just turned on (inside its request): each document
// gets version 1 (its version field set, its indexes following) and a
// history record of it, as if inserted now.
func (e *Engine) startHistory(tx *storage.Txn, ns Namespace, collID uint64, ver Versioning) error {
	prefix := storage.Prefix(nil, storage.SpaceDocument, collID)
	it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		key := append([]byte(nil), it.Key()...)
		val, err := it.Value()
		if err != nil {
			return errors.Join(err, it.Close())
		}
		cur := bsoncore.Document(append([]byte(nil), val...))
		idKey := key[len(prefix):]
		next := withVersion(nil, cur, ver.Field, 1)
		if string(next) != string(cur) {
			tx.Set(key, next)
			if err := e.indexReplace(tx, ns, cur, next, idKey); err != nil {
				return errors.Join(err, it.Close())
			}
		}
		e.recordVersion(tx, collID, idKey, 1, opInsert, next)
	}
	return it.Close()
}
