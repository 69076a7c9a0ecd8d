package session

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Retry is one write command's retryable-write state: its session, its
// transaction number and the results of its statements that already ran.
// It lives while the command holds the session (Checkout), so no other
// command of the session can record in between.
type Retry struct {
	u    *Use
	txn  int64
	done map[int32]bsoncore.Document
	// fresh: txn is newer than the session's stored records, whose
	// statement keys the first Record deletes (cleared says it did, in a
	// request not undone): stale as an iterator read them, or, when
	// fromMem, staleMem, the session's keys kept in memory (keyLen bytes
	// each; invariant "Stale keys from memory"). gen is the table's gen
	// when they were taken; swapped says the first Record swapped the
	// entry's key buffers (staleMem is spareKeys, untouched until the
	// session's next command).
	fresh, cleared   bool
	stale            [][]byte
	staleMem         []byte
	fromMem, swapped bool
	gen              uint64
	// ids are the statement ids of the command's statements by position,
	// when a router gave them (stmtIds): a router sends a shard only the
	// statements of a client's batch that the shard owns, so a
	// statement's id is its position in the client's batch, not in the
	// shard's (MongoDB's stmtIds). Nil: the position is the id.
	ids []int32
}

// UseStmtIDs makes ids[i] the statement id of the command's statement at
// position i: Done, Record and OplogSession take positions and
// translate them. The caller checked len(ids) against the statements.
func (r *Retry) UseStmtIDs(ids []int32) { r.ids = ids }

// stmt is the statement id of position i.
func (r *Retry) stmt(i int32) int32 {
	if r.ids != nil && int(i) < len(r.ids) {
		return r.ids[i]
	}
	return i
}

// OplogSession is what the oplog entries of the statements at positions
// stmts carry (lsid, txnNumber, each document's stmtId).
func (r *Retry) OplogSession(stmts ...int32) *engine.OplogSession {
	if r.ids != nil {
		mapped := make([]int32, len(stmts))
		for k, i := range stmts {
			mapped[k] = r.stmt(i)
		}
		stmts = mapped
	}
	return &engine.OplogSession{LSID: r.u.lsidDoc(), TxnNumber: r.txn, StmtIDs: stmts}
}

// Stmt is one executed statement and its result, for Record.
type Stmt struct {
	ID     int32
	Result bsoncore.Document
}

// OpTime is what config.transactions' lastWriteOpTime says for a write:
// the cluster time of its last oplog entry and the term entries carry (-1
// on a standalone, MongoDB's uninitialised term).
type OpTime struct {
	TS   uint64
	Term int64
}

// BeginRetry starts (or resumes) transaction number txn of the session for
// a retryable write command. An older number than the session's newest is
// TransactionTooOld (invariant "Newest transaction wins").
func (u *Use) BeginRetry(txn int64) (*Retry, error) {
	if txn < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "TxnNumber cannot be negative")
	}
	e, t := u.e, u.t
	t.mu.Lock()
	loaded := e.loaded
	t.mu.Unlock()
	if !loaded {
		newest, err := t.storedTxn(u.id)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		if newest > e.txn {
			e.txn = newest
		}
		e.loaded = true
		t.mu.Unlock()
	}
	t.settleClear(e)
	t.mu.Lock()
	cur := e.txn
	if txn > cur && e.tx.status == txnPrepared {
		t.mu.Unlock()
		return nil, errPrepared(cur, "start a retryable write with a newer txnNumber")
	}
	if txn > cur {
		e.txn = txn
		e.abortTxLocked() // a newer number ends the open transaction
		e.tx = txnState{}
	}
	t.mu.Unlock()
	r := &Retry{u: u, txn: txn} // done: made by a retry of the number, the only one to fill it
	switch {
	case txn < cur:
		return nil, mongoerr.New(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", txn, u.id, cur)
	case txn == cur:
		r.done = map[int32]bsoncore.Document{}
		if err := t.loadDone(u.id, txn, r.done); err != nil {
			return nil, err
		}
	default:
		r.fresh, r.gen = true, t.gen.Load()
		if t.keysValid(e) {
			r.staleMem, r.fromMem = e.keys, true
			if invariants.Enabled {
				if err := t.checkStaleKeys(u.id, e, txn); err != nil {
					invariants.Fail("Stale keys from memory", "%v", err)
				}
			}
			break
		}
		stale, err := t.olderKeys(u.id, e.recordsFrom, txn)
		if err != nil {
			return nil, err
		}
		r.stale = stale
	}
	return r, nil
}

// settleClear raises the session's recordsFrom to the number whose first
// Record deleted the older numbers' keys, once that Record's group is
// known committed: the session's command ended, no group failed since it
// (storage's "Failures counted before acknowledged") and it was not
// undone. Otherwise recordsFrom stays, and the next new number's iterator
// reads the keys the failed deletions left. The caller holds the turn.
func (t *Table) settleClear(e *entry) {
	if e.pending {
		if e.pendingFails == t.eng.Storage().FailedGroups() {
			e.recordsFrom = e.pendingFrom
		}
		e.pending = false
	}
}

// keyLen is the length of a statement key: r, the session key (UUID and
// uid), the transaction number, the statement id.
const keyLen = 1 + 16 + 32 + 8 + 4

// maxKeptKeys bounds the statement keys a session keeps in memory: a
// larger batch's stale keys are read with the iterator, whose cost the
// batch's own writes dwarf.
const maxKeptKeys = 1024

// keysValid reports whether the entry's keys are the session's statement
// keys from recordsFrom on (invariant "Stale keys from memory"): known
// since the first Record of a number, and neither the table's gen (a new
// primary, rebuilt prepared transactions) nor storage's failed groups
// (one of the session's records may not have committed: "Failures counted
// before acknowledged") moved since. The caller holds the session's turn.
func (t *Table) keysValid(e *entry) bool {
	return e.keysKnown && e.keysGen == t.gen.Load() && e.keysFails == t.eng.Storage().FailedGroups()
}

// checkStaleKeys compares the keys session id's entry e keeps in memory
// with those olderKeys reads for a new number txn, as sets (a key kept
// twice is deleted twice: harmless); nil when they agree or are not
// trusted. For builds with the invariants tag, at every use, and tests.
// The caller holds the session's turn.
func (t *Table) checkStaleKeys(id ID, e *entry, txn int64) error {
	if !t.keysValid(e) {
		return nil
	}
	read, err := t.olderKeys(id, e.recordsFrom, txn)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for k := e.keys; len(k) >= keyLen; k = k[keyLen:] {
		kept[string(k[:keyLen])] = true
	}
	stored := map[string]bool{}
	for _, k := range read {
		stored[string(k)] = true
		if !kept[string(k)] {
			return fmt.Errorf("session %s: statement key %x is stored (transactions %d to %d) but not kept in memory", id, k, e.recordsFrom, txn)
		}
	}
	for k := range kept {
		if !stored[k] {
			return fmt.Errorf("session %s: statement key %x is kept in memory but not stored (transactions %d to %d)", id, k, e.recordsFrom, txn)
		}
	}
	if len(e.keys)%keyLen != 0 {
		return fmt.Errorf("session %s: %d bytes of keys kept, not a multiple of %d", id, len(e.keys), keyLen)
	}
	return nil
}

// Done returns the result of the statement at position stmt if it already
// ran; a nil Retry (a write that is not retryable) has run nothing.
func (r *Retry) Done(stmt int32) (bsoncore.Document, bool) {
	if r == nil {
		return nil, false
	}
	res, ok := r.done[r.stmt(stmt)]
	return res, ok
}

// Record writes, inside tx (the request of the statements' write), that
// stmts (their IDs positions, as Done's) ran with their results, and the session's config.transactions
// document (invariant "Record rides the write").
func (r *Retry) Record(tx *storage.Txn, stmts ...Stmt) error {
	if len(stmts) == 0 {
		return nil
	}
	t, e := r.u.t, r.u.e
	if r.fresh && !r.cleared {
		// The session's older transaction numbers' statements go with the
		// first write of this one, key by key: a range deletion per write
		// would pile up tombstones in the memtable that every read then
		// fragments again (reads slowed as the memtable grew).
		if r.fromMem {
			for k := r.staleMem; len(k) >= keyLen; k = k[keyLen:] {
				tx.Delete(k[:keyLen])
			}
		} else {
			for _, k := range r.stale {
				tx.Delete(k)
			}
		}
		r.cleared = true
		// recordsFrom rises to txn once the deletions are known committed
		// (settleClear, at the session's next BeginRetry): a group that
		// failed left the stale keys stored, and the next number's
		// iterator must still find them.
		fails := t.eng.Storage().FailedGroups()
		e.pendingFrom, e.pendingFails, e.pending = r.txn, fails, true
		// From here the session's keys are this number's alone: kept
		// from empty, in the buffer staleMem is not.
		if !r.swapped {
			e.keys, e.spareKeys, r.swapped = e.spareKeys[:0], e.keys, true
		} else {
			e.keys = e.keys[:0]
		}
		e.keysKnown, e.keysGen, e.keysFails = true, r.gen, fails
		tx.OnUndo(func() { r.cleared, e.pending, e.keysKnown = false, false, false })
	} else if e.keysKnown {
		if e.forgetKeys == nil {
			e.forgetKeys = func() { e.keysKnown = false }
		}
		tx.OnUndo(e.forgetKeys)
	}
	key := txnPrefix(r.u.id, r.txn)
	n := len(key)
	for _, s := range stmts {
		key = binary.BigEndian.AppendUint32(key[:n], uint32(r.stmt(s.ID)))
		tx.Set(key, s.Result)
		if e.keysKnown {
			e.keys = append(e.keys, key...)
		}
	}
	if e.keysKnown && len(e.keys) > maxKeptKeys*keyLen {
		e.keysKnown, e.keys, e.spareKeys = false, nil, nil // the iterator reads them
	}
	return t.eng.PutInTxn(tx, TransactionsNS, t.retryRecordOf(tx, r.u.lsidDoc(), r.txn))
}

// lsidDoc is the session's id as a document, built once per session and
// shared, never changed, by its oplog entries and records (the caller
// holds the turn, or runs in a request of the command that does).
func (u *Use) lsidDoc() bsoncore.Document {
	if u.e.lsid == nil {
		u.e.lsid = u.id.Doc()
	}
	return u.e.lsid
}

// retryRecord is the session's config.transactions document for its
// retryable write number txn, written in request tx.
func (t *Table) retryRecord(tx *storage.Txn, id ID, txn int64) bsoncore.Document {
	return t.retryRecordOf(tx, id.Doc(), txn)
}

// retryRecordOf is retryRecord of the session whose id document is lsid:
// {_id: lsid, txnNum, lastWriteOpTime: {ts, t}, lastWriteDate}, appended
// field by field into one buffer of its exact size (a builder per
// document, nested, cost more than the rest of the record's write:
// BENCHMARKS.md, session 14's "CPU per update"; TestRetryRecordShape
// checks it against the builders' document).
func (t *Table) retryRecordOf(tx *storage.Txn, lsid bsoncore.Document, txn int64) bsoncore.Document {
	ts, term := t.eng.RequestOpTime(tx)
	return appendRetryRecord(make([]byte, 0, retryRecordSize+len(lsid)), lsid, txn, OpTime{TS: uint64(ts), Term: term}, t.now().UnixMilli())
}

// retryRecordSize is the size of a retry record less its lsid's: the
// document's length and end, and its fields' types, names and values.
const retryRecordSize = 4 + (1 + 4) + (1 + 7 + 8) + (1 + 16 + 4 + (1 + 3 + 8) + (1 + 2 + 8) + 1) + (1 + 14 + 8) + 1

// appendRetryRecord appends the config.transactions record of a retryable
// write (retryRecordOf) to dst.
func appendRetryRecord(dst []byte, lsid bsoncore.Document, txn int64, ot OpTime, dateMillis int64) bsoncore.Document {
	start := len(dst)
	var doc, opTime int32
	doc, dst = bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendDocumentElement(dst, "_id", lsid)
	dst = bsoncore.AppendInt64Element(dst, "txnNum", txn)
	opTime, dst = bsoncore.AppendDocumentElementStart(dst, "lastWriteOpTime")
	dst = bsoncore.AppendTimestampElement(dst, "ts", uint32(ot.TS>>32), uint32(ot.TS))
	dst = bsoncore.AppendInt64Element(dst, "t", ot.Term)
	dst, _ = bsoncore.AppendDocumentEnd(dst, opTime) // errors only for a bad index
	dst = bsoncore.AppendDateTimeElement(dst, "lastWriteDate", dateMillis)
	dst, _ = bsoncore.AppendDocumentEnd(dst, doc)
	return dst[start:]
}

// storedTxn is the newest transaction number config.transactions holds
// for the session, -1 for none.
func (t *Table) storedTxn(id ID) (int64, error) {
	doc, found, err := t.eng.Get(nil, TransactionsNS, id.Value())
	if err != nil || !found {
		return -1, err
	}
	v, err := bsoncore.Document(doc).LookupErr("txnNum")
	if err != nil {
		return -1, fmt.Errorf("session: config.transactions record of %s has no txnNum", id)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		return -1, fmt.Errorf("session: config.transactions record of %s has a txnNum of type %s", id, v.Type)
	}
	return n, nil
}

// loadDone reads the statements of txn already recorded for the session.
func (t *Table) loadDone(id ID, txn int64, into map[int32]bsoncore.Document) error {
	prefix := txnPrefix(id, txn)
	it, err := t.eng.Storage().NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+4 {
			continue
		}
		stmt := int32(binary.BigEndian.Uint32(k[len(prefix):]))
		v, err := it.Value()
		if err != nil {
			_ = it.Close()
			return err
		}
		into[stmt] = append(bsoncore.Document(nil), v...)
	}
	return it.Close()
}

// olderKeys are the session's statement records of transaction numbers
// from from (below it every record was deleted) up to txn. The session is
// checked out, so none is added until the command's own Record. Reading
// from the whole session's prefix would step over the deleted records'
// tombstones, one more per write.
func (t *Table) olderKeys(id ID, from, txn int64) ([][]byte, error) {
	it, err := t.eng.Storage().NewIter(txnPrefix(id, from), txnPrefix(id, txn))
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	return keys, it.Close()
}

// retryPrefix is r <session key>: every record of the session.
func retryPrefix(id ID) []byte { return id.key([]byte{storage.SpaceRetry}) }

// txnPrefix is r <session key> <txn>: the statements of one transaction
// number (big-endian with the sign bit flipped, so numbers sort in order).
func txnPrefix(id ID, txn int64) []byte {
	return binary.BigEndian.AppendUint64(retryPrefix(id), uint64(txn)^1<<63)
}
