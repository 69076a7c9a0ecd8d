package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/invariants"
)

// ErrWriteConflict fails a transaction's statement or commit whose write
// meets a change it must not overwrite (invariant "First writer wins"):
// another open transaction wrote the key, or the key changed since the
// transaction's snapshot. The transaction is unchanged by the failed
// statement; the caller aborts it (MongoDB: WriteConflict, 112, with the
// TransientTransactionError label, so the whole transaction may be retried).
var ErrWriteConflict = errors.New("storage: write conflict")

// ErrTransactionDone is returned by a transaction used after its Commit or
// Abort.
var ErrTransactionDone = errors.New("storage: transaction already committed or aborted")

// ownWrite is a transaction's latest write of one key.
type ownWrite struct {
	seq   int // the number of keys the transaction had written before it
	value []byte
	del   bool
	// base is the key's value in the snapshot (baseOK: present), once
	// read (baseRead): when the key was claimed after something became
	// visible in the store, or by the first commit-time check that needs
	// it ("First writer wins" costs no read while nothing did).
	base     []byte
	baseOK   bool
	baseRead bool
}

// Transaction is a multi-statement transaction: it reads the store as it
// was at Begin plus its own writes, and its writes reach the store all at
// once at Commit, in one commit-pipeline request, or never.
//
// A Transaction is used by one goroutine at a time (a session runs its
// statements one after another).
type Transaction struct {
	db *DB
	// sv is the transaction's snapshot, shared with the transactions that
	// began while nothing changed ("Shared view current"); point reads
	// are snapshot Gets ("Cheap view").
	sv      *sharedView
	viewErr error // why there is no view (a closed store)
	// writes orders the transaction's written keys for iteration (an
	// indexed batch used only as a sorted container, never committed;
	// made at the first write, so a read-only transaction costs none);
	// own holds each key's latest write for reads and for Commit.
	writes *pebble.Batch
	own    map[string]*ownWrite
	// scratch is the memory statements grow, kept for the next
	// transaction in this memory (Scratch); made at the first write.
	scratch *Scratch
	done    bool
	// prepared: the transaction holds its keys against every writer
	// (prepare.go), under intents.mu.
	prepared bool
	// holds are keys a prepared transaction holds without writing them
	// (Prepare's holds), under intents.mu.
	holds map[string]struct{}
	cc    invariants.CloseChecker // every Transaction ends once
	// iters counts the iterators open on the view; the snapshot and the
	// batch they read are released when the transaction has ended and
	// the last of them closes ("Readers outlive the end"). Under mu: an
	// iterator may close on another goroutine than the one that ends the
	// transaction (a cursor's, and a session reaper's).
	mu    sync.Mutex
	iters int
	ended bool
	// iterated: the transaction opened an iterator (its goroutine sets
	// it, before the first). One that never did shares nothing with
	// other goroutines and ends without taking mu.
	iterated bool
	// released: the snapshot and the batch are freed (set under mu, read
	// without it by Released).
	released atomic.Bool
	// freed is released for a transaction that never opened an iterator,
	// which ends on its own goroutine with nothing shared (a plain store,
	// not an atomic one: read by the next user of its memory, after the
	// session's turn passed it on).
	freed bool
}

// Scratch is the memory a transaction's statements grow — the Txn they
// run in, the own-writes map and its entries with their value buffers —
// which the next transaction in the same memory reuses (engine's
// BeginReusing takes it with Scratch before zeroing a Transaction nothing
// reads any more, "Readers outlive the end", and gives it back with
// SetScratch), so a session's transactions stop allocating them. What a
// large transaction grew is dropped rather than kept (keepScratch).
type Scratch struct {
	stmt     Txn
	stmtBusy bool // stmt is running a statement (one does not nest another)
	own      map[string]*ownWrite
	// slab holds the entries handed out (newOwn); earlier, full slabs
	// stay where their entries point until the transaction ends.
	slab  []ownWrite
	added []string // the keys a claim added, to take back on a conflict
	// The commit's request (Commit), made once, and its also.
	tx     *Transaction
	commit func(*Txn) error
	also   func(*Txn) error
}

// Bounds on what a Scratch keeps from one transaction for the next.
const (
	keepScratchKeys  = 1 << 10
	keepScratchBytes = 1 << 20
)

// Scratch returns the memory tx's statements grew, for SetScratch on the
// next transaction in tx's memory; tx must have ended and be Released.
func (tx *Transaction) Scratch() *Scratch { return tx.scratch }

// SetScratch gives tx, just begun, the memory another transaction's
// statements grew (Scratch), emptied.
func (tx *Transaction) SetScratch(sc *Scratch) {
	if sc == nil {
		return
	}
	if len(sc.own) > keepScratchKeys {
		sc.own = nil
	}
	clear(sc.own)
	if cap(sc.slab) > keepScratchKeys {
		sc.slab = nil
	}
	sc.slab = sc.slab[:0]
	sc.added = sc.added[:0]
	st := &sc.stmt
	if cap(st.arena) > keepScratchBytes || cap(st.ops) > keepScratchKeys || len(st.latest) > keepScratchKeys {
		sc.stmt = Txn{}
	}
	st.reset(nil)
	sc.tx = tx
	tx.scratch = sc
}

// scratchFor is tx's Scratch, made at its first use.
func (tx *Transaction) scratchFor() *Scratch {
	if tx.scratch == nil {
		sc := &Scratch{tx: tx}
		sc.commit = sc.runCommit
		tx.scratch = sc
	}
	return tx.scratch
}

// newOwn is a new own-writes entry, its buffers reused when it had any.
func (sc *Scratch) newOwn() *ownWrite {
	if len(sc.slab) == cap(sc.slab) {
		// The full slab stays where its entries point.
		sc.slab = make([]ownWrite, 0, max(8, 2*cap(sc.slab)))
	}
	sc.slab = sc.slab[:len(sc.slab)+1]
	w := &sc.slab[len(sc.slab)-1]
	*w = ownWrite{value: w.value[:0], base: w.base[:0]}
	return w
}

// intents are the keys written by open transactions ("First writer wins").
type intents struct {
	mu    sync.Mutex
	owner map[string]*Transaction
	// prepared are the prepared transactions, nPrepared their number
	// (read without the lock: "Prepared holds its keys" costs nothing
	// while it is 0).
	prepared  map[*Transaction]struct{}
	nPrepared atomic.Int32
	// held lists, sorted, every key a prepared transaction holds
	// (sortHeld, under mu; PreparedIn searches it without the lock: a
	// new list replaces it, none is changed in place).
	held atomic.Pointer[[]string]
	// ended is closed when a prepared transaction ends (made by the
	// first waiter, PreparedEnded).
	ended chan struct{}
}

// Begin starts a transaction reading everything committed so far. End it
// with Commit or Abort.
// Its view is a shared snapshot (invariant "Cheap view").
func (db *DB) Begin() *Transaction {
	tx := new(Transaction)
	db.BeginIn(tx)
	return tx
}

// BeginIn is Begin into tx, a zero Transaction the caller allocated (as
// part of its own transaction object); tx must not move afterwards.
func (db *DB) BeginIn(tx *Transaction) {
	sv, err := db.beginViewChecked()
	tx.db, tx.sv, tx.viewErr = db, sv, err // own: made at the first write
	if invariants.Enabled {
		tx.cc.Opened()
	}
}

// BeginAtIn is BeginIn reading s, a snapshot the caller keeps open,
// instead of the store's present (a transaction at a cluster time: engine's
// snapshot history); done is called once neither the transaction nor any
// of its iterators reads s any more ("Readers outlive the end"). Its
// writes are checked at commit against every change since s, as any
// transaction's ("First writer wins").
func (db *DB) BeginAtIn(tx *Transaction, s *Snapshot, done func()) {
	sv := &sharedView{snap: s.snap, gen: genUnknown, done: done}
	sv.refs.Store(1)
	tx.db, tx.sv = db, sv
	if invariants.Enabled {
		tx.cc.Opened()
	}
}

// Len is the number of distinct keys the transaction has written.
func (tx *Transaction) Len() int { return len(tx.own) }

// Get appends the value of key as the transaction sees it to dst; an
// ended transaction answers ErrTransactionDone (its snapshot may be
// released: a point read's cursor can outlive it).
func (tx *Transaction) Get(dst, key []byte) ([]byte, bool, error) {
	if tx.done {
		return dst, false, ErrTransactionDone
	}
	if tx.own != nil { // a read-only transaction's map is nil: no lookup
		if w, ok := tx.own[string(key)]; ok {
			if w.del {
				return dst, false, nil
			}
			return append(dst, w.value...), true, nil
		}
	}
	return tx.viewGet(dst, key)
}

// viewGet appends key's value in the view to dst: a snapshot Get, which
// stops at the newest memtable or level holding the key, where a
// positioned iterator would seek every memtable and level (BENCHMARKS.md,
// "Transactions of two updates, session 11").
func (tx *Transaction) viewGet(dst, key []byte) ([]byte, bool, error) {
	if tx.sv == nil {
		return dst, false, tx.viewErr
	}
	return get(tx.sv.snap, dst, key)
}

// viewIter is a new iterator over the view.
func (tx *Transaction) viewIter(opts *pebble.IterOptions) (*pebble.Iterator, error) {
	if tx.sv == nil {
		return nil, tx.viewErr
	}
	return tx.sv.snap.NewIter(opts)
}

// NewIter iterates keys in [lower, upper) as the transaction sees them
// when it opens: the snapshot plus the transaction's writes so far.
func (tx *Transaction) NewIter(lower, upper []byte) (*Iter, error) {
	if tx.done {
		return nil, ErrTransactionDone
	}
	opts := &pebble.IterOptions{LowerBound: lower, UpperBound: upper}
	if tx.writes == nil { // nothing written yet: the snapshot alone
		it, err := tx.viewIter(opts)
		if err != nil {
			return nil, err
		}
		tx.iterated = true
		tx.mu.Lock()
		tx.iters++
		tx.mu.Unlock()
		i := &Iter{it: it, tx: tx}
		if invariants.Enabled {
			i.cc.Opened()
		}
		return i, nil
	}
	own, err := tx.writes.NewBatchOnlyIter(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	snap, err := tx.viewIter(opts)
	if err != nil {
		_ = own.Close()
		return nil, err
	}
	upTo := len(tx.own)
	m := &mergeIter{own: own, snap: snap, hidden: func(key []byte) bool {
		w, ok := tx.own[string(key)]
		return ok && w.seq < upTo
	}}
	tx.iterated = true
	tx.mu.Lock()
	tx.iters++
	tx.mu.Unlock()
	i := &Iter{m: m, tx: tx}
	if invariants.Enabled {
		i.cc.Opened()
	}
	return i, nil
}

// Run runs one statement of the transaction: fn reads the transaction's
// view through the Txn it gets and writes through it; its writes join the
// transaction only if fn returns nil and none of them conflicts ("First
// writer wins"), otherwise the transaction is as before the statement (its
// OnUndo hooks run). Range deletions and cluster times (Tick) are not
// available to statements: a transaction's changes take their time at
// commit.
func (tx *Transaction) Run(fn func(*Txn) error) (err error) {
	return tx.runStatement(0, fn)
}

// RunStatement runs one statement of tx, as Transaction.Run does, from
// inside the pipeline request t: the statement's function runs on the
// pipeline goroutine ("Serial apply"), so it may use state only that
// goroutine touches (the engine's working catalog, its caches), while its
// reads see tx's view and its writes join tx, not t's group. Writes the
// request makes through t itself commit with the group as usual.
func (t *Txn) RunStatement(tx *Transaction, fn func(*Txn) error) error {
	return tx.runStatement(t.gid, fn)
}

// runStatement runs fn in the Scratch's statement Txn (a new one when a
// statement runs inside another).
func (tx *Transaction) runStatement(gid uint64, fn func(*Txn) error) error {
	if tx.done {
		return ErrTransactionDone
	}
	sc := tx.scratchFor()
	if sc.stmtBusy {
		return tx.run(&Txn{tx: tx, gid: gid}, fn)
	}
	sc.stmtBusy = true
	defer func() { sc.stmtBusy = false }()
	t := &sc.stmt
	t.reset(nil)
	t.tx, t.gid = tx, gid
	return tx.run(t, fn)
}

func (tx *Transaction) run(t *Txn, fn func(*Txn) error) (err error) {
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("storage: transaction statement panicked: %v\n%s", r, debug.Stack())
			}
		}()
		if err := fn(t); err != nil {
			return err
		}
		return t.err
	}()
	if err == nil {
		err = tx.claim(t)
	}
	if err != nil {
		t.undo(0)
		return err
	}
	for _, o := range t.ops {
		w := tx.own[string(o.key)] // claimed
		w.del = o.kind == opDelete
		w.value = append(w.value[:0], o.value...)
		if tx.writes == nil {
			tx.writes = tx.db.pdb.NewIndexedBatch()
		}
		if w.del {
			err = tx.writes.Delete(o.key, nil)
		} else {
			err = tx.writes.Set(o.key, o.value, nil)
		}
		if err != nil {
			return err // the in-memory batch only fails on misuse
		}
	}
	return nil
}

// claim checks the statement's new keys for conflicts and records them as
// the transaction's intents and own writes (their entries, values to
// come): a key another open transaction holds, or whose committed value
// is no longer the snapshot's, is a conflict, and then nothing is
// recorded. While nothing became visible in the store since the snapshot
// (unchanged), the committed values are the snapshot's and nothing is
// read; otherwise each new key's snapshot value is read and kept.
func (tx *Transaction) claim(t *Txn) error {
	in := &tx.db.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	sc := tx.scratchFor()
	if tx.own == nil {
		if sc.own == nil {
			sc.own = map[string]*ownWrite{}
		}
		tx.own = sc.own
	}
	added := sc.added[:0]
	fail := func(err error) error {
		for _, k := range added {
			delete(tx.own, k)
		}
		sc.added = added[:0]
		return err
	}
	unchanged := tx.unchanged()
	for _, o := range t.ops {
		if o.kind == opDeleteRange {
			return fail(errors.New("storage: range deletions are not allowed in a transaction"))
		}
		if _, mine := tx.own[string(o.key)]; mine {
			continue // written before, or earlier in this statement
		}
		if owner, held := in.owner[string(o.key)]; held && owner != tx {
			return fail(ErrWriteConflict)
		}
		w := sc.newOwn()
		if unchanged {
			if invariants.Enabled {
				tx.checkUnchanged(o.key, func(dst, key []byte) ([]byte, bool, error) { return get(tx.db.pdb, dst, key) })
			}
		} else {
			var err error
			if w.base, w.baseOK, err = tx.viewGet(w.base, o.key); err != nil {
				return fail(err)
			}
			w.baseRead = true
			changed, err := differs(o.key, w.base, w.baseOK, func(dst, key []byte) ([]byte, bool, error) { return get(tx.db.pdb, dst, key) })
			if err != nil {
				return fail(err)
			}
			if changed {
				return fail(ErrWriteConflict)
			}
		}
		k := string(o.key)
		w.seq = len(tx.own)
		tx.own[k] = w
		added = append(added, k)
	}
	if in.owner == nil {
		in.owner = map[string]*Transaction{}
	}
	for _, k := range added {
		in.owner[k] = tx
	}
	sc.added = added[:0]
	return nil
}

// unchanged reports whether nothing became visible in the store since
// the transaction's snapshot, which then is the store's applied state:
// its view is a shared one known to be the state at a gen, and gen has
// not moved since (invariant "Shared view current": every change made
// visible goes through visibility.change).
func (tx *Transaction) unchanged() bool {
	return tx.sv != nil && tx.sv.current(&tx.db.visible)
}

// checkUnchanged fails invariant "First writer wins" when key's value as
// read differs from the snapshot's though nothing became visible in the
// store since the snapshot (a write path that bypassed the seqlock, or a
// request view that holds more than the store). Invariants builds only.
func (tx *Transaction) checkUnchanged(key []byte, read func(dst, key []byte) ([]byte, bool, error)) {
	then, thenOK, err := tx.viewGet(nil, key)
	if err != nil {
		return
	}
	changed, err := differs(key, then, thenOK, read)
	if err == nil && changed && tx.unchanged() {
		invariants.Fail("First writer wins", "key %q differs from the transaction's snapshot though nothing became visible since it", key)
	}
}

// differs reports whether key's value as read reads differs from then
// (present or not, and its bytes).
func differs(key, then []byte, thenOK bool, read func(dst, key []byte) ([]byte, bool, error)) (bool, error) {
	now, nowOK, err := read(nil, key)
	if err != nil {
		return false, err
	}
	return thenOK != nowOK || !bytes.Equal(then, now), nil
}

// Commit applies every write of the transaction in one commit-pipeline
// request ("All or nothing"), after checking in that request — where
// requests run one at a time — that no written key changed since the
// snapshot ("First writer wins"); a conflict fails the commit with
// ErrWriteConflict and writes nothing. also, when not nil, runs in the same
// request after the transaction's writes: what must commit with them (the
// session's transaction record, the change log entry; it may Tick). The
// transaction ends either way.
func (tx *Transaction) Commit(also func(*Txn) error) error {
	if tx.done {
		return ErrTransactionDone
	}
	if len(tx.own) == 0 && also == nil {
		tx.end() // nothing to write (no deferred call on the read-only path)
		return nil
	}
	defer tx.end()
	sc := tx.scratchFor()
	sc.also = also
	err := tx.db.Write(sc.commit) // runCommit
	sc.also = nil
	return err
}

// runCommit is Commit's request.
func (sc *Scratch) runCommit(t *Txn) error {
	tx := sc.tx
	if err := tx.checkOwn(t, ErrWriteConflict); err != nil {
		return err
	}
	tx.writeOwn(t)
	if sc.also != nil {
		return sc.also(t)
	}
	return nil
}

// checkOwn fails with conflict when a key the transaction wrote changed
// since its snapshot, read in t's request (where requests run one at a
// time: "First writer wins"). A request that is the first of its group,
// on a batch holding no group in flight, sees the store's applied state;
// while nothing became visible since the snapshot (unchanged), that is
// the snapshot, and nothing is read.
func (tx *Transaction) checkOwn(t *Txn, conflict error) error {
	if len(t.ops) == 0 && t.batch != nil && t.batch.Empty() && tx.unchanged() {
		if invariants.Enabled {
			for k := range tx.own {
				tx.checkUnchanged([]byte(k), t.Get)
			}
		}
		return nil
	}
	for k, w := range tx.own {
		key := []byte(k)
		if !w.baseRead {
			var err error
			if w.base, w.baseOK, err = tx.viewGet(w.base, key); err != nil {
				return err
			}
			w.baseRead = true
		}
		changed, err := differs(key, w.base, w.baseOK, t.Get)
		if err != nil {
			return err
		}
		if changed {
			return conflict
		}
	}
	return nil
}

// writeOwn puts the transaction's writes in t.
func (tx *Transaction) writeOwn(t *Txn) {
	for k, w := range tx.own {
		if w.del {
			t.Delete([]byte(k))
		} else {
			t.Set([]byte(k), w.value)
		}
	}
}

// Abort ends the transaction, writing nothing. Aborting an ended
// transaction does nothing.
func (tx *Transaction) Abort() {
	if !tx.done {
		tx.end()
	}
}

func (tx *Transaction) end() {
	tx.done = true
	if invariants.Enabled {
		tx.cc.Close("storage.Transaction")
	}
	// A read-only transaction holds no intents and was never prepared.
	if len(tx.own) > 0 || len(tx.holds) > 0 || tx.prepared {
		in := &tx.db.intents
		in.mu.Lock()
		tx.unholdLocked()
		tx.dropHoldsLocked()
		for k := range tx.own {
			if in.owner[k] == tx {
				delete(in.owner, k)
			}
		}
		in.mu.Unlock()
	}
	if !tx.iterated { // no iterator: no other goroutine touches mu's fields
		tx.ended = true
		tx.free()
		tx.freed = true
		return
	}
	tx.mu.Lock()
	tx.ended = true
	tx.releaseLocked()
	tx.mu.Unlock()
}

// Released reports whether the transaction has ended and nothing reads
// its view any more (its iterators are closed, "Readers outlive the end"):
// only then may its memory be reused for another (engine.BeginReusing).
func (tx *Transaction) Released() bool { return tx.freed || tx.released.Load() }

// iterClosed is told by an iterator of the view that it closed.
func (tx *Transaction) iterClosed() {
	tx.mu.Lock()
	tx.iters--
	tx.releaseLocked()
	tx.mu.Unlock()
}

// releaseLocked frees the snapshot and the write batch once the
// transaction has ended and no iterator reads them (under mu, so that
// released, which Released reports, means freed).
func (tx *Transaction) releaseLocked() {
	if !tx.ended || tx.iters > 0 || tx.released.Load() {
		return
	}
	tx.free()
	tx.released.Store(true) // after the frees: Released means freed
}

// free closes the write batch and drops the snapshot's reference, once
// (end or releaseLocked decides when).
func (tx *Transaction) free() {
	if tx.writes != nil {
		_ = tx.writes.Close()
	}
	if tx.sv != nil {
		tx.sv.unref()
	}
}
