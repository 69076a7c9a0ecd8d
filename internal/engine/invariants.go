package engine

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// faultSkipIndexWrites is a test-only fail point: while set, in builds
// with the invariants tag, writes store and delete documents without
// adding or removing their index entries, so a test can show the runtime
// check catches a broken index write. Without the tag nothing reads it.
var faultSkipIndexWrites atomic.Bool

// faultSkipCappedEvict is a test-only fail point: while set, in builds with
// the invariants tag, an insert into a capped collection removes no old
// documents, so a test can show verifyCapped catches it.
var faultSkipCappedEvict atomic.Bool

// faultSkipVerify is a test-only switch: while set, verifyGroup checks
// nothing, so a test can corrupt the store behind the engine's back (as a
// disk or an old bug would) and show that Validate finds it. Without the
// tag nothing reads it.
var faultSkipVerify atomic.Bool

// verifyGroup checks the engine's invariants over the keys one commit group
// touched (storage.Hooks.Verify: builds with the invariants tag only). It
// runs on the pipeline goroutine after the group is durable and its
// catalog published, so the store holds exactly that group's outcome.
//
// It checks the touched keys rather than running CheckIndexes over every
// touched collection: a full check reads the whole collection, which makes
// a load of n documents cost O(n²) under the tag (the crash test and the
// engine's race tests insert thousands of documents in hundreds of groups).
// The per-key check uses the same entry computation (entriesOf) and
// catches a missing or mis-valued entry of every document the group wrote,
// and an entry the group wrote for a document that does not produce it.
// Alone it cannot see a stale entry of a document the group deleted
// without touching the entry (that needs the old document), so a touched
// collection of at most fullCheckDocs documents also gets the full
// CheckIndexes, which does.
func (e *Engine) verifyGroup(touched [][]byte) {
	if len(touched) == 0 || faultSkipVerify.Load() {
		return
	}
	owner := map[uint64]*catalog.Collection{} // collection and index ids
	for _, c := range e.cat.Current().Collections("") {
		owner[c.ID] = c
		for _, ix := range c.Indexes {
			owner[ix.ID] = c
		}
	}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	colls := map[uint64]bool{}
	for _, k := range touched {
		space, id, rest, ok := storage.SplitKey(k)
		coll := owner[id]
		if !ok || coll == nil { // not document or index data, or dropped since
			continue
		}
		if space == storage.SpaceDocument {
			colls[id] = true
			e.verifyDocument(snap, coll, rest)
		} else {
			e.verifyEntry(snap, coll, id, k, rest)
		}
	}
	for id := range colls {
		e.verifyTail(snap, id)
		e.verifySmallCollection(snap, owner[id])
		e.verifyCapped(snap, owner[id])
	}
}

// verifyCapped checks "Capped within limits" (capped.go) for a capped
// collection the group touched: the meta record within the limits (the
// size cap plus what updates grew since the last insert), and,
// for a collection of at most fullCheckDocs documents, the meta record
// equal to what the documents and order records hold, each document with
// one forward and one reverse record naming each other.
func (e *Engine) verifyCapped(snap *storage.Snapshot, coll *catalog.Collection) {
	lim, ok := CappedOf(coll)
	if !ok {
		return
	}
	fail := func(format string, args ...any) {
		invariants.Fail("Capped within limits", "%s.%s: "+format, append([]any{coll.DB, coll.Name}, args...)...)
	}
	v, found, err := snap.Get(nil, naturalKey(nil, coll.ID, 'm'))
	if err != nil {
		return
	}
	var m cappedMeta
	if found {
		if m, err = decodeCappedMeta(v); err != nil {
			fail("%v", err)
		}
	}
	if m.count > 1 && (m.size > uint64(lim.Size)+m.grown || lim.Max > 0 && m.count > uint64(lim.Max)) {
		fail("holds %d documents of %d bytes (%d grown by updates), beyond size %d max %d", m.count, m.size, m.grown, lim.Size, lim.Max)
	}
	if m.count > fullCheckDocs {
		return
	}
	var count, size uint64
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return
	}
	defer it.Close()
	for ok := it.First(); ok && count <= fullCheckDocs+1; ok = it.Next() {
		doc, err := it.Value()
		if err != nil {
			return
		}
		idKey := it.Key()[len(prefix):]
		count++
		size += uint64(len(doc))
		seq, found, err := snap.Get(nil, reverseKey(nil, coll.ID, idKey))
		if err != nil || !found || len(seq) != 8 {
			fail("document %x has no order record", idKey)
			return
		}
		fwd, found, err := snap.Get(nil, forwardKey(nil, coll.ID, binary.BigEndian.Uint64(seq)))
		rid, fsize, ok := splitForward(fwd)
		if err == nil && (!found || !ok || !bytes.Equal(rid, idKey) || fsize != len(doc)) {
			fail("document %x: its order record %x does not name it with its size", idKey, seq)
		}
	}
	if count != m.count || size != m.size {
		fail("meta says %d documents of %d bytes; the collection holds %d of %d", m.count, m.size, count, size)
	}
}

// fullCheckDocs bounds the collections verifyGroup checks in full: small
// enough that a check per group stays cheap, large enough to cover the
// collections of unit tests.
const fullCheckDocs = 256

// verifySmallCollection runs CheckIndexes over coll when it holds at most
// fullCheckDocs documents and no index is building (a build's entries lag
// its documents until it completes).
func (e *Engine) verifySmallCollection(snap *storage.Snapshot, coll *catalog.Collection) {
	if len(coll.Indexes) == 0 {
		return
	}
	for _, ix := range coll.Indexes {
		if ix.Building {
			return
		}
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return
	}
	n := 0
	for ok := it.First(); ok && n <= fullCheckDocs; ok = it.Next() {
		n++
	}
	if it.Close() != nil || n > fullCheckDocs {
		return
	}
	if err := e.CheckIndexes(Namespace{coll.DB, coll.Name}); err != nil {
		invariants.Fail("Indexes follow documents", "%v", err)
	}
}

// verifyDocument checks that the document with encoded _id idKey, if it
// exists, has every entry it produces ("Indexes follow documents").
func (e *Engine) verifyDocument(snap *storage.Snapshot, coll *catalog.Collection, idKey []byte) {
	if len(coll.Indexes) == 0 {
		return
	}
	doc, found, err := snap.Get(nil, storage.DocKey(nil, coll.ID, idKey))
	if err != nil || !found {
		return
	}
	entries, _, err := e.entriesOf(coll, doc, idKey)
	if err != nil {
		invariants.Fail("Indexes follow documents", "document %x of %s.%s: %v", idKey, coll.DB, coll.Name, err)
	}
	for _, en := range entries {
		v, found, err := snap.Get(nil, en.key)
		switch {
		case err != nil:
			continue
		case !found && en.ix.Building:
			// A building index lacks the entries of documents its scan has
			// not reached yet, among them one written in the same group just
			// before the build registered it (that write saw no such index);
			// the scan adds them ("Builds see current documents"), and the
			// build's end is checked whole.
		case !found:
			invariants.Fail("Indexes follow documents", "document %x of %s.%s has no entry %x in index %s",
				idKey, coll.DB, coll.Name, en.key, en.ix.Name)
		case en.spec.Unique && !en.ix.Building && !holdsID(v, idKey):
			// (while a unique index builds, two documents may share a key)
			invariants.Fail("Indexes follow documents", "entry %x of unique index %s of %s.%s names %x, not its document %x",
				en.key, en.ix.Name, coll.DB, coll.Name, v, idKey)
		case (!en.spec.Unique || !en.ix.Building) && !bytes.Equal(v, en.value(idKey)):
			invariants.Fail("Indexes follow documents", "entry %x of index %s of %s.%s holds %x, its document %x gives %x",
				en.key, en.ix.Name, coll.DB, coll.Name, v, idKey, en.value(idKey))
		}
	}
}

// verifyEntry checks that index entry key, if it exists, belongs to a
// document that produces it ("Indexes follow documents").
func (e *Engine) verifyEntry(snap *storage.Snapshot, coll *catalog.Collection, ixID uint64, key, rest []byte) {
	var ix *catalog.Index
	for i := range coll.Indexes {
		if coll.Indexes[i].ID == ixID {
			ix = &coll.Indexes[i]
		}
	}
	v, found, err := snap.Get(nil, key)
	if err != nil || !found || ix == nil {
		return
	}
	spec, err := e.specs.get(*ix)
	if err != nil {
		return
	}
	rid := v
	if spec.Unique {
		if rid, _, err = splitUniqueValue(v); err != nil {
			invariants.Fail("Indexes follow documents", "entry %x of index %s: value %x does not decode: %v", key, ix.Name, v, err)
		}
	} else {
		tail := rest
		for range spec.KeyParts() {
			n, err := keystring.Len(tail)
			if err != nil {
				invariants.Fail("Indexes follow documents", "entry %x of index %s does not decode: %v", key, ix.Name, err)
			}
			tail = tail[n:]
		}
		rid = tail
	}
	doc, found, err := snap.Get(nil, storage.DocKey(nil, coll.ID, rid))
	if err != nil {
		return
	}
	if !found {
		invariants.Fail("Indexes follow documents", "entry %x of index %s of %s.%s names document %x, which does not exist",
			key, ix.Name, coll.DB, coll.Name, rid)
	}
	entries, _, err := e.entriesOf(coll, doc, rid)
	if err != nil {
		return
	}
	for _, en := range entries {
		if bytes.Equal(en.key, key) {
			return
		}
	}
	invariants.Fail("Indexes follow documents", "entry %x of index %s of %s.%s is not one its document %x produces",
		key, ix.Name, coll.DB, coll.Name, rid)
}

// verifyTail checks "Tail bound" (write.go) for collection collID: no
// stored document key is above its bound.
func (e *Engine) verifyTail(snap *storage.Snapshot, collID uint64) {
	bound, ok := e.tails.last[collID]
	if !ok {
		return
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, collID)
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return
	}
	defer it.Close()
	if it.Last() && bytes.Compare(it.Key(), bound) > 0 {
		invariants.Fail("Tail bound", "collection %d holds document key %x above its tail bound %x", collID, it.Key(), bound)
	}
}
