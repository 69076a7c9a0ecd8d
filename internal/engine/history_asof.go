package engine

import (
	"encoding/binary"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// As-of reads: a Reader of a versioned collection as it was at a cluster
// time (readConcern {level: "snapshot", atClusterTime}). Its documents are,
// for each _id in the history, the version whose validFrom ≤ T < validTo,
// unless that is a tombstone. It has no secondary indexes (they index only
// the latest versions), so plans over it are collection scans and _id
// lookups, both served from the history keyspace.
//
// Finding the version of one document at T: the versions are keyed by
// descending version number and their validFrom rises with the version, so
// the newest version is one seek, and, when it is newer than T, the one
// valid at T is found by binary search over the contiguous version numbers
// (versionAt): O(log versions) seeks within one iterator.

// NewReaderAt opens a reader of ns as of cluster time at. An unversioned
// collection cannot be read in the past (MongoDB's standalone refusal of
// snapshot reads, NoReplicationEnabled); a time before the history's
// retention horizon is SnapshotTooOld; a time after the last committed
// write is InvalidOptions (it could still change).
func (e *Engine) NewReaderAt(ns Namespace, at hlc.Timestamp) (*Reader, error) {
	if last := e.db.LastCommitted(); at > last {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime %s must not be greater than the last committed cluster time %s", at, last)
	}
	r, err := e.NewReader(ns)
	if err != nil || r.coll == nil {
		return r, err
	}
	if _, ok := VersioningOf(r.coll); !ok {
		_ = r.Close()
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use readConcern: snapshot on a collection that is not versioned (%s)", ns)
	}
	horizon, err := historyHorizon(r.snap, r.coll.ID)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	if at < horizon {
		_ = r.Close()
		return nil, mongoerr.New(mongoerr.SnapshotTooOld, "Read timestamp %s is older than the oldest available timestamp of %s: versions before %s have been pruned", at, ns, horizon)
	}
	r.asOf, r.ixs = at, nil
	return r, nil
}

// horizonKey holds a versioned collection's retention horizon: every
// version pruned so far had its validTo at or below it.
func horizonKey(collID uint64) []byte {
	return binary.AppendUvarint(storage.SystemKey("historyHorizon/"), collID)
}

func historyHorizon(snap *storage.Snapshot, collID uint64) (hlc.Timestamp, error) {
	v, found, err := snap.Get(nil, horizonKey(collID))
	if err != nil || !found {
		return 0, err
	}
	ts, _ := hlc.FromBinary(v)
	return ts, nil
}

// AsOf is the cluster time the reader reads at (0: the latest documents).
func (r *Reader) AsOf() hlc.Timestamp { return r.asOf }

// versionAt positions nothing in particular and returns the record of the
// version of the document whose history keys start with idPrefix that was
// valid at ts: the newest version with validFrom ≤ ts. found is false when
// there is none (the document did not exist yet) or it is a tombstone.
func versionAt(it *storage.Iter, idPrefix []byte, ts hlc.Timestamp) (doc []byte, found bool, err error) {
	want := len(idPrefix) + 8
	if !it.SeekGE(idPrefix) || len(it.Key()) != want || string(it.Key()[:len(idPrefix)]) != string(idPrefix) {
		return nil, false, nil
	}
	rec, err := it.Value()
	if err != nil {
		return nil, false, err
	}
	if recordFrom(rec) <= ts {
		return recordDoc(rec)
	}
	newest := storage.HistoryVersion(it.Key())
	// The oldest retained version: the last key of the document.
	if !it.SeekLT(storage.PrefixEnd(idPrefix)) {
		return nil, false, nil
	}
	oldest := storage.HistoryVersion(it.Key())
	if rec, err = it.Value(); err != nil {
		return nil, false, err
	}
	if recordFrom(rec) > ts {
		return nil, false, nil // younger than ts
	}
	// Invariant: version lo is valid at or before ts, version hi+1 after.
	lo, hi := oldest, newest-1
	key := append(append(make([]byte, 0, want), idPrefix...), 0, 0, 0, 0, 0, 0, 0, 0)
	seek := func(v uint64) ([]byte, error) {
		binary.BigEndian.PutUint64(key[len(idPrefix):], ^v)
		if !it.SeekGE(key) || string(it.Key()) != string(key) {
			return nil, errHistoryGap
		}
		return it.Value()
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		rec, err := seek(mid)
		if err != nil {
			return nil, false, err
		}
		if recordFrom(rec) <= ts {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if rec, err = seek(lo); err != nil {
		return nil, false, err
	}
	return recordDoc(rec)
}

var errHistoryGap = mongoerr.New(mongoerr.InternalError, "engine: a document's versions are not contiguous (invariant \"History follows documents\")")

func recordFrom(rec []byte) hlc.Timestamp {
	if len(rec) < recordHeader {
		return 0
	}
	return hlc.Timestamp(binary.BigEndian.Uint64(rec))
}

func recordDoc(rec []byte) ([]byte, bool, error) {
	if len(rec) < recordHeader {
		return nil, false, errCorruptRecord
	}
	if rec[8] == opDelete {
		return nil, false, nil
	}
	return rec[recordHeader:], true, nil
}

var errCorruptRecord = mongoerr.New(mongoerr.InternalError, "engine: corrupt history record")

// fetchAsOf reads the document whose encoded _id is rid as of r.asOf.
func (r *Reader) fetchAsOf(dst, rid []byte) ([]byte, bool, error) {
	prefix := append(storage.Prefix(nil, storage.SpaceHistory, r.coll.ID), rid...)
	it, err := r.snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return dst, false, err
	}
	doc, found, err := versionAt(it, prefix, r.asOf)
	if found {
		dst = append(dst, doc...)
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return dst, found && err == nil, err
}

// asOfWalk is a Cursor's state over the history: one document per _id.
type asOfWalk struct {
	ts     hlc.Timestamp
	prefix []byte // the collection's history prefix
	lo, hi []byte // bounds of the walk (hi nil: none)
	id     []byte // the current _id's history prefix
}

// nextAsOf moves an as-of cursor to the next document that existed at its
// time, in _id order or reversed.
func (c *Cursor) nextAsOf() bool {
	w := c.asof
	for {
		var ok bool
		switch {
		case !c.started:
			c.started = true
			if c.reverse {
				ok = c.it.Last()
			} else {
				ok = c.it.First()
			}
		case c.reverse:
			ok = c.it.SeekLT(w.id)
		default:
			ok = c.it.SeekGE(storage.PrefixEnd(w.id))
		}
		if !ok {
			return false
		}
		k := c.it.Key()
		if len(k) < len(w.prefix)+8 {
			return false
		}
		w.id = append(w.id[:0], k[:len(k)-8]...)
		doc, found, err := versionAt(c.it, w.id, w.ts)
		if err != nil {
			c.err = err
			return false
		}
		if found {
			c.rid = append(c.rid[:0], w.id[len(w.prefix):]...)
			c.doc = append(c.doc[:0], doc...)
			return true
		}
	}
}

// docsAsOf opens an as-of cursor over the documents whose encoded _id is
// in rng.
func (r *Reader) docsAsOf(rng KeyRange, reverse bool) (*Cursor, error) {
	prefix := storage.Prefix(nil, storage.SpaceHistory, r.coll.ID)
	lo := append(append([]byte(nil), prefix...), rng.Lo...)
	hi := storage.PrefixEnd(prefix)
	if rng.Hi != nil {
		hi = append(append([]byte(nil), prefix...), rng.Hi...)
	}
	it, err := r.snap.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	return &Cursor{it: it, prefix: len(prefix), reverse: reverse, asof: &asOfWalk{ts: r.asOf, prefix: prefix}}, nil
}
