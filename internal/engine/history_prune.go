package engine

import (
	"errors"
	"time"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/storage"
)

// Retention of versioned collections: the oldest versions of a document
// go once they are beyond both of the collection's bounds
// (minVersionsToKeep newer versions exist, and they stopped being valid
// minSecondsToKeep ago); a bound not given never holds a version back, and
// with neither given nothing is pruned. The newest version (the document,
// or its tombstone) is never pruned. Package history decides when to run
// PruneHistory.
//
// Pruning keeps "History follows documents": the versions a document
// loses are always its oldest ones (older versions have more newer ones
// and an earlier validTo), removed with one range deletion (and their
// version keys with another), so what
// remains is contiguous. The retention horizon (horizonKey) rises to the
// latest validTo pruned, in the same request, so an as-of read before it
// is SnapshotTooOld rather than a wrong answer.

// VersionedCollection is one versioned collection with its versioning.
type VersionedCollection struct {
	NS         Namespace
	Versioning Versioning
}

// VersionedCollections lists the versioned collections.
func (e *Engine) VersionedCollections() []VersionedCollection {
	var out []VersionedCollection
	for _, c := range e.cat.Current().Collections("") {
		if v, ok := VersioningOf(c); ok {
			out = append(out, VersionedCollection{NS: Namespace{DB: c.DB, Coll: c.Name}, Versioning: v})
		}
	}
	return out
}

// pruneBatch is how many documents' histories one pipeline request cuts,
// so a pass never holds the pipeline long.
const pruneBatch = 256

// PruneHistory removes the versions of ns that retention lets go as of
// now and returns how many it removed.
func (e *Engine) PruneHistory(ns Namespace, now time.Time) (int, error) {
	r, err := e.NewReader(ns)
	if err != nil {
		return 0, err
	}
	ver, ok := r.Versioning()
	if !ok || ver.KeepsAll() {
		return 0, r.Close()
	}
	collID := r.coll.ID
	var cutoff hlc.Timestamp // versions valid until at most cutoff may go
	if ver.MinSeconds > 0 {
		cutoff = hlc.New(uint32(max(now.Unix()-ver.MinSeconds, 0)), ^uint32(0))
	} else {
		cutoff = hlc.Timestamp(^uint64(0))
	}
	cur, err := r.Versions(AllVersions)
	if err != nil {
		_ = r.Close()
		return 0, err
	}
	type cut struct {
		idKey   []byte
		v       uint64 // prune versions ≤ v
		from    uint64 // version v's validFrom
		n       int
		validTo hlc.Timestamp
	}
	var cuts []cut
	total := 0
	flush := func() error {
		if len(cuts) == 0 {
			return nil
		}
		// Readers learn the new horizon before any version goes, so none
		// reads a pruned time as if nothing had been there (a failed
		// request leaves the cache high: it only refuses early).
		var horizon hlc.Timestamp
		for _, c := range cuts {
			horizon = max(horizon, c.validTo)
		}
		e.horizons.raise(collID, horizon)
		err := e.db.Write(func(tx *storage.Txn) error {
			horizon = 0
			for _, c := range cuts {
				lo := storage.HistoryKey(nil, collID, c.idKey, c.from, c.v)
				tx.DeleteRange(lo, storage.PrefixEnd(lo[:len(lo)-storage.HistorySuffix]))
				lo = storage.HistoryVersionKey(nil, collID, c.idKey, c.v)
				tx.DeleteRange(lo, storage.PrefixEnd(lo[:len(lo)-8]))
				horizon = max(horizon, c.validTo)
			}
			hk := horizonKey(collID)
			old, found, err := tx.Get(nil, hk)
			if err != nil {
				return err
			}
			if ts, ok := hlc.FromBinary(old); found && ok && ts > horizon {
				horizon = ts
			}
			tx.Set(hk, horizon.AppendBinary(nil))
			return nil
		})
		if err == nil {
			for _, c := range cuts {
				total += c.n
			}
		}
		cuts = cuts[:0]
		return err
	}
	var id []byte
	k := 0 // the position of the version within its document, newest 0
	for {
		v, ok, err := cur.Next()
		if err != nil || !ok {
			if err == nil {
				err = flush()
			}
			return total, errors.Join(err, cur.Close(), r.Close())
		}
		if string(v.IDKey) != string(id) {
			id, k = append(id[:0], v.IDKey...), 0
		} else {
			k++
		}
		if k == 0 || (ver.MinVersions > 0 && int64(k) < ver.MinVersions) || hlc.Timestamp(v.ValidTo) > cutoff {
			continue
		}
		// v and every older version of this document go.
		if n := len(cuts); n > 0 && string(cuts[n-1].idKey) == string(v.IDKey) {
			cuts[n-1].n++
			continue
		}
		cuts = append(cuts, cut{idKey: append([]byte(nil), v.IDKey...), v: v.V, from: v.ValidFrom, n: 1, validTo: hlc.Timestamp(v.ValidTo)})
		if len(cuts) >= pruneBatch {
			if err := flush(); err != nil {
				return total, errors.Join(err, cur.Close(), r.Close())
			}
		}
	}
}
