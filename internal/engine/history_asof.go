package engine

import (
	"encoding/binary"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
// Finding the version of one document at T is one seek in its history
// (storage.HistoryKey: by _id, then descending validFrom), which lands on
// the version's record (versionAt).

// NewReaderAt opens a reader of ns as of cluster time at. An unversioned
// collection is read from the snapshot history (snapshot_history.go) on a
// replica set member, and refused on a standalone (MongoDB's refusal of
// snapshot reads there, NoReplicationEnabled); a time before the history's
// retention horizon is SnapshotTooOld; a time after the last committed
// write is InvalidOptions (it could still change).
func (e *Engine) NewReaderAt(ns Namespace, at hlc.Timestamp) (*Reader, error) {
	if last := e.db.LastCommitted(); at > last {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime %s must not be greater than the last committed cluster time %s", at, last)
	}
	r, err := e.NewReader(ns)
	if err == nil && r.coll == nil && e.snaps.allowed.Load() {
		_ = r.Close()
		return e.newReaderHeld(ns, at) // it may have existed at at
	}
	if err != nil || r.coll == nil {
		return r, err
	}
	if _, ok := VersioningOf(r.coll); !ok {
		_ = r.Close()
		return e.newReaderHeld(ns, at) // snapshot_history.go
	}
	if err := e.checkHorizon(ns, r.coll.ID, at); err != nil {
		_ = r.Close()
		return nil, err
	}
	if err := e.preparedAt(ns, at); err != nil { // its versions take the commit's own time (snapshot_prepared.go)
		_ = r.Close()
		return nil, err
	}
	r.asOf, r.ixs = at, nil
	return r, nil
}

// checkHorizon refuses a read at a time before collID's retention horizon
// (SnapshotTooOld).
func (e *Engine) checkHorizon(ns Namespace, collID uint64, at hlc.Timestamp) error {
	horizon, err := e.horizons.get(e.db, collID)
	if err != nil {
		return err
	}
	if at < horizon {
		return mongoerr.New(mongoerr.SnapshotTooOld, "Read timestamp %s is older than the oldest available timestamp of %s: versions before %s have been pruned", at, ns, horizon)
	}
	return nil
}

// GetAt appends to dst the document of ns whose _id is id as it was at
// cluster time at: the point read of an as-of find (planner.Open), without
// a snapshot, as Get reads the latest. One seek is consistent by itself:
// the version valid at a time never changes, and if retention prunes it
// after the horizon check, the horizon has passed at (it rises before
// versions go) and the read is SnapshotTooOld.
func (e *Engine) GetAt(dst []byte, ns Namespace, id bsoncore.Value, at hlc.Timestamp) ([]byte, bool, error) {
	if last := e.db.LastCommitted(); at > last {
		return dst, false, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime %s must not be greater than the last committed cluster time %s", at, last)
	}
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil && e.snaps.allowed.Load() {
		return e.getHeld(dst, ns, id, at) // it may have existed at at
	}
	if coll == nil {
		return dst, false, nil
	}
	if _, ok := VersioningOf(coll); !ok {
		return e.getHeld(dst, ns, id, at) // snapshot_history.go
	}
	if err := e.checkHorizon(ns, coll.ID, at); err != nil {
		return dst, false, err
	}
	if err := e.preparedAt(ns, at); err != nil { // its versions take the commit's own time (snapshot_prepared.go)
		return dst, false, err
	}
	var kb [96]byte
	hid := appendIDKey(storage.Prefix(kb[:0], storage.SpaceHistory, coll.ID), id)
	x, err := e.asOfIters.get(e.db, at, hid, storage.PrefixEnd(hid))
	if err != nil {
		return dst, false, err
	}
	doc, found, err := versionAt(x.it, hid, at)
	if found {
		dst = append(dst, doc...)
	}
	if err != nil {
		_ = x.it.Close()
	} else {
		e.asOfIters.put(x)
	}
	if err == nil && !found {
		err = e.checkHorizon(ns, coll.ID, at) // pruned under the read
	}
	return dst, found && err == nil, err
}

func errNotVersioned(ns Namespace) error {
	return mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use readConcern: snapshot on a collection that is not versioned (%s)", ns)
}

// horizons caches each versioned collection's retention horizon
// (horizonKey), loaded at first use and raised by PruneHistory after its
// request commits. A reader that sees a horizon newer than its snapshot
// only refuses what it might have answered: the cache is never below the
// store.
type horizons struct{ m sync.Map } // collID → hlc.Timestamp

func (h *horizons) get(db *storage.DB, collID uint64) (hlc.Timestamp, error) {
	if v, ok := h.m.Load(collID); ok {
		return v.(hlc.Timestamp), nil
	}
	v, found, err := db.Get(nil, horizonKey(collID))
	if err != nil {
		return 0, err
	}
	var ts hlc.Timestamp
	if found {
		ts, _ = hlc.FromBinary(v)
	}
	actual, _ := h.m.LoadOrStore(collID, ts)
	return actual.(hlc.Timestamp), nil
}

// raise lifts collID's cached horizon to ts.
func (h *horizons) raise(collID uint64, ts hlc.Timestamp) {
	for {
		cur, loaded := h.m.LoadOrStore(collID, ts)
		if !loaded || cur.(hlc.Timestamp) >= ts || h.m.CompareAndSwap(collID, cur, ts) {
			return
		}
	}
}

// horizonKey holds a versioned collection's retention horizon: every
// version pruned so far had its validTo at or below it.
func horizonKey(collID uint64) []byte {
	return binary.AppendUvarint(storage.SystemKey("historyHorizon/"), collID)
}

// AsOf is the cluster time the reader reads at (0: the latest documents).
func (r *Reader) AsOf() hlc.Timestamp { return r.asOf }

// versionAt returns the document of the version of one document that was
// valid at ts: it, an iterator over the history, seeks to hid‖^ts (hid:
// the document's history prefix), which lands on the newest version that
// began at or before ts. found is false when there is none (the document
// did not exist yet) or it is a tombstone. The document aliases the
// iterator's memory until it moves.
func versionAt(it *storage.Iter, hid []byte, ts hlc.Timestamp) (doc []byte, found bool, err error) {
	var kb [112]byte
	key := binary.BigEndian.AppendUint64(append(kb[:0], hid...), ^uint64(ts))
	if !it.SeekGE(key) {
		return nil, false, nil
	}
	k := it.Key()
	if len(k) != len(hid)+storage.HistorySuffix || string(k[:len(hid)]) != string(hid) {
		return nil, false, nil
	}
	rec, err := it.Value()
	if err != nil {
		return nil, false, err
	}
	return recordDoc(rec)
}

// recordDoc returns a version record's document; ok is false for a
// tombstone.
func recordDoc(rec []byte) ([]byte, bool, error) {
	if len(rec) < 1 {
		return nil, false, errCorruptRecord
	}
	if rec[0] == opDelete {
		return nil, false, nil
	}
	return rec[1:], true, nil
}

var errCorruptRecord = mongoerr.New(mongoerr.InternalError, "engine: corrupt history record")

// fetchAsOf reads the document whose encoded _id is rid as of r.asOf.
func (r *Reader) fetchAsOf(dst, rid []byte) ([]byte, bool, error) {
	hid := append(storage.Prefix(nil, storage.SpaceHistory, r.coll.ID), rid...)
	it, err := r.snap.NewIter(hid, storage.PrefixEnd(hid))
	if err != nil {
		return dst, false, err
	}
	doc, found, err := versionAt(it, hid, r.asOf)
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
	r      *Reader
	prefix []byte // the collection's history prefix
	id     []byte // the current _id's history prefix
}

// nextAsOf moves an as-of cursor to the next document that existed at its
// reader's time, in _id order or reversed.
func (c *Cursor) nextAsOf() bool {
	w := c.asof
	for {
		var ok bool
		switch {
		case c.hasTarget:
			ok = c.seekTarget()
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
		if len(k) < len(w.prefix)+storage.HistorySuffix {
			return false
		}
		w.id = append(w.id[:0], k[:len(k)-storage.HistorySuffix]...)
		rid := w.id[len(w.prefix):]
		doc, found, err := versionAt(c.it, w.id, w.r.asOf)
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
	return &Cursor{it: it, prefix: prefix, reverse: reverse, asof: &asOfWalk{r: r, prefix: prefix}}, nil
}
