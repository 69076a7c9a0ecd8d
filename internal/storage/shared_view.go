package storage

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/invariants"
)

// Shared views: transactions that begin while nothing became visible in
// the store since the last one began share its Pebble snapshot instead of
// each taking a view of its own (BENCHMARKS.md, "Read-only transactions
// on an iterator view"): a transaction of one point read then costs a
// snapshot Get and two atomic adds, not an iterator's construction and
// close.
//
// Invariant "Shared view current": a transaction shares a snapshot only
// if no change became visible between the snapshot and its Begin. Every
// write that makes changes visible in Pebble goes through
// [visibility.change] (the pipeline's group commit, ApplyReplicated, a
// checkpoint restore), a seqlock: gen is odd while a change is being
// applied and rises by two per change. A snapshot taken with gen even and
// unchanged across the taking is the state at gen; Begin shares it only
// while gen still has that value. A write path that skipped change would
// hand transactions stale snapshots silently, so builds with the
// invariants tag check each sharing against Pebble itself: a fresh
// snapshot taken with gen unchanged must have the shared one's sequence
// number (TestSharedViewCurrent).
//
// The shared snapshot is released when the last transaction using it has
// ended (with its iterators, "Readers outlive the end") and a newer one
// replaced it; the newest stays until the next Begin replaces it, keeping
// at most one older version of each key from compaction meanwhile.

// visibility is the seqlock over changes made visible in Pebble, and
// the document cache those changes invalidate (doccache.go).
type visibility struct {
	gen  atomic.Uint64
	docs *docCache // nil: no document cache
}

// change applies a change that becomes visible (apply), inside the
// seqlock's odd phase, after dropping from the document cache every
// document the batch representation repr writes (invariant "Document
// cache exact"): repr must hold every record apply makes visible.
func (v *visibility) change(repr []byte, apply func() error) error {
	v.gen.Add(1)
	defer v.gen.Add(1)
	v.docs.invalidate(repr)
	return apply()
}

// changeAll is change for a change that may rewrite any key (a
// checkpoint restore): the whole document cache is dropped.
func (v *visibility) changeAll(apply func() error) error {
	v.gen.Add(1)
	defer v.gen.Add(1)
	v.docs.clear()
	return apply()
}

// genUnknown is the gen of a view not known to be the state at any gen
// (taken while a change was under way, or a caller's snapshot): odd, so
// never a gen at which no change is under way.
const genUnknown = 1

// current reports whether nothing became visible in the store since sv
// was taken, so that the store's applied state is still sv's ("Shared view
// current"). A change may begin right after: the answer holds for the
// moment gen was read.
func (sv *sharedView) current(v *visibility) bool {
	g := v.gen.Load()
	return g%2 == 0 && g == sv.gen
}

// sharedView is one Pebble snapshot shared by transactions.
type sharedView struct {
	snap *pebble.Snapshot
	// gen is visibility.gen when it was taken, if the snapshot is exactly
	// the state at that gen; genUnknown otherwise.
	gen  uint64
	refs atomic.Int32 // transactions reading it, plus one while it is DB.shared
	// done, when set, is called instead of closing snap at the last
	// unref: the snapshot is someone else's (BeginAtIn).
	done func()
}

// ref takes a reference unless the view is already released.
func (s *sharedView) ref() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *sharedView) unref() {
	if s.refs.Add(-1) == 0 {
		if s.done != nil {
			s.done()
			return
		}
		_ = s.snap.Close()
	}
}

// currentShared is the shared view, referenced, if it is current (nil if
// not; see "Shared view current"): atomics only, without the invariants
// tag (which compares it with a new snapshot), so it cannot panic on a
// closed store.
func (db *DB) currentShared() *sharedView {
	g := db.visible.gen.Load()
	if g%2 == 0 {
		if sv := db.shared.Load(); sv != nil && sv.gen == g && sv.ref() {
			if invariants.Enabled {
				db.checkSharedCurrent(sv)
			}
			return sv
		}
	}
	return nil
}

// newView takes a new snapshot, shared when no change is under way.
func (db *DB) newView() *sharedView {
	g := db.visible.gen.Load()
	sv := &sharedView{snap: db.pdb.NewSnapshot(), gen: g}
	if g%2 == 1 || db.visible.gen.Load() != g {
		sv.gen = genUnknown
		sv.refs.Store(1) // taken during a change: this transaction's alone
		return sv
	}
	sv.refs.Store(2)
	if old := db.shared.Swap(sv); old != nil {
		old.unref()
	}
	return sv
}

// beginViewChecked returns a referenced view for a transaction beginning
// now (see "Shared view current") on a store that may be closed (Pebble
// panics then): the error a transaction's reads report. Sharing the
// current view touches no Pebble state, so only a new view (or the
// invariants build's check) pays for the recover.
func (db *DB) beginViewChecked() (*sharedView, error) {
	if !invariants.Enabled {
		if sv := db.currentShared(); sv != nil {
			return sv, nil
		}
	}
	return db.beginViewRecovered()
}

// beginViewRecovered is a referenced view for a transaction beginning now
// (the current shared one, or a new snapshot), a closed store's panic
// turned into an error.
func (db *DB) beginViewRecovered() (sv *sharedView, err error) {
	defer func() {
		if r := recover(); r != nil {
			if v, ok := r.(*invariants.Violation); ok {
				panic(v)
			}
			sv, err = nil, fmt.Errorf("storage: no view for the transaction: %v", r)
		}
	}()
	if sv := db.currentShared(); sv != nil {
		return sv, nil
	}
	return db.newView(), nil
}

// checkSharedCurrent fails the invariant if a snapshot taken now, with no
// change in between, is not at sv's sequence number.
func (db *DB) checkSharedCurrent(sv *sharedView) {
	g := db.visible.gen.Load()
	fresh := db.pdb.NewSnapshot()
	defer fresh.Close()
	if g != sv.gen || db.visible.gen.Load() != g {
		return // a change began: nothing to compare
	}
	if a, b := snapshotSeq(sv.snap), snapshotSeq(fresh); a != b {
		invariants.Fail("Shared view current", "a shared snapshot at sequence %d is stale (the store is at %d) though no change went through visibility.change", a, b)
	}
}

// snapshotSeq reads a Pebble snapshot's sequence number (unexported in
// Pebble: for the invariants check only).
func snapshotSeq(s *pebble.Snapshot) uint64 {
	return reflect.ValueOf(s).Elem().FieldByName("seqNum").Uint()
}

// releaseShared drops DB.shared's reference (Close).
func (db *DB) releaseShared() {
	if old := db.shared.Swap(nil); old != nil {
		old.unref()
	}
}
