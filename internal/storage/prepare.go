package storage

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
)

// Prepared transactions (two-phase commit's participant, MongoDB's
// prepareTransaction): Prepare checks, in one pipeline request, that the
// transaction can still commit and writes what the caller makes durable
// with it (its record); from then on the transaction holds its written
// keys against every writer until CommitPrepared or Abort.
//
// Invariant "Prepared holds its keys": while a transaction is prepared, a
// pipeline request that writes one of its keys (a point write, or a range
// deletion covering one) fails with ErrWriteConflict, and so does another
// transaction's statement (its intents, "First writer wins"); so its
// CommitPrepared finds every key as it prepared it and cannot fail with a
// conflict. The check costs one atomic load per request while nothing is
// prepared. TestPreparedHoldsKeys.

// ErrPrepareConflict is the ErrWriteConflict of a request that wrote a key
// a prepared transaction holds: the writer may wait for it to end
// (PreparedEnded) and try again, as MongoDB's writers wait on a prepare
// conflict.
var ErrPrepareConflict = fmt.Errorf("%w: a prepared transaction holds the key", ErrWriteConflict)

// PrepareConflictError is the error of a request that met a prepare conflict:
// it is ErrPrepareConflict (so ErrWriteConflict too) and names a key the
// prepared transaction holds, so that the writer can wait for exactly that
// key (PreparedIn) before trying again.
type PrepareConflictError struct{ Key []byte }

func (e *PrepareConflictError) Error() string { return ErrPrepareConflict.Error() }

// Unwrap makes errors.Is see ErrPrepareConflict and ErrWriteConflict.
func (e *PrepareConflictError) Unwrap() error { return ErrPrepareConflict }

// Write is one of a transaction's writes, as Prepare's caller records it
// and RestorePrepared takes it back after a restart.
type Write struct {
	Key, Value []byte
	Delete     bool
}

// Writes lists the transaction's writes in key order.
func (tx *Transaction) Writes() []Write {
	out := make([]Write, 0, len(tx.own))
	for k, w := range tx.own {
		out = append(out, Write{Key: []byte(k), Value: append([]byte(nil), w.value...), Delete: w.del})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Key, out[j].Key) < 0 })
	return out
}

// Prepared reports whether the transaction is prepared.
func (tx *Transaction) Prepared() bool { return tx.prepared }

// Holds lists the keys the transaction holds without writing them
// (Prepare's holds).
func (tx *Transaction) Holds() [][]byte {
	out := make([][]byte, 0, len(tx.holds))
	for k := range tx.holds {
		out = append(out, []byte(k))
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i], out[j]) < 0 })
	return out
}

// Prepare checks in one pipeline request that no written key changed since
// the snapshot (else ErrWriteConflict, and the transaction is as before:
// the caller aborts it), runs also in the same request (the durable record
// of the prepared transaction) and makes the transaction hold its keys
// ("Prepared holds its keys"), and holds besides, without writing them,
// the keys holds names (the catalog records of the collections it wrote:
// no DDL may change them before it commits). Preparing a prepared
// transaction does nothing.
func (tx *Transaction) Prepare(holds [][]byte, also func(*Txn) error) error {
	if tx.done {
		return ErrTransactionDone
	}
	if tx.prepared {
		return nil
	}
	return tx.db.Write(func(t *Txn) error {
		if err := tx.holdKeys(holds); err != nil {
			return err
		}
		t.OnUndo(tx.dropHolds)
		if err := tx.checkOwn(t, ErrWriteConflict); err != nil {
			return err
		}
		if also != nil {
			if err := also(t); err != nil {
				return err
			}
		}
		// Held from inside the request: the pipeline runs one request at
		// a time, so no later request can slip in before the hold.
		tx.hold()
		t.OnUndo(tx.unhold)
		return nil
	})
}

// errPreparedChanged is a prepared transaction's key found changed at its
// commit: a broken invariant "Prepared holds its keys", never a conflict.
var errPreparedChanged = errors.New("storage: a prepared transaction's key changed while it was held (invariant \"Prepared holds its keys\")")

// CommitPrepared applies a prepared transaction's writes in one pipeline
// request with also (which writes what commits with them and removes the
// prepared record), as Commit does; it cannot meet a conflict ("Prepared
// holds its keys": one is a broken invariant, reported as an error). The
// transaction ends when the request succeeds; a failed one (a closed or
// failed store) leaves it prepared.
func (tx *Transaction) CommitPrepared(also func(*Txn) error) error {
	if tx.done {
		return ErrTransactionDone
	}
	if !tx.prepared {
		return errors.New("storage: CommitPrepared of a transaction that is not prepared")
	}
	err := tx.db.Write(func(t *Txn) error {
		t.commits = tx
		if err := tx.checkOwn(t, errPreparedChanged); err != nil {
			return err
		}
		tx.writeOwn(t)
		if also != nil {
			return also(t)
		}
		return nil
	})
	if err == nil {
		tx.end()
	}
	return err
}

// Release ends a transaction without writing and without its record
// (used when a prepared transaction's in-memory state is rebuilt from its
// record: a member becoming primary). Same as Abort.
func (tx *Transaction) Release() { tx.Abort() }

// RestorePrepared rebuilds a prepared transaction from its writes after a
// restart (or on a member becoming primary): it reads the current store,
// where the writes are not applied, holds their keys and is prepared.
func (db *DB) RestorePrepared(writes []Write, holds [][]byte) (*Transaction, error) {
	tx := db.Begin()
	if err := tx.holdKeys(holds); err != nil {
		tx.Abort()
		return nil, err
	}
	in := &db.intents
	in.mu.Lock()
	for _, w := range writes {
		if owner, held := in.owner[string(w.Key)]; held && owner != tx {
			in.mu.Unlock()
			tx.Abort()
			return nil, errors.New("storage: a restored prepared transaction's key is held by another transaction")
		}
	}
	if in.owner == nil {
		in.owner = map[string]*Transaction{}
	}
	if tx.own == nil && len(writes) > 0 {
		tx.own = map[string]*ownWrite{} // Begin leaves it to the first write
	}
	for _, w := range writes {
		base, baseOK, err := tx.viewGet(nil, w.Key)
		if err != nil {
			in.mu.Unlock()
			tx.Abort()
			return nil, err
		}
		tx.own[string(w.Key)] = &ownWrite{seq: len(tx.own), value: append([]byte(nil), w.Value...), del: w.Delete, base: base, baseOK: baseOK, baseRead: true}
		in.owner[string(w.Key)] = tx
		if tx.writes == nil {
			tx.writes = db.pdb.NewIndexedBatch()
		}
		if w.Delete {
			err = tx.writes.Delete(w.Key, nil)
		} else {
			err = tx.writes.Set(w.Key, w.Value, nil)
		}
		if err != nil {
			in.mu.Unlock()
			tx.Abort()
			return nil, err
		}
	}
	in.mu.Unlock()
	tx.hold()
	return tx, nil
}

// holdKeys makes the transaction hold keys without writing them.
func (tx *Transaction) holdKeys(keys [][]byte) error {
	in := &tx.db.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range keys {
		if owner, held := in.owner[string(k)]; held && owner != tx {
			return ErrWriteConflict
		}
	}
	if in.owner == nil {
		in.owner = map[string]*Transaction{}
	}
	if tx.holds == nil {
		tx.holds = map[string]struct{}{}
	}
	for _, k := range keys {
		if _, mine := tx.own[string(k)]; !mine {
			tx.holds[string(k)] = struct{}{}
			in.owner[string(k)] = tx
		}
	}
	return nil
}

// dropHolds forgets the keys held without writing them.
func (tx *Transaction) dropHolds() {
	in := &tx.db.intents
	in.mu.Lock()
	tx.dropHoldsLocked()
	in.mu.Unlock()
}

func (tx *Transaction) dropHoldsLocked() {
	in := &tx.db.intents
	for k := range tx.holds {
		if in.owner[k] == tx {
			delete(in.owner, k)
		}
	}
	tx.holds = nil
}

// hold marks the transaction prepared ("Prepared holds its keys").
func (tx *Transaction) hold() {
	in := &tx.db.intents
	in.mu.Lock()
	if !tx.prepared {
		tx.prepared = true
		if in.prepared == nil {
			in.prepared = map[*Transaction]struct{}{}
		}
		in.prepared[tx] = struct{}{}
		in.nPrepared.Add(1)
		in.sortHeld()
	}
	in.mu.Unlock()
}

// sortHeld rebuilds the sorted list of every key a prepared transaction
// holds (its writes and its holds), which PreparedIn searches: prepares
// and their ends are rare, readers' checks are not. Called with in.mu.
func (in *intents) sortHeld() {
	var keys []string
	for p := range in.prepared {
		for k := range p.own {
			keys = append(keys, k)
		}
		for k := range p.holds {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	in.held.Store(&keys)
}

// unhold undoes hold (a prepare whose request failed, or the end).
func (tx *Transaction) unhold() {
	in := &tx.db.intents
	in.mu.Lock()
	tx.unholdLocked()
	in.mu.Unlock()
}

func (tx *Transaction) unholdLocked() {
	in := &tx.db.intents
	if tx.prepared {
		tx.prepared = false
		delete(in.prepared, tx)
		in.nPrepared.Add(-1)
		in.sortHeld()
		if in.ended != nil {
			close(in.ended) // wake the waiters (PreparedEnded)
			in.ended = nil
		}
	}
}

// AnyPrepared reports whether a prepared transaction exists (one atomic
// load: readers and writers check it before anything else).
func (db *DB) AnyPrepared() bool { return db.intents.nPrepared.Load() != 0 }

// PreparedEnded returns a channel closed when a prepared transaction next
// ends (commits or aborts), and whether key is held by one now.
func (db *DB) PreparedEnded(key []byte) (held bool, ended <-chan struct{}) {
	in := &db.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	owner, ok := in.owner[string(key)]
	if !ok || !owner.prepared {
		return false, nil
	}
	if in.ended == nil {
		in.ended = make(chan struct{})
	}
	return true, in.ended
}

// PreparedIn reports the first key in [lo, hi) (nil hi: no upper bound)
// that a prepared transaction holds, or nil, and a channel closed when a
// prepared transaction next ends: a reader that meets a held key waits on
// it and looks again (prepare conflicts per document, package engine's
// txn_prepare.go). The caller checks AnyPrepared first; a range with no
// held key costs a binary search without a lock (readers of other
// documents do not contend while a transaction is prepared), one with a
// held key takes the intents' lock to search again and get the channel.
func (db *DB) PreparedIn(lo, hi []byte) (held []byte, ended <-chan struct{}) {
	in := &db.intents
	if _, ok := heldIn(in.held.Load(), lo, hi); !ok {
		return nil, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	k, ok := heldIn(in.held.Load(), lo, hi) // current: the list changes under mu
	if !ok {
		return nil, nil
	}
	if in.ended == nil {
		in.ended = make(chan struct{})
	}
	return []byte(k), in.ended
}

// heldIn is the first of the sorted keys in [lo, hi) (nil hi: no bound).
func heldIn(keys *[]string, lo, hi []byte) (string, bool) {
	if keys == nil {
		return "", false
	}
	ks := *keys
	i := sort.Search(len(ks), func(i int) bool { return ks[i] >= string(lo) })
	if i == len(ks) || (hi != nil && ks[i] >= string(hi)) {
		return "", false
	}
	return ks[i], true
}

// PreparedBy returns the prepared transaction holding key now (nil: none)
// and a channel closed when a prepared transaction next ends: a reader
// that must wait only for the transactions prepared before it began
// (engine's WaitPreparedAt) tells them from newer ones.
func (db *DB) PreparedBy(key []byte) (*Transaction, <-chan struct{}) {
	in := &db.intents
	in.mu.Lock()
	defer in.mu.Unlock()
	owner, ok := in.owner[string(key)]
	if !ok || !owner.prepared {
		return nil, nil
	}
	if in.ended == nil {
		in.ended = make(chan struct{})
	}
	return owner, in.ended
}

// checkPrepared fails a request that writes a key a prepared transaction
// other than the one it commits holds ("Prepared holds its keys").
func (in *intents) checkPrepared(t *Txn) error {
	if in == nil || in.nPrepared.Load() == 0 {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, o := range t.ops {
		if o.kind == opDeleteRange {
			for p := range in.prepared {
				if p == t.commits {
					continue
				}
				for k := range p.own {
					if inRange(k, o.key, o.value) {
						return &PrepareConflictError{Key: []byte(k)}
					}
				}
				for k := range p.holds {
					if inRange(k, o.key, o.value) {
						return &PrepareConflictError{Key: []byte(k)}
					}
				}
			}
			continue
		}
		if owner, held := in.owner[string(o.key)]; held && owner.prepared && owner != t.commits {
			return &PrepareConflictError{Key: append([]byte(nil), o.key...)}
		}
	}
	return nil
}

// inRange reports whether start <= k < end.
func inRange(k string, start, end []byte) bool {
	return bytes.Compare([]byte(k), start) >= 0 && bytes.Compare([]byte(k), end) < 0
}
