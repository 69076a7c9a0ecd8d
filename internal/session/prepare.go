package session

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Prepared transactions of a session (two-phase commit's participant,
// MongoDB's prepareTransaction; engine txn_prepare.go holds the durable
// record and the held documents).
//
// Invariant "Only commit or abort ends a prepared transaction": a prepared
// transaction takes no more statements (PreparedTransactionInProgress); it
// is not aborted by its lifetime limit, a step-down, killSessions,
// endSessions, the session's expiry (its entry stays) or a
// newer transaction number (a newer number fails with
// PreparedTransactionInProgress while it is prepared), only by
// commitTransaction with a commitTimestamp or by abortTransaction — the
// coordinator's decision. A member becoming primary rebuilds every
// prepared transaction from its record (RestorePrepared, from Forget)
// before it takes writes. TestPreparedSession.
//
// The session's config.transactions document says state "prepared" from
// the prepare (written in its request), then "committed" or "aborted".

// PrepareTransaction prepares transaction n and returns its prepare time;
// preparing it again answers the same time. A transaction that cannot
// commit (a write conflict) is aborted and the error returned.
func (u *Use) PrepareTransaction(n int64) (hlc.Timestamp, error) {
	if err := u.load(); err != nil {
		return 0, err
	}
	e, t := u.e, u.t
	if n < e.txn {
		return 0, mongoerr.New(mongoerr.TransactionTooOld, "Cannot prepare transaction %d on session %s because a newer transaction %d has already started.", n, u.id, e.txn)
	}
	if n == e.txn && e.tx.status == txnPrepared {
		return e.tx.etx.PrepareTimestamp(), nil
	}
	if err := u.current(n); err != nil {
		return 0, err
	}
	ts, err := e.tx.etx.Prepare(func(tx *storage.Txn, ts hlc.Timestamp) error {
		return u.recordState(tx, n, ts, "prepared")
	})
	if err != nil {
		u.abortOpen()
		return 0, err
	}
	t.mu.Lock()
	e.tx.status = txnPrepared
	t.mu.Unlock()
	return ts, nil
}

// CommitPreparedTransaction commits prepared transaction n at commitTS (the
// coordinator's decision); a transaction committed before answers ok again.
func (u *Use) CommitPreparedTransaction(n int64, commitTS hlc.Timestamp) (hlc.Timestamp, error) {
	if err := u.load(); err != nil {
		return 0, err
	}
	e, t := u.e, u.t
	if n < e.txn {
		return 0, mongoerr.New(mongoerr.TransactionTooOld, "Cannot commit transaction %d on session %s because a newer transaction %d has already started.", n, u.id, e.txn)
	}
	if n == e.txn && e.tx.status == txnCommitted {
		return 0, nil
	}
	if n != e.txn || e.tx.status != txnPrepared {
		if err := u.current(n); err != nil {
			return 0, err
		}
		return 0, mongoerr.New(mongoerr.InvalidOptions, "commitTransaction of transaction %d, which is not prepared, may not give a commitTimestamp", n)
	}
	ts, err := e.tx.etx.CommitPrepared(commitTS, func(tx *storage.Txn, ts hlc.Timestamp) error {
		return u.recordCommit(tx, n, ts)
	})
	if err != nil {
		return 0, err // still prepared: the coordinator retries
	}
	t.mu.Lock()
	e.tx.status, e.tx.etx = txnCommitted, nil
	t.mu.Unlock()
	return ts, nil
}

// abortPrepared aborts the session's prepared transaction n.
func (u *Use) abortPrepared(n int64) error {
	e, t := u.e, u.t
	if err := e.tx.etx.AbortPrepared(func(tx *storage.Txn) error {
		return u.recordState(tx, n, 0, "aborted")
	}); err != nil {
		return err
	}
	t.mu.Lock()
	e.tx.status, e.tx.etx = txnAborted, nil
	t.mu.Unlock()
	return nil
}

// recordState writes the session's config.transactions document with
// state (prepared, committed, aborted) in the request tx ("Commit record
// rides the commit").
func (u *Use) recordState(tx *storage.Txn, n int64, ts hlc.Timestamp, state string) error {
	t := u.t
	_, term := t.eng.RequestOpTime(tx)
	doc := bsoncore.NewDocumentBuilder().
		AppendDocument("_id", u.id.Doc()).
		AppendInt64("txnNum", n).
		AppendDocument("lastWriteOpTime", bsoncore.NewDocumentBuilder().
			AppendTimestamp("ts", ts.T(), ts.I()).
			AppendInt64("t", term).Build()).
		AppendDateTime("lastWriteDate", t.now().UnixMilli()).
		AppendString("state", state).Build()
	return t.eng.PutInTxn(tx, TransactionsNS, doc)
}

// errPrepared refuses what would end or join a prepared transaction.
func errPrepared(n int64, what string) error {
	return mongoerr.New(mongoerr.PreparedTransactionInProgress, "Cannot %s: transaction %d is prepared (only commitTransaction with its commitTimestamp or abortTransaction may end it)", what, n)
}

// PreparedTransactions is how many sessions have a prepared transaction.
func (t *Table) PreparedTransactions() int { return t.countStatus(txnPrepared) }

// RestorePrepared drops the prepared transactions held in memory and
// rebuilds every recorded one (a restart, a member becoming primary: the
// records may have changed through replication).
func (t *Table) RestorePrepared() error {
	if t.eng == nil {
		return nil // a table without a store (tests)
	}
	t.gen.Add(1) // records may have changed through replication
	t.mu.Lock()
	for _, e := range t.m {
		if e.tx.status == txnPrepared {
			e.tx.etx.Release()
			e.tx = txnState{}
			e.loaded, e.txn = false, -1
		}
	}
	t.mu.Unlock()
	txs, err := t.eng.RestorePrepared()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range txs {
		id, err := Parse(x.Session.LSID, [32]byte{}, true)
		if err != nil {
			x.Release()
			return err
		}
		e := t.entryLocked(id, "")
		e.txn, e.loaded = x.Session.TxnNumber, true
		e.tx = txnState{status: txnPrepared, etx: x, started: t.now()}
	}
	return nil
}
