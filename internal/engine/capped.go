package engine

import (
	"encoding/binary"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Capped collections. Documents stay clustered by _id ("Clustered by _id");
// a capped collection adds its insertion order in the natural keyspace:
//
//	n <collID> 'm'                → count, size, head, next, grown (uvarints)
//	n <collID> 'f' <seq, 8 bytes> → keystring(_id) of the document inserted
//	                                seq-th, then its size (4 bytes)
//	n <collID> 'r' <keystring(_id)> → its seq (8 bytes)
//
// Sequence numbers start at 1 and rise with every insert; head is at or
// below the oldest live seq, next is the seq the next insert takes; grown
// is what updates added to size since the limits were last enforced. The
// forward records give natural order ($natural, tailable cursors); the
// reverse records let a delete or an update find a document's record.
//
// Invariant "Capped within limits" (see doc.go): after every request, a
// capped collection's meta record says exactly how many documents it holds
// and the sum of their BSON sizes, every document has one forward and one
// reverse record naming each other, and count ≤ max and size ≤ the size
// cap. insertOne enforces it in the request that inserts: it stores the
// document, then removes the oldest documents (with their index entries
// and order records) until the collection is within its limits again,
// all under one savepoint, so a failed insert removes nothing.

// CappedLimits are a capped collection's limits: create's size (bytes of
// BSON) and max (documents; 0 is no limit).
type CappedLimits struct {
	Size, Max int64
}

// CappedOf reads c's limits from its options; ok is false for a collection
// that is not capped. The command layer stores capped options normalized
// (capped: true, size and max as integers; see commands' cappedOptions).
func CappedOf(c *catalog.Collection) (CappedLimits, bool) {
	if c == nil || len(c.Options) == 0 {
		return CappedLimits{}, false
	}
	opts := bsoncore.Document(c.Options)
	if on, ok := opts.Lookup("capped").BooleanOK(); !ok || !on {
		return CappedLimits{}, false
	}
	var l CappedLimits
	if n, ok := bsonx.AsInt64(opts.Lookup("size")); ok {
		l.Size = n
	}
	if n, ok := bsonx.AsInt64(opts.Lookup("max")); ok && n > 0 {
		l.Max = n
	}
	return l, true
}

// MaxCappedDocs is what MongoDB stores for a max that is 0 or negative: no
// limit, shown as 2^31-1.
const MaxCappedDocs = 0x7fffffff

type cappedMeta struct{ count, size, head, next, grown uint64 }

func naturalKey(dst []byte, collID uint64, kind byte) []byte {
	return append(storage.Prefix(dst, storage.SpaceNatural, collID), kind)
}

func forwardKey(dst []byte, collID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(naturalKey(dst, collID, 'f'), seq)
}

// forwardValue is a forward record: the document's encoded _id and its
// size, so an eviction from a collection without secondary indexes need
// not read the document.
func forwardValue(idKey []byte, size int) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte(nil), idKey...), uint32(size))
}

// splitForward splits a forward record into the encoded _id and the size.
func splitForward(v []byte) (idKey []byte, size int, ok bool) {
	if len(v) < 5 {
		return nil, 0, false
	}
	n := len(v) - 4
	return v[:n], int(binary.LittleEndian.Uint32(v[n:])), true
}

func reverseKey(dst []byte, collID uint64, idKey []byte) []byte {
	return append(naturalKey(dst, collID, 'r'), idKey...)
}

// loadCapped reads collID's meta record as the request sees it.
func loadCapped(tx *storage.Txn, collID uint64) (cappedMeta, error) {
	v, found, err := tx.Get(nil, naturalKey(nil, collID, 'm'))
	if err != nil || !found {
		return cappedMeta{head: 1, next: 1}, err
	}
	return decodeCappedMeta(v)
}

func decodeCappedMeta(v []byte) (cappedMeta, error) {
	var m cappedMeta
	for _, f := range []*uint64{&m.count, &m.size, &m.head, &m.next, &m.grown} {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return m, fmt.Errorf("engine: capped meta record is damaged")
		}
		*f, v = n, v[k:]
	}
	return m, nil
}

func (m cappedMeta) store(tx *storage.Txn, collID uint64) {
	var b [50]byte
	v := b[:0]
	for _, f := range []uint64{m.count, m.size, m.head, m.next, m.grown} {
		v = binary.AppendUvarint(v, f)
	}
	tx.Set(naturalKey(nil, collID, 'm'), v)
}

// cappedInsert records the document just stored at idKey (size bytes) in
// the collection's order and removes the oldest documents until the
// collection is within lim ("Capped within limits"). The caller rolls the
// request back to before the insert if it fails.
func (e *Engine) cappedInsert(tx *storage.Txn, ns Namespace, collID uint64, lim CappedLimits, idKey []byte, size int) error {
	m, err := loadCapped(tx, collID)
	if err != nil {
		return err
	}
	seq := m.next
	m.next++
	tx.Set(forwardKey(nil, collID, seq), forwardValue(idKey, size))
	var sb [8]byte
	tx.Set(reverseKey(nil, collID, idKey), binary.BigEndian.AppendUint64(sb[:0], seq))
	m.count++
	m.size += uint64(size)
	if !invariants.Enabled || !faultSkipCappedEvict.Load() {
		if err := e.evict(tx, ns, collID, lim, &m); err != nil {
			return err
		}
	}
	m.store(tx, collID)
	e.wake.mark(collID)
	return nil
}

// evict removes the oldest documents of collection collID, with their
// index entries and order records, until it is within lim, keeping at
// least one document (the newest); m is its meta record, updated.
func (e *Engine) evict(tx *storage.Txn, ns Namespace, collID uint64, lim CappedLimits, m *cappedMeta) error {
	m.grown = 0 // within limits again when it returns
	if m.count <= 1 || !(m.size > uint64(lim.Size) || lim.Max > 0 && m.count > uint64(lim.Max)) {
		return nil
	}
	c := e.cat.Working().Collection(ns.DB, ns.Coll)
	indexed := c != nil && len(c.Indexes) > 0
	var fk, dk, cur []byte
	for m.count > 1 && (m.size > uint64(lim.Size) || lim.Max > 0 && m.count > uint64(lim.Max)) {
		fk = forwardKey(fk[:0], collID, m.head)
		rec, found, err := tx.Get(nil, fk)
		if err != nil {
			return err
		}
		m.head++
		if !found {
			continue // removed by a delete
		}
		old, size, ok := splitForward(rec)
		if !ok {
			return fmt.Errorf("engine: capped collection %s: order record %d is damaged", ns, m.head-1)
		}
		dk = storage.DocKey(dk[:0], collID, old)
		if indexed { // its index entries go too: read it
			cur, found, err = tx.Get(cur[:0], dk)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("engine: capped collection %s: order record %d names a missing document", ns, m.head-1)
			}
			if err := e.indexDelete(tx, ns, cur, old); err != nil {
				return err
			}
		}
		tx.Delete(dk)
		tx.Delete(fk)
		tx.Delete(reverseKey(nil, collID, old))
		m.count--
		m.size -= uint64(size)
	}
	return nil
}

// cappedTrim brings ns within its limits after collMod changed them
// (cappedSize, cappedMax), in the same request, so "Capped within limits"
// holds after it too. MongoDB trims at the next insert instead.
func (e *Engine) cappedTrim(tx *storage.Txn, ns Namespace) error {
	collID, lim, ok := e.cappedOfNS(ns)
	if !ok {
		return nil
	}
	m, err := loadCapped(tx, collID)
	if err != nil {
		return err
	}
	if err := e.evict(tx, ns, collID, lim, &m); err != nil {
		return err
	}
	m.store(tx, collID)
	return nil
}

// cappedDelete forgets a deleted document's order record and counts.
func cappedDelete(tx *storage.Txn, collID uint64, idKey []byte, size int) error {
	m, err := loadCapped(tx, collID)
	if err != nil {
		return err
	}
	rk := reverseKey(nil, collID, idKey)
	v, found, err := tx.Get(nil, rk)
	if err != nil {
		return err
	}
	if !found || len(v) != 8 {
		return fmt.Errorf("engine: capped collection %d: document %x has no order record", collID, idKey)
	}
	tx.Delete(forwardKey(nil, collID, binary.BigEndian.Uint64(v)))
	tx.Delete(rk)
	m.count--
	m.size -= uint64(size)
	if m.count == 0 {
		m.head = m.next
	}
	m.store(tx, collID)
	return nil
}

// cappedResize accounts for the document at idKey rewritten from old to
// new bytes: the meta record's size and the forward record's.
func cappedResize(tx *storage.Txn, collID uint64, idKey []byte, old, new int) error {
	if old == new {
		return nil
	}
	m, err := loadCapped(tx, collID)
	if err != nil {
		return err
	}
	v, found, err := tx.Get(nil, reverseKey(nil, collID, idKey))
	if err != nil {
		return err
	}
	if !found || len(v) != 8 {
		return fmt.Errorf("engine: capped collection %d: document %x has no order record", collID, idKey)
	}
	tx.Set(forwardKey(nil, collID, binary.BigEndian.Uint64(v)), forwardValue(idKey, new))
	m.size = uint64(int64(m.size) + int64(new-old))
	if new > old {
		m.grown += uint64(new - old) // the next insert evicts for it
	}
	m.store(tx, collID)
	return nil
}

// cappedOfNS looks ns up in the working catalog (pipeline goroutine).
func (e *Engine) cappedOfNS(ns Namespace) (uint64, CappedLimits, bool) {
	c := e.cat.Working().Collection(ns.DB, ns.Coll)
	lim, ok := CappedOf(c)
	if !ok {
		return 0, lim, false
	}
	return c.ID, lim, true
}

// checkCappedFits refuses a document larger than the whole collection, as
// MongoDB does: it could not stay even alone.
func checkCappedFits(lim CappedLimits, size int) error {
	if int64(size) > lim.Size {
		return mongoerr.New(mongoerr.BadValue, "object to insert exceeds cappedMaxSize")
	}
	return nil
}

// wakeup tells tailable cursors waiting for data (awaitData) that their
// capped collection received documents. The pipeline marks a collection
// pending when a request inserts into it; the Committing hook seals the
// group's marks, and committed closes the channels of the sealed
// collections once the group is visible. Sealing keeps each group's marks
// apart: with the log sync overlapped, or a member's groups pipelined
// (storage's "Pipelined groups"), later groups apply, mark and seal while
// this one's committed waits, and their marks must wait for their own
// commit — so the sealed marks are a queue, one entry per group, in
// Committing order, which is Committed's. A waiter takes its
// collection's channel before it reads, so it cannot miss an insert that
// commits between its read and its wait; a wakeup for a group that then
// failed only makes it read again.
type wakeup struct {
	pending map[uint64]bool // pipeline goroutine only: the group applying
	mu      sync.Mutex
	sealed  []map[uint64]bool // groups between Committing and committed, oldest first (nil: no marks)
	spare   map[uint64]bool   // a fired group's map, for the next marks
	ch      map[uint64]chan struct{}
}

// seal hands the applied group's marks to fire (the Committing hook, on
// the pipeline goroutine).
func (w *wakeup) seal() {
	w.mu.Lock()
	if len(w.pending) == 0 {
		w.sealed = append(w.sealed, nil)
	} else {
		w.sealed = append(w.sealed, w.pending)
		w.pending, w.spare = w.spare, nil
	}
	w.mu.Unlock()
}

// drop forgets the marks of groups that failed (the Failed hook, which
// runs when no group is between Committing and committed but failed ones).
func (w *wakeup) drop() {
	clear(w.pending)
	w.mu.Lock()
	clear(w.sealed)
	w.sealed = w.sealed[:0]
	w.mu.Unlock()
}

func (w *wakeup) mark(collID uint64) {
	if w.pending == nil {
		w.pending = map[uint64]bool{}
	}
	w.pending[collID] = true
}

func (w *wakeup) current(collID uint64) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.ch[collID]
	if c == nil {
		if w.ch == nil {
			w.ch = map[uint64]chan struct{}{}
		}
		c = make(chan struct{})
		w.ch[collID] = c
	}
	return c
}

// fire runs after a group committed (the Committed hook): it wakes the
// waiters of the collections the oldest sealed group marked.
func (w *wakeup) fire() {
	w.mu.Lock()
	if len(w.sealed) > 0 {
		m := w.sealed[0]
		// Shifted down rather than resliced, so that seal's appends reuse
		// the array (a group or two in flight: a copy of a pointer or two).
		n := copy(w.sealed, w.sealed[1:])
		w.sealed[n] = nil
		w.sealed = w.sealed[:n]
		for id := range m {
			if c := w.ch[id]; c != nil {
				close(c)
				delete(w.ch, id)
			}
		}
		if m != nil && w.spare == nil {
			clear(m)
			w.spare = m
		}
	}
	w.mu.Unlock()
}

// fireNow wakes collID's waiters at once: for a group applied outside the
// pipeline (a replica's), which is visible when its apply returns.
func (w *wakeup) fireNow(collID uint64) {
	w.mu.Lock()
	if c := w.ch[collID]; c != nil {
		close(c)
		delete(w.ch, collID)
	}
	w.mu.Unlock()
}

// CappedInserts returns a channel closed the next time a commit group
// inserts into the capped collection collID. Take it before reading, then
// wait on it (with a bound, and the caller's context) when the read found
// nothing. A channel taken for a collection that is then dropped is never
// closed: the waiter's bound ends the wait.
func (e *Engine) CappedInserts(collID uint64) <-chan struct{} { return e.wake.current(collID) }
