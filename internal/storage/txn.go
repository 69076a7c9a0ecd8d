package storage

import (
	"bytes"
	"errors"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/invariants"
)

type opKind uint8

const (
	opSet opKind = iota
	opDelete
	opDeleteRange
)

type op struct {
	kind  opKind
	key   []byte
	value []byte // the end key for opDeleteRange
}

type hook struct {
	afterOps int // the number of ops when it was registered
	fn       func()
}

// Txn is what a request function sees: reads of the committed store plus the
// earlier requests of its group plus its own writes, and writes that join the
// group only if the function returns nil.
type Txn struct {
	batch  *pebble.Batch // the group's indexed batch
	ops    []op
	latest map[string]int // key → index of its newest point op in ops
	ranges []int          // indexes of range deletions in ops
	hooks  []hook
	arena  []byte
	gid    uint64 // the pipeline goroutine while a request runs; invariants builds only
	clock  *hlc.Clock
	flight *flight // the group the request belongs to
	// tx, when set, is the transaction this is one statement of
	// (Transaction.Run): reads see its view, not a group's batch.
	tx *Transaction
	// err fails the request whatever its function returns (a Tick in a
	// transaction statement).
	err error
	// commits is the prepared transaction this request commits: its held
	// keys are not a conflict (prepare.go).
	commits *Transaction
	// known holds PrefetchHas's answers for this request: whether each key
	// is in the store as the group sees it (its own writes aside).
	known map[string]bool
	// sorted and tables are PrefetchHas's scratch.
	sorted, tables [][]byte
	// unf, when set, is the store's unflushed set: a document key it
	// does not name is read from the tables alone ("Unflushed documents
	// known", unflushed.go); a standalone store's pipeline only.
	unf *unflushed
	pdb *pebble.DB
	// docs, when set, serves Get of a document key no write of the
	// group's or the request's covers from the document cache (invariant
	// "Group reads through the cache", doccache.go): a standalone store's
	// pipeline only.
	docs *visibility
}

// errTickInTransaction fails a transaction statement that asked for a
// cluster time: a transaction's changes take the commit's (Commit's also).
var errTickInTransaction = errors.New("storage: a transaction statement takes no cluster time; its changes take the commit's")

// Tick returns a new cluster time for one change the request makes: above
// every time issued before, in this group or any earlier one, and persisted
// with the group so no restart issues it again (invariant "Cluster time
// survives restart"). Times a request takes and then fails with are
// skipped, not reused. Call it only from the request's function.
func (t *Txn) Tick() hlc.Timestamp {
	if t.tx != nil {
		t.err = errTickInTransaction
		return 0
	}
	ts := t.clock.Now()
	t.flight.maxTick = ts
	return ts
}

// OnPipeline reports whether the caller runs inside one of this Txn's
// requests on the commit pipeline's goroutine ("Serial apply"). Only
// builds with the invariants tag can tell; others always report true.
func (t *Txn) OnPipeline() bool {
	if !invariants.Enabled {
		return true
	}
	return t.gid != 0 && t.gid == invariants.GoroutineID()
}

// appendTouched appends copies of the request's point keys to dst.
func (t *Txn) appendTouched(dst [][]byte) [][]byte {
	for _, o := range t.ops {
		if o.kind != opDeleteRange {
			dst = append(dst, append([]byte(nil), o.key...))
		}
	}
	return dst
}

func (t *Txn) reset(b *pebble.Batch) {
	t.batch = b
	t.ops = t.ops[:0]
	t.latest = clearedKeys(t.latest)
	t.ranges = t.ranges[:0]
	t.hooks = t.hooks[:0]
	t.arena = t.arena[:0]
	t.err = nil
	t.commits = nil
	t.known = clearedKeys(t.known)
}

// maxKeptKeys bounds the entries of a per-request (or per-group) map that
// is cleared for reuse rather than dropped: clear costs a map's capacity,
// not its length, so one bulk insert's map of thousands of keys made every
// later one-key request pay for clearing it (4,236 instructions per update
// in BenchmarkUpdateYCSB after its load's 1,000-document inserts).
const maxKeptKeys = 64

// clearedKeys is m emptied for reuse, or nil (made again when needed) when
// it held more than maxKeptKeys entries.
func clearedKeys[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > maxKeptKeys {
		return nil
	}
	clear(m)
	return m
}

// keep copies b into the request's arena so callers may reuse their buffers.
func (t *Txn) keep(b []byte) []byte {
	start := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// Get appends the value of key as this request sees it to dst.
func (t *Txn) Get(dst, key []byte) ([]byte, bool, error) {
	if v, decided, found := t.own(key); decided {
		return append(dst, v...), found, nil
	}
	if t.tx != nil {
		return t.tx.Get(dst, key)
	}
	if t.docs != nil && len(key) > 0 && key[0] == SpaceDocument {
		if out, ok := t.getCached(dst, key); ok {
			return out, true, nil
		}
	}
	return get(t.batch, dst, key)
}

// own is key's state as the request's own writes decide it (decided:
// a write or range deletion of the request covers it; found and v: the
// value it wrote).
func (t *Txn) own(key []byte) (v []byte, decided, found bool) {
	if i, ok := t.latest[string(key)]; ok {
		if t.rangeDeletedAfter(key, i) {
			return nil, true, false
		}
		o := t.ops[i]
		if o.kind == opDelete {
			return nil, true, false
		}
		return o.value, true, true
	}
	if t.rangeDeletedAfter(key, -1) {
		return nil, true, false
	}
	return nil, false, false
}

// Has reports whether key exists as this request sees it. Its callers
// expect the key absent (an insert's uniqueness check), so its read of
// the store is a prefix seek that consults every level's bloom filter,
// the last level's too — which Pebble's Get skips, reading a data block
// of the bottom level's table for every key it does not find (invariant
// "Absent keys stop at the filters", doc.go; about 8 µs against 2 µs a
// key on a compacted store, BENCHMARKS.md "Session 13"). A document key
// the unflushed set does not name is read from the tables alone
// (invariant "Unflushed documents known", unflushed.go).
func (t *Txn) Has(key []byte) (bool, error) {
	if _, decided, found := t.own(key); decided {
		return found, nil
	}
	if t.tx != nil {
		_, found, err := t.tx.Get(nil, key)
		return found, err
	}
	found, known := t.known[string(key)]
	var err error
	if !known {
		if t.unf != nil && !t.unf.mayHold(key, t.unf.prune()) {
			found, err = t.tablesHave(key)
		} else {
			found, err = hasKey(t.batch, key)
		}
	}
	if invariants.Enabled && err == nil {
		if _, want, gerr := get(t.batch, nil, key); gerr == nil && want != found {
			invariants.Fail("Absent keys stop at the filters", "key %x: the filtered seek found %v, Get found %v", key, found, want)
		}
	}
	return found, err
}

// PrefetchHas reads, for a later Has of each of keys in this request,
// whether the key is in the store as the group sees it: in ascending key
// order through one iterator, which costs less than a fresh seek per key
// (Pebble keeps each level's table open and moves forward from the
// previous key; an insert batch checks its ids so). It needs no order of
// keys and may be given keys Has is never asked about. Has still answers
// from the request's own writes first, since they come later.
//
// Invariant "Prefetched answers hold for the request": the group's
// batch and the store do not change while a request runs (its writes
// join the batch only when it returns, and only the pipeline goroutine
// commits: "Serial apply"), so an answer read at any point of the request
// is the one a seek would give later. Builds with the invariants tag
// compare every Has with Get (TestPrefetchHasMatchesGet). Keys the
// unflushed set does not name go through a second iterator over the
// tables alone ("Unflushed documents known").
func (t *Txn) PrefetchHas(keys [][]byte) error {
	if t.tx != nil || len(keys) == 0 {
		return nil // a transaction's statement reads its view: Has asks it
	}
	// Keys the unflushed set does not name are read from the tables
	// alone ("Unflushed documents known"); the others through the batch.
	t.sorted, t.tables = t.sorted[:0], t.tables[:0]
	if t.unf != nil {
		armed := t.unf.prune()
		for _, k := range keys {
			if t.unf.mayHold(k, armed) {
				t.sorted = append(t.sorted, k)
			} else {
				t.tables = append(t.tables, k)
			}
		}
	} else {
		t.sorted = append(t.sorted, keys...)
	}
	if t.known == nil {
		t.known = make(map[string]bool, len(keys))
	}
	err := t.seekEach(t.sorted, func() (*pebble.Iterator, error) {
		return t.batch.NewIter(&pebble.IterOptions{UseL6Filters: true})
	})
	if err == nil {
		err = t.seekEach(t.tables, t.newTablesIter)
	}
	clear(t.sorted) // keep no caller's buffers
	clear(t.tables)
	if invariants.Enabled && err == nil && t.unf != nil {
		t.checkTablesAnswers()
	}
	return err
}

// seekEach records in t.known whether each of keys is found by a prefix
// seek of an iterator from open, in ascending key order (keys is sorted
// in place); no keys opens nothing.
func (t *Txn) seekEach(keys [][]byte, open func() (*pebble.Iterator, error)) error {
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, bytes.Compare)
	it, err := open()
	if err != nil {
		return err
	}
	var last []byte
	for i, k := range keys {
		if i > 0 && bytes.Equal(k, last) {
			continue
		}
		last = k
		t.known[string(k)] = it.SeekPrefixGE(k) && bytes.Equal(it.Key(), k)
	}
	return it.Close()
}

// newTablesIter is an iterator over Pebble's tables alone (no batch, no
// memtable), with every level's bloom filters: for keys the unflushed set
// does not name, which only the tables may hold.
func (t *Txn) newTablesIter() (*pebble.Iterator, error) {
	return t.pdb.NewIter(&pebble.IterOptions{UseL6Filters: true, OnlyReadGuaranteedDurable: true})
}

// tablesHave is hasKey for a key the unflushed set does not name.
func (t *Txn) tablesHave(key []byte) (bool, error) {
	it, err := t.newTablesIter()
	if err != nil {
		return false, err
	}
	found := it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key)
	if err := it.Close(); err != nil {
		return false, err
	}
	if invariants.Enabled {
		t.checkUnflushed(key, found)
	}
	return found, nil
}

// checkTablesAnswers checks every answer PrefetchHas read from the tables
// alone against the batch's and the memtables' (invariants builds).
func (t *Txn) checkTablesAnswers() {
	for k, found := range t.known {
		if !t.unf.mayHold([]byte(k), t.unf.prune()) {
			t.checkUnflushed([]byte(k), found)
		}
	}
}

// checkUnflushed fails invariant "Unflushed documents known" when the
// seek of the batch and the memtables does not answer found for key, which
// the tables alone answered (invariants builds).
func (t *Txn) checkUnflushed(key []byte, found bool) {
	if want, err := hasKey(t.batch, key); err == nil && want != found {
		invariants.Fail("Unflushed documents known", "key %x: the tables alone found %v, the batch and memtables %v", key, found, want)
	}
}

// hasKey reports whether b (an indexed batch: its writes over the store)
// holds key, by a prefix seek that uses the bloom filters of every level.
func hasKey(b *pebble.Batch, key []byte) (bool, error) {
	it, err := b.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return false, err
	}
	found := it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key)
	return found, it.Close()
}

func (t *Txn) rangeDeletedAfter(key []byte, opIndex int) bool {
	for _, r := range t.ranges {
		if r > opIndex && bytes.Compare(key, t.ops[r].key) >= 0 && bytes.Compare(key, t.ops[r].value) < 0 {
			return true
		}
	}
	return false
}

// Set writes key = value.
func (t *Txn) Set(key, value []byte) {
	t.pushPoint(op{kind: opSet, key: t.keep(key), value: t.keep(value)})
}

// Append writes key = value for a key no request reads back (a log's new
// entry): unlike Set it is not indexed for the request's own Get, which
// saves a map entry per write; RollbackTo and a failed request discard it
// as they discard any write.
func (t *Txn) Append(key, value []byte) {
	t.ops = append(t.ops, op{kind: opSet, key: t.keep(key), value: t.keep(value)})
}

// Delete removes key.
func (t *Txn) Delete(key []byte) {
	t.pushPoint(op{kind: opDelete, key: t.keep(key)})
}

// DeleteRange removes every key in [start, end).
func (t *Txn) DeleteRange(start, end []byte) {
	t.ranges = append(t.ranges, len(t.ops))
	t.ops = append(t.ops, op{kind: opDeleteRange, key: t.keep(start), value: t.keep(end)})
}

func (t *Txn) pushPoint(o op) {
	if t.latest == nil {
		t.latest = make(map[string]int)
	}
	t.latest[string(o.key)] = len(t.ops)
	t.ops = append(t.ops, o)
}

// OnUndo registers fn to run, on the pipeline goroutine, if the writes made
// so far are discarded: by RollbackTo a savepoint taken before now, or because
// the request fails. Undo functions run newest first. Callers use it to keep
// in-memory state that follows the writes (the catalog's working copy) exact.
func (t *Txn) OnUndo(fn func()) {
	t.hooks = append(t.hooks, hook{afterOps: len(t.ops), fn: fn})
}

// Savepoint marks the writes so far, for RollbackTo.
type Savepoint struct{ ops, hooks int }

// Savepoint returns a mark of the request's writes so far.
func (t *Txn) Savepoint() Savepoint { return Savepoint{len(t.ops), len(t.hooks)} }

// RollbackTo discards every write and OnApplied hook since sp, so one part of
// a request (a document of a batch) can fail without failing the others.
func (t *Txn) RollbackTo(sp Savepoint) {
	if sp.ops == len(t.ops) && sp.hooks == len(t.hooks) {
		return
	}
	t.ops = t.ops[:sp.ops]
	t.undo(sp.hooks)
	clear(t.latest)
	if t.latest == nil {
		t.latest = make(map[string]int) // ops made by Append alone
	}
	t.ranges = t.ranges[:0]
	for i, o := range t.ops {
		if o.kind == opDeleteRange {
			t.ranges = append(t.ranges, i)
		} else {
			t.latest[string(o.key)] = i
		}
	}
}

// undo runs and forgets the undo hooks registered since the first keep hooks.
func (t *Txn) undo(keep int) {
	for i := len(t.hooks) - 1; i >= keep; i-- {
		t.hooks[i].fn()
	}
	t.hooks = t.hooks[:keep]
}

// Len is the number of writes the request has made so far.
func (t *Txn) Len() int { return len(t.ops) }

// applyTo copies the request's writes into the group batch.
func (t *Txn) applyTo(b *pebble.Batch) error {
	for _, o := range t.ops {
		var err error
		switch o.kind {
		case opSet:
			err = b.Set(o.key, o.value, nil)
		case opDelete:
			err = b.Delete(o.key, nil)
		case opDeleteRange:
			err = b.DeleteRange(o.key, o.value, nil)
		default:
			err = errors.New("storage: unknown op kind")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// NewIter iterates keys in [lower, upper) as the group sees them: the
// committed store plus earlier requests of this group, but not this
// request's own writes (they join the group only when it returns). An index
// build reads the documents it indexes through it.
func (t *Txn) NewIter(lower, upper []byte) (*Iter, error) {
	if t.tx != nil {
		return t.tx.NewIter(lower, upper)
	}
	it, err := t.batch.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	i := &Iter{it: it}
	if invariants.Enabled {
		i.cc.Opened()
	}
	return i, nil
}
