package session

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
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
	// statement keys (stale) the first Record deletes (cleared says it
	// did, in a request not undone).
	fresh, cleared bool
	stale          [][]byte
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
	return &engine.OplogSession{LSID: r.u.id.Doc(), TxnNumber: r.txn, StmtIDs: stmts}
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
	r := &Retry{u: u, txn: txn, done: map[int32]bsoncore.Document{}}
	switch {
	case txn < cur:
		return nil, mongoerr.New(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", txn, u.id, cur)
	case txn == cur:
		if err := t.loadDone(u.id, txn, r.done); err != nil {
			return nil, err
		}
	default:
		r.fresh = true
		stale, err := t.olderKeys(u.id, e.recordsFrom, txn)
		if err != nil {
			return nil, err
		}
		r.stale = stale
	}
	return r, nil
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
	t := r.u.t
	if r.fresh && !r.cleared {
		// The session's older transaction numbers' statements go with the
		// first write of this one, key by key: a range deletion per write
		// would pile up tombstones in the memtable that every read then
		// fragments again (reads slowed as the memtable grew).
		for _, k := range r.stale {
			tx.Delete(k)
		}
		r.cleared = true
		from := r.u.e.recordsFrom
		r.u.e.recordsFrom = r.txn
		tx.OnUndo(func() { r.cleared, r.u.e.recordsFrom = false, from })
	}
	key := txnPrefix(r.u.id, r.txn)
	n := len(key)
	for _, s := range stmts {
		key = binary.BigEndian.AppendUint32(key[:n], uint32(r.stmt(s.ID)))
		tx.Set(key, s.Result)
	}
	return t.eng.PutInTxn(tx, TransactionsNS, t.retryRecord(tx, r.u.id, r.txn))
}

// retryRecord is the session's config.transactions document for its
// retryable write number txn, written in request tx.
func (t *Table) retryRecord(tx *storage.Txn, id ID, txn int64) bsoncore.Document {
	ts, term := t.eng.RequestOpTime(tx)
	ot := OpTime{TS: uint64(ts), Term: term}
	return bsoncore.NewDocumentBuilder().
		AppendDocument("_id", id.Doc()).
		AppendInt64("txnNum", txn).
		AppendDocument("lastWriteOpTime", bsoncore.NewDocumentBuilder().
			AppendTimestamp("ts", uint32(ot.TS>>32), uint32(ot.TS)).
			AppendInt64("t", ot.Term).Build()).
		AppendDateTime("lastWriteDate", t.now().UnixMilli()).Build()
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
