package engine

import (
	"context"
	"encoding/binary"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// Reader reads one collection from one snapshot: documents by _id, ranges
// of the _id order (the implicit _id index) and ranges of secondary index
// entries. A query plan opens one Reader so that every stage of it (an
// index scan and the fetches that follow it, the branches of an $or) sees
// the same moment.
//
// The reader's catalog matches its snapshot (catalog.Catalog.ReadBegin):
// an index is ready only if the snapshot holds all its entries, and a
// multikey flag is set if the snapshot holds a document with an array on
// its path.
type Reader struct {
	e    *Engine
	snap readView
	// closer ends what the reader owns at Close: its snapshot, or nothing
	// for a read inside a transaction (NewReaderIn), which reads the
	// transaction's view.
	closer interface{ Close() error }
	coll   *catalog.Collection // nil: no such collection (reads are empty)
	ixs    []IndexInfo
	asOf   hlc.Timestamp // non-zero: reads the collection as of this time (NewReaderAt)
	// ctx, when set, makes the reader wait on prepare conflicts
	// (PrepareConflicts); gen counts the snapshots it moved to since, old
	// holds the ones it left, closed with it.
	ctx context.Context
	gen uint64
	old []interface{ Close() error }
}

// IndexInfo is what the planner needs to know of one secondary index.
type IndexInfo struct {
	Name string
	Spec *index.Spec
	// Multikey: some document produced several keys in this index.
	Multikey bool
	// MultikeyPaths says which paths held arrays, when PathsKnown (see
	// catalog.Index.MultikeyPathsKnown).
	MultikeyPaths index.Multikey
	PathsKnown    bool
	// Building: the index is being filled and must not serve queries.
	Building bool
	// TypeBits: every entry's value holds its key's type bits
	// (catalog.Index.TypeBits); Cursor.IndexKey returns them.
	TypeBits bool
}

// NewReader opens a snapshot of ns. Close it when done.
func (e *Engine) NewReader(ns Namespace) (*Reader, error) {
	r := &Reader{e: e}
	var st *catalog.State
	for {
		var g uint64
		st, g = e.cat.ReadBegin()
		snap := e.db.NewSnapshot()
		r.snap, r.closer = snap, snap
		if e.cat.ReadValid(g) {
			break
		}
		_ = snap.Close()
	}
	if err := r.describe(st.Collection(ns.DB, ns.Coll)); err != nil {
		return nil, err
	}
	return r, nil
}

// readView is what a Reader reads: a snapshot, or a transaction's view
// (its snapshot plus its own writes).
type readView interface {
	Get(dst, key []byte) ([]byte, bool, error)
	NewIter(lower, upper []byte) (*storage.Iter, error)
}

// describe sets the reader's collection and index list; on an error it
// closes the reader.
func (r *Reader) describe(coll *catalog.Collection) error {
	r.coll = coll
	if r.coll == nil {
		return nil
	}
	for _, ix := range r.coll.Indexes {
		spec, err := r.e.specs.get(ix)
		if err != nil {
			_ = r.Close()
			return err
		}
		r.ixs = append(r.ixs, IndexInfo{Name: ix.Name, Spec: spec, Multikey: ix.Multikey, Building: ix.Building, TypeBits: ix.TypeBits,
			MultikeyPaths: multikeyOf(&ix), PathsKnown: ix.MultikeyPathsKnown()})
	}
	return nil
}

// Exists reports whether the collection existed when the reader opened.
func (r *Reader) Exists() bool { return r.coll != nil }

// CollectionID identifies the collection (0 when it does not exist); ids
// are never reused, so a cached plan keyed by it cannot outlive a drop.
func (r *Reader) CollectionID() uint64 {
	if r.coll == nil {
		return 0
	}
	return r.coll.ID
}

// Indexes lists the collection's secondary indexes.
func (r *Reader) Indexes() []IndexInfo { return r.ixs }

// Fetch appends the document whose encoded _id is rid to dst.
func (r *Reader) Fetch(dst, rid []byte) ([]byte, bool, error) {
	if r.coll == nil {
		return dst, false, nil
	}
	if r.asOf != 0 {
		return r.fetchAsOf(dst, rid)
	}
	if r.ctx != nil && r.e.db.AnyPrepared() {
		return r.fetchWaiting(dst, r.docKey(nil, rid)) // prepare_conflicts.go
	}
	var kb [64]byte
	return r.snap.Get(dst, r.docKey(kb[:0], rid))
}

// docKey is the storage key of the document whose record id is rid: its
// encoded _id, or for local.oplog.rs an entry's ts (oplog.go).
func (r *Reader) docKey(dst, rid []byte) []byte {
	if r.e.isOplog(r.coll) {
		return append(append(dst, storage.SpaceOplog), rid...)
	}
	return storage.DocKey(dst, r.coll.ID, rid)
}

// docPrefix is the prefix of the collection's documents' keys.
func (r *Reader) docPrefix() []byte {
	if r.e.isOplog(r.coll) {
		return []byte{storage.SpaceOplog}
	}
	return storage.Prefix(nil, storage.SpaceDocument, r.coll.ID)
}

// KeyRange is a range [Lo, Hi) of encoded keys within one keyspace (the
// collection's documents, keyed by encoded _id, or one index's entries);
// nil Lo starts at the beginning, nil Hi runs to the end.
type KeyRange struct{ Lo, Hi []byte }

// Docs iterates the documents whose encoded _id falls in rng, in _id order
// or reversed.
func (r *Reader) Docs(rng KeyRange, reverse bool) (*Cursor, error) {
	if r.coll == nil {
		return &Cursor{}, nil
	}
	if r.asOf != 0 {
		return r.docsAsOf(rng, reverse)
	}
	return r.open(r.docPrefix(), rng, reverse, nil)
}

// Entries iterates the entries of index ixName whose key (the encoded
// index key followed by the encoded _id) falls in rng. A missing index
// reads as empty.
func (r *Reader) Entries(ixName string, rng KeyRange, reverse bool) (*Cursor, error) {
	if r.coll == nil {
		return &Cursor{}, nil
	}
	ix := r.coll.Index(ixName)
	if ix == nil {
		return &Cursor{}, nil
	}
	var spec *index.Spec
	for _, info := range r.ixs {
		if info.Name == ixName {
			spec = info.Spec
		}
	}
	return r.open(storage.Prefix(nil, storage.SpaceIndex, ix.ID), rng, reverse, spec)
}

func (r *Reader) open(prefix []byte, rng KeyRange, reverse bool, spec *index.Spec) (*Cursor, error) {
	lo := append(append([]byte(nil), prefix...), rng.Lo...)
	var hi []byte
	if rng.Hi == nil {
		hi = storage.PrefixEnd(prefix)
	} else {
		hi = append(append([]byte(nil), prefix...), rng.Hi...)
	}
	it, err := r.snap.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	c := &Cursor{it: it, prefix: prefix, reverse: reverse}
	if r.ctx != nil {
		c.chk = &checkedCursor{r: r, gen: r.gen, lo: lo, hi: hi}
	}
	if spec != nil {
		c.index, c.parts, c.unique = true, spec.KeyParts(), spec.Unique
	}
	return c, nil
}

// RecordIndexAccess counts one use of index name ("_id_" for the _id
// index) for $indexStats. The planner calls it once per executed query for
// each index of the winning plan, as MongoDB counts accesses.ops; opening
// key ranges (Entries) counts nothing, so trial plans and $in point lists
// do not inflate the count.
func (r *Reader) RecordIndexAccess(name string) {
	if r.coll == nil {
		return
	}
	if id, ok := usageID(r.coll, name); ok {
		r.e.usage.counter(id, r.e.now).ops.Add(1)
	}
}

// Close releases the snapshot (and those it left, PrepareConflicts).
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	if r.old != nil {
		err = errors.Join(err, r.closeOld())
	}
	return err
}

// Capped reports the collection's limits when it is capped.
func (r *Reader) Capped() (CappedLimits, bool) { return CappedOf(r.coll) }

// Natural iterates a capped collection's documents in insertion order (or
// reversed), starting after sequence number after (0: from the oldest);
// Cursor.Seq tells where a tailable cursor stands. A collection that is
// not capped reads in _id order, which is its natural order.
func (r *Reader) Natural(after uint64, reverse bool) (*Cursor, error) {
	if _, ok := r.Capped(); !ok {
		return r.Docs(KeyRange{}, reverse)
	}
	if r.e.isOplog(r.coll) { // an entry's position is its ts (oplog.go)
		var lo [8]byte
		binary.BigEndian.PutUint64(lo[:], after+1)
		return r.open(r.docPrefix(), KeyRange{Lo: lo[:]}, reverse, nil)
	}
	lo := forwardKey(nil, r.coll.ID, after+1)
	hi := naturalKey(nil, r.coll.ID, 'f'+1)
	it, err := r.snap.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	return &Cursor{it: it, reverse: reverse, natural: r}, nil
}

// HasPosition reports whether the document a tailable cursor last
// returned, the seq-th insert, is still in the collection; when it is not,
// the cursor lost its place (CappedPositionLost).
func (r *Reader) HasPosition(seq uint64) (bool, error) {
	if r.coll == nil {
		return false, nil
	}
	if r.e.isOplog(r.coll) {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		_, found, err := r.snap.Get(nil, r.docKey(nil, k[:]))
		return found, err
	}
	_, found, err := r.snap.Get(nil, forwardKey(nil, r.coll.ID, seq))
	return found, err
}

// Cursor walks one key range of a Reader. Key, RID and Value are valid
// until the next call to Next.
type Cursor struct {
	it      *storage.Iter
	prefix  []byte // the keyspace's: Key strips it, Skip's seek key starts with it
	reverse bool
	started bool
	index   bool
	parts   int
	unique  bool
	// natural: the cursor walks a capped collection's order records and
	// reads each document from the reader's snapshot.
	natural *Reader
	// asof: the cursor walks a versioned collection's history and yields
	// each document as it was at a cluster time (history_asof.go).
	asof *asOfWalk
	// chk: the cursor's reader waits on prepare conflicts
	// (prepare_conflicts.go).
	chk *checkedCursor
	err error // what ended an as-of walk (or a prepare wait) early; Close returns it
	doc []byte
	rid []byte
	// target: set by Skip, the whole key the next move seeks to.
	target    []byte
	hasTarget bool
}

// Skip makes the next Next seek rather than step: to the first entry whose
// key (within the keyspace, as Key returns it) is at or after key, or, in
// a reverse cursor, the last entry before key, within the cursor's range.
// key must lie ahead of the current entry in the cursor's direction (an
// index scan leaving keys its bounds exclude), so no entry Next would have
// returned is passed over except those before key. Natural cursors do not
// skip: their keys are insertion orders, not keys.
func (c *Cursor) Skip(key []byte) {
	if c.natural != nil {
		c.err = errSkipNatural
		return
	}
	c.target = append(append(c.target[:0], c.prefix...), key...)
	c.hasTarget = true
}

var errSkipNatural = errors.New("engine: Skip on a natural-order cursor")

// seekTarget moves the iterator to Skip's target; ok reports whether an
// entry is there.
func (c *Cursor) seekTarget() bool {
	c.hasTarget = false
	c.started = true
	if c.reverse {
		return c.it.SeekLT(c.target)
	}
	return c.it.SeekGE(c.target)
}

// Seq is the insertion sequence number of a natural cursor's current
// document.
func (c *Cursor) Seq() uint64 {
	k := c.it.Key()
	return binary.BigEndian.Uint64(k[len(k)-8:])
}

// nextNatural moves a natural cursor on and reads its document.
func (c *Cursor) nextNatural(ok bool) bool {
	for ; ok; ok = c.step() {
		rec, err := c.it.Value()
		if err != nil {
			return false
		}
		rid, _, ok := splitForward(rec)
		if !ok {
			return false
		}
		c.rid = append(c.rid[:0], rid...)
		doc, found, err := c.natural.Fetch(c.doc[:0], c.rid)
		if err != nil {
			return false
		}
		if found { // (always, in a snapshot kept by "Capped within limits")
			c.doc = doc
			return true
		}
	}
	return false
}

func (c *Cursor) step() bool {
	if c.reverse {
		return c.it.Prev()
	}
	return c.it.Next()
}

// Next moves to the next entry; false at the end.
func (c *Cursor) Next() bool {
	if c.it == nil {
		return false
	}
	if c.asof != nil {
		return c.nextAsOf()
	}
	if c.chk != nil {
		return c.nextChecked()
	}
	var ok bool
	switch {
	case c.hasTarget:
		ok = c.seekTarget()
	case c.started:
		ok = c.step()
	case c.reverse:
		c.started = true
		ok = c.it.Last()
	default:
		c.started = true
		ok = c.it.First()
	}
	if c.natural != nil {
		return c.nextNatural(ok)
	}
	return ok
}

// Key is the current entry's key within its keyspace: the encoded _id of a
// document, or the encoded index key (with the _id suffix of a non-unique
// index) of an index entry.
func (c *Cursor) Key() []byte {
	if c.natural != nil || c.asof != nil {
		return c.rid
	}
	return c.it.Key()[len(c.prefix):]
}

// IndexKey splits an index entry into its index key (without _id) and the
// encoded _id of its document.
func (c *Cursor) IndexKey() (key, rid []byte, err error) {
	k := c.Key()
	if c.unique {
		v, err := c.it.Value()
		if err != nil {
			return nil, nil, err
		}
		rid, _, err := splitUniqueValue(v)
		return k, rid, err
	}
	rest := k
	for range c.parts {
		n, err := keystring.Len(rest)
		if err != nil {
			return nil, nil, err
		}
		rest = rest[n:]
	}
	return k[:len(k)-len(rest)], rest, nil
}

// TypeBits is the current index entry's type bits (see
// index.Spec.KeysAndTypeBits); empty in an index without
// IndexInfo.TypeBits.
func (c *Cursor) TypeBits() ([]byte, error) {
	v, err := c.it.Value()
	if err != nil || !c.unique {
		return v, err
	}
	_, tb, err := splitUniqueValue(v)
	return tb, err
}

// splitUniqueValue splits the value of a unique index's entry into the
// encoded _id of its document and the key's type bits.
func splitUniqueValue(v []byte) (rid, typeBits []byte, err error) {
	n, err := keystring.Len(v)
	if err != nil {
		return nil, nil, err
	}
	return v[:n], v[n:], nil
}

// Value is the current entry's value (a document, for Docs).
func (c *Cursor) Value() (bsoncore.Document, error) {
	if c.natural != nil || c.asof != nil {
		return c.doc, nil
	}
	return c.it.Value()
}

// Close releases the cursor.
func (c *Cursor) Close() error {
	if c.it == nil {
		return nil
	}
	err := c.it.Close()
	c.it = nil
	if c.err != nil {
		return c.err
	}
	return err
}

// Indexes lists ns's secondary indexes with their parsed specifications.
func (e *Engine) Indexes(ns Namespace) ([]catalog.Index, []*index.Spec, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, nil, nil
	}
	specs := make([]*index.Spec, len(coll.Indexes))
	for i, ix := range coll.Indexes {
		s, err := e.specs.get(ix)
		if err != nil {
			return nil, nil, err
		}
		specs[i] = s
	}
	return coll.Indexes, specs, nil
}
