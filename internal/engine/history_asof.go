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
// Finding the version of one document at T is one seek in the time keys
// (storage.HistoryTimeKey: by _id, then descending validFrom) and one point
// read of the version's record (versionAt).

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

// versionAt returns the record's document of the version of one document
// that was valid at ts: it, an iterator over the time keys, seeks to
// tid‖^ts (tid: the document's time-key prefix), which lands on the newest
// version that began at or before ts, and the record is one point read.
// found is false when there is none (the document did not exist yet) or
// it is a tombstone. The document aliases dst's memory.
func (r *Reader) versionAt(dst []byte, it *storage.Iter, tid, idKey []byte, ts hlc.Timestamp) (doc []byte, found bool, err error) {
	key := binary.BigEndian.AppendUint64(append(make([]byte, 0, len(tid)+8), tid...), ^uint64(ts))
	if !it.SeekGE(key) {
		return nil, false, nil
	}
	k := it.Key()
	if len(k) != len(tid)+8 || string(k[:len(tid)]) != string(tid) {
		return nil, false, nil
	}
	vb, err := it.Value()
	if err != nil {
		return nil, false, err
	}
	if len(vb) != 8 {
		return nil, false, errCorruptRecord
	}
	var kb [96]byte
	rec, found, err := r.snap.Get(dst, storage.HistoryKey(kb[:0], r.coll.ID, idKey, binary.BigEndian.Uint64(vb)))
	if err != nil {
		return nil, false, err
	}
	if !found {
		return nil, false, errHistoryGap
	}
	return recordDoc(rec[len(dst):])
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
	tid := append(storage.Prefix(nil, storage.SpaceHistoryTime, r.coll.ID), rid...)
	it, err := r.snap.NewIter(tid, storage.PrefixEnd(tid))
	if err != nil {
		return dst, false, err
	}
	n := len(dst)
	doc, found, err := r.versionAt(dst, it, tid, rid, r.asOf)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if !found || err != nil {
		return dst[:n], false, err
	}
	return append(dst[:n], doc...), true, nil
}

// asOfWalk is a Cursor's state over the time keys: one document per _id.
type asOfWalk struct {
	r      *Reader
	prefix []byte // the collection's time-key prefix
	id     []byte // the current _id's time-key prefix
}

// nextAsOf moves an as-of cursor to the next document that existed at its
// reader's time, in _id order or reversed.
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
		rid := w.id[len(w.prefix):]
		doc, found, err := w.r.versionAt(c.doc[:0], c.it, w.id, rid, w.r.asOf)
		if err != nil {
			c.err = err
			return false
		}
		if found {
			c.rid = append(c.rid[:0], rid...)
			c.doc = doc
			return true
		}
	}
}

// docsAsOf opens an as-of cursor over the documents whose encoded _id is
// in rng.
func (r *Reader) docsAsOf(rng KeyRange, reverse bool) (*Cursor, error) {
	prefix := storage.Prefix(nil, storage.SpaceHistoryTime, r.coll.ID)
	lo := append(append([]byte(nil), prefix...), rng.Lo...)
	hi := storage.PrefixEnd(prefix)
	if rng.Hi != nil {
		hi = append(append([]byte(nil), prefix...), rng.Hi...)
	}
	it, err := r.snap.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	return &Cursor{it: it, prefix: len(prefix), reverse: reverse, asof: &asOfWalk{r: r, prefix: prefix}}, nil
}
