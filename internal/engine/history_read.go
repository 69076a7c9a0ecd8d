package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cairndb/cairn/internal/storage"
)

// Reads of a versioned collection's history (history.go) from a Reader's
// snapshot: the $versions scan and as-of reads.

// Versioning returns the collection's versioning as the reader's catalog
// holds it; ok is false for an unversioned (or missing) collection.
func (r *Reader) Versioning() (Versioning, bool) { return VersioningOf(r.coll) }

// VersionBounds narrow a history scan: one document (IDKey, its encoded
// _id; nil: every document) and a range of versions [VLo, VHi] (0 and
// math.MaxUint64 when unbounded).
type VersionBounds struct {
	IDKey    []byte
	VLo, VHi uint64
}

// AllVersions are bounds that cover the whole history.
var AllVersions = VersionBounds{VHi: math.MaxUint64}

// VersionCursor walks the history, by _id, each document's versions newest
// first. It counts the keys it reads (KeysExamined).
type VersionCursor struct {
	it           *storage.Iter
	prefixLen    int
	b            VersionBounds
	started      bool
	prevID       []byte // the _id of the version read before the current one
	prevFrom     uint64 // its validFrom
	KeysExamined int64
}

// Versions opens a scan of the history within b. An unversioned or missing
// collection yields nothing.
func (r *Reader) Versions(b VersionBounds) (*VersionCursor, error) {
	c := &VersionCursor{b: b}
	if r.coll == nil {
		return c, nil
	}
	prefix := storage.Prefix(nil, storage.SpaceHistory, r.coll.ID)
	c.prefixLen = len(prefix)
	lo, hi := prefix, storage.PrefixEnd(prefix)
	if b.IDKey != nil {
		var empty bool
		var err error
		if lo, hi, empty, err = r.versionRange(b); err != nil || empty {
			return c, err
		}
	}
	it, err := r.snap.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	c.it = it
	return c, nil
}

// versionRange returns the history keys of one document's versions
// within b (b.IDKey set), from one version above b.VHi, so that the first
// version returned knows its validTo (the next version's validFrom), down
// to b.VLo; empty when no version is within b. Each bound is found by
// seekVersion.
func (r *Reader) versionRange(b VersionBounds) (lo, hi []byte, empty bool, err error) {
	hid := append(storage.Prefix(nil, storage.SpaceHistory, r.coll.ID), b.IDKey...)
	it, err := r.snap.NewIter(hid, storage.PrefixEnd(hid))
	if err != nil {
		return nil, nil, false, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	if !it.First() || storage.HistoryKeyVersion(it.Key()) < b.VLo {
		return nil, nil, true, nil // no history, or every version below the range
	}
	lo, hi = hid, storage.PrefixEnd(hid)
	if newest := storage.HistoryKeyVersion(it.Key()); b.VHi < newest {
		ok, err := seekVersion(r.snap, it, r.coll.ID, b.IDKey, hid, b.VHi+1)
		if err != nil || !ok {
			return nil, nil, !ok, err // VHi+1 pruned, and every older version with it
		}
		lo = append([]byte(nil), it.Key()...)
	}
	if b.VLo > 0 {
		ok, err := seekVersion(r.snap, it, r.coll.ID, b.IDKey, hid, b.VLo)
		if err != nil {
			return nil, nil, false, err
		}
		if ok { // else VLo was pruned: down to the oldest version
			hi = storage.PrefixEnd(append([]byte(nil), it.Key()...))
		}
	}
	return lo, hi, false, nil
}

// Next returns the next version within the bounds; ok is false at the end.
// The version's slices alias the cursor's iterator until the next call.
func (c *VersionCursor) Next() (v Version, ok bool, err error) {
	if c.it == nil {
		return Version{}, false, nil
	}
	for {
		var moved bool
		if !c.started {
			moved, c.started = c.it.First(), true
		} else {
			moved = c.it.Next()
		}
		if !moved {
			return Version{}, false, nil
		}
		c.KeysExamined++
		val, err := c.it.Value()
		if err != nil {
			return Version{}, false, err
		}
		v, err = decodeRecord(c.it.Key(), val, c.prefixLen)
		if err != nil {
			return Version{}, false, err
		}
		if c.prevID != nil && string(c.prevID) == string(v.IDKey) {
			v.ValidTo = c.prevFrom
		}
		c.prevID = append(c.prevID[:0], v.IDKey...)
		c.prevFrom = v.ValidFrom
		if v.V < c.b.VLo || v.V > c.b.VHi {
			continue // the version above the range, read for its validFrom
		}
		return v, true, nil
	}
}

// Close releases the cursor.
func (c *VersionCursor) Close() error {
	if c.it == nil {
		return nil
	}
	return c.it.Close()
}

// ErrHistoryBroken is the class of CheckHistory's findings.
var ErrHistoryBroken = errors.New("engine: history does not follow documents (invariant \"History follows documents\")")

// CheckHistory verifies invariant "History follows documents" for ns (a
// versioned collection; others pass): each document's versions are
// contiguous, the newest holds the document's bytes and its version
// field's value, and an _id with history but no document ends in a
// tombstone. Tests and crash checks call it.
func (e *Engine) CheckHistory(ns Namespace) error {
	r, err := e.NewReader(ns)
	if err != nil {
		return err
	}
	defer r.Close()
	ver, ok := r.Versioning()
	if !ok {
		return nil
	}
	cur, err := r.Versions(AllVersions)
	if err != nil {
		return err
	}
	defer cur.Close()
	var id []byte
	var prev uint64
	live, keyed := 0, 0 // _ids whose newest version is a document; versions with a version key
	for {
		v, ok, err := cur.Next()
		if err != nil {
			return err
		}
		if !ok {
			if err := checkVersionKeyCount(r, ns, keyed); err != nil {
				return err
			}
			return checkLiveCount(r, ns, live)
		}
		if v.ValidFrom == pendingTS {
			return fmt.Errorf("%w: %s: _id %x: version %d was never given its transaction's commit time", ErrHistoryBroken, ns, v.IDKey, v.V)
		}
		if hasVersionKey(v.V) {
			keyed++
			tk, found, err := r.snap.Get(nil, storage.HistoryVersionKey(nil, r.coll.ID, v.IDKey, v.V))
			if err != nil {
				return err
			}
			if !found || len(tk) != 8 || binary.BigEndian.Uint64(tk) != v.ValidFrom {
				return fmt.Errorf("%w: %s: _id %x: version %d has no version key naming its time", ErrHistoryBroken, ns, v.IDKey, v.V)
			}
		}
		if string(v.IDKey) == string(id) {
			if v.V != prev-1 {
				return fmt.Errorf("%w: %s: _id %x: version %d follows version %d", ErrHistoryBroken, ns, v.IDKey, v.V, prev)
			}
			prev = v.V
			continue
		}
		id, prev = append(id[:0], v.IDKey...), v.V
		doc, found, err := r.Fetch(nil, v.IDKey)
		if err != nil {
			return err
		}
		switch {
		case !found && v.Op != opDelete:
			return fmt.Errorf("%w: %s: _id %x has no document but its newest version %d is no tombstone", ErrHistoryBroken, ns, v.IDKey, v.V)
		case found && (string(doc) != string(v.Doc) || versionOf(doc, ver.Field) != v.V):
			return fmt.Errorf("%w: %s: _id %x: the document (version %d) is not its newest version %d", ErrHistoryBroken, ns, v.IDKey, versionOf(doc, ver.Field), v.V)
		}
		if found {
			live++
		}
	}
}

// checkLiveCount checks that every document has a history: as many
// documents as _ids whose newest version is one.
func checkLiveCount(r *Reader, ns Namespace, live int) error {
	c, err := r.Docs(KeyRange{}, false)
	if err != nil {
		return err
	}
	n := 0
	for c.Next() {
		n++
	}
	if err := c.Close(); err != nil {
		return err
	}
	if n != live {
		return fmt.Errorf("%w: %s holds %d documents but %d have a history", ErrHistoryBroken, ns, n, live)
	}
	return nil
}

// checkVersionKeyCount checks that there are no more version keys than
// versions that have one (each of theirs was checked).
func checkVersionKeyCount(r *Reader, ns Namespace, keyed int) error {
	prefix := storage.Prefix(nil, storage.SpaceHistoryVersion, r.coll.ID)
	it, err := r.snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if n != keyed {
		return fmt.Errorf("%w: %s has %d version keys where %d versions have one", ErrHistoryBroken, ns, n, keyed)
	}
	return nil
}
