package session

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Multi-document transactions of a session (MongoDB's
// TransactionParticipant): the session's newest transaction number names
// at most one transaction, open, committed or aborted; its engine.Txn
// holds the snapshot and the buffered writes.
//
// Invariant "One transaction per number": a transaction starts only at a
// number above every number the session used (TransactionTooOld below the
// newest, ConflictingOperationInProgress at it); a newer number, for a
// transaction or a retryable write, aborts the open one. Statements,
// commitTransaction and abortTransaction name the newest number or fail
// (NoSuchTransaction, TransactionCommitted, TransactionTooOld), so no
// statement ever joins another transaction than the one its number
// started.
//
// Invariant "Commit record rides the commit": the commit of a transaction
// that wrote writes the session's config.transactions document {_id,
// txnNum, lastWriteOpTime, lastWriteDate, state: "committed"} in its own
// commit request, so a commitTransaction retried on this node or, after a
// failover, on another member that applied the commit answers ok (the
// retryable commit), and one whose commit never committed answers
// NoSuchTransaction. A commit whose replication failed without a verdict
// (not a write conflict) may still commit through Raft: a retried commit
// on the same member reads the record again, and answers ok once it is
// there.
//
// Invariant "Retried commit learns the outcome": a commit whose first try
// failed without a verdict is answered, when retried, with its real
// outcome, never a guess: the retry first writes a barrier through the
// replicated log (engine.Barrier), after which the first try's group is
// decided and, if committed, applied here, so its record answers ok and
// its absence NoSuchTransaction. On a member that is no longer primary
// the barrier fails with NotWritablePrimary, which carries
// UnknownTransactionCommitResult, and the driver retries the commit on the
// new primary, whose record is complete: a member becomes primary only
// after applying every earlier term's entries (replset's promote, then
// Table.Forget). TestRetriedCommitLearnsOutcome.
//
// A primary that steps down aborts its open transactions
// (Table.AbortTransactions, replset's OnStepDown), as mongod does.
//
// An open transaction lives at most TransactionLifetime (MongoDB's
// transactionLifetimeLimitSeconds, 60 s) after it started: AbortExpired
// (the table's loop, every second) aborts older ones that no command is
// using, and a statement that finds its transaction past the limit aborts
// it itself.

// txnStatus is where the session's newest transaction stands.
type txnStatus uint8

const (
	txnNone txnStatus = iota // the newest number is a retryable write's, or none
	txnOpen
	txnCommitted
	txnAborted
	txnPrepared // prepare.go
)

// DefaultTransactionLifetime is transactionLifetimeLimitSeconds' default.
const DefaultTransactionLifetime = 60 * time.Second

// SetTransactionLifetime sets transactionLifetimeLimitSeconds (≥ 1).
func (t *Table) SetTransactionLifetime(seconds int64) { t.lifetime.Store(max(seconds, 1)) }

// TransactionLifetime is transactionLifetimeLimitSeconds.
func (t *Table) TransactionLifetime() time.Duration {
	s := t.lifetime.Load()
	if s == 0 {
		return DefaultTransactionLifetime
	}
	return time.Duration(s) * time.Second
}

// txnState is a session entry's transaction (under the entry's turn, or
// the table's lock for AbortExpired and Kill, which take the turn first).
type txnState struct {
	status  txnStatus
	etx     *engine.Txn
	started time.Time
	expired bool // aborted for its lifetime
	// unknown: its commit failed without a verdict (not a write conflict:
	// the replica set's replication of it failed), so it may yet commit;
	// a retried commit reads its record again.
	unknown bool
}

// load makes the entry know the session's newest number and, after a
// failover, whether that number's transaction committed.
func (u *Use) load() error {
	e, t := u.e, u.t
	t.mu.Lock()
	loaded := e.loaded
	t.mu.Unlock()
	if loaded {
		return nil
	}
	newest, committed, err := t.storedState(u.id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if newest > e.txn {
		e.txn = newest
		e.tx = txnState{}
		if committed {
			e.tx.status = txnCommitted
		}
	}
	e.loaded = true
	t.mu.Unlock()
	return nil
}

// Transaction returns the open transaction number n of the session for a
// statement, starting it when start (startTransaction: true).
func (u *Use) Transaction(n int64, start bool) (*engine.Txn, error) {
	return u.TransactionAt(n, start, 0)
}

// TransactionAt is Transaction whose start reads at cluster time at
// (readConcern snapshot with atClusterTime: engine.BeginAt), or, at 0,
// what is committed now.
func (u *Use) TransactionAt(n int64, start bool, at hlc.Timestamp) (*engine.Txn, error) {
	if err := u.load(); err != nil {
		return nil, err
	}
	e, t := u.e, u.t
	if n < e.txn {
		return nil, mongoerr.New(mongoerr.TransactionTooOld, "Cannot start transaction %d on session %s because a newer transaction %d has already started.", n, u.id, e.txn)
	}
	if start {
		if n == e.txn {
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Only servers in a sharded cluster can start a new transaction at the active transaction number %d", n)
		}
		if e.tx.status == txnPrepared {
			return nil, errPrepared(e.txn, "start a newer transaction")
		}
		var etx *engine.Txn
		if at != 0 {
			var err error
			if etx, err = t.eng.BeginAt(at); err != nil { // before abortOpen: a refused time leaves the open one be
				return nil, err
			}
		}
		u.abortOpen()
		u.lsidDoc() // built once per session, shared by its transactions
		if etx == nil {
			etx = t.eng.BeginReusing(e.spare) // the session's last, ended: its cursors are closed
			e.spare = nil
		}
		etx.SetSession(e.lsid, n)
		t.mu.Lock()
		e.txn = n
		e.tx = txnState{status: txnOpen, etx: etx, started: t.now()}
		t.mu.Unlock()
		return e.tx.etx, nil
	}
	if err := u.current(n); err != nil {
		return nil, err
	}
	return e.tx.etx, nil
}

// current checks that n names the session's open transaction.
func (u *Use) current(n int64) error {
	e := u.e
	if n > e.txn || e.tx.status == txnNone {
		return noSuchTransaction("Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", n, e.txn)
	}
	if e.tx.status == txnOpen && u.t.now().Sub(e.tx.started) > u.t.TransactionLifetime() {
		u.abortOpen()
		e.tx.expired = true
	}
	switch e.tx.status {
	case txnPrepared:
		return errPrepared(n, "run a statement in it")
	case txnCommitted:
		return mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", n)
	case txnAborted:
		if e.tx.expired {
			return noSuchTransaction("Transaction %d has been aborted because it exceeded transactionLifetimeLimitSeconds (%v).", n, u.t.TransactionLifetime())
		}
		return noSuchTransaction("Transaction %d has been aborted.", n)
	}
	return nil
}

func noSuchTransaction(format string, args ...any) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, format, args...)
}

// abortOpen aborts the session's open transaction, if any.
func (u *Use) abortOpen() {
	e, t := u.e, u.t
	t.mu.Lock()
	e.abortTxLocked()
	t.mu.Unlock()
}

// AbortTransaction aborts transaction n (abortTransaction, or a statement
// that failed: MongoDB aborts the transaction on most errors).
func (u *Use) AbortTransaction(n int64) error {
	if err := u.load(); err != nil {
		return err
	}
	if n < u.e.txn {
		return mongoerr.New(mongoerr.TransactionTooOld, "Cannot abort transaction %d on session %s because a newer transaction %d has already started.", n, u.id, u.e.txn)
	}
	if n == u.e.txn && u.e.tx.status == txnPrepared {
		return u.abortPrepared(n)
	}
	if err := u.current(n); err != nil {
		return err
	}
	u.abortOpen()
	return nil
}

// CommitTransaction commits transaction n; a transaction committed before
// answers ok again (the retryable commit). It returns the commit's oplog
// time (0 when the transaction wrote nothing or was committed before).
func (u *Use) CommitTransaction(n int64) (hlc.Timestamp, error) {
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
	if n == e.txn && e.tx.status == txnPrepared {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "commitTransaction of prepared transaction %d must give its commitTimestamp", n)
	}
	if n == e.txn && e.tx.status == txnAborted && e.tx.unknown {
		// Learn the first commit's outcome ("Retried commit learns the
		// outcome"): after a barrier through the replicated log it is
		// decided and, if committed, its record is here.
		if err := t.eng.Barrier(); err != nil {
			return 0, err
		}
		stored, committed, err := t.storedState(u.id)
		if err != nil {
			return 0, err
		}
		t.mu.Lock()
		e.tx.unknown = false
		if stored == n && committed {
			e.tx.status = txnCommitted
		}
		t.mu.Unlock()
		if e.tx.status == txnCommitted {
			return 0, nil
		}
	}
	if err := u.current(n); err != nil {
		return 0, err
	}
	etx := e.tx.etx
	var also func(tx *storage.Txn, ts hlc.Timestamp) error
	if etx.Writes() {
		also = func(tx *storage.Txn, ts hlc.Timestamp) error { return u.recordCommit(tx, n, ts) }
	}
	ts, err := etx.Commit(also)
	t.mu.Lock()
	e.tx.etx, e.spare = nil, etx // ended either way
	if err != nil {
		e.tx.status = txnAborted
		e.tx.unknown = mongoerr.CodeOf(err) != mongoerr.WriteConflict
	} else {
		e.tx.status = txnCommitted
	}
	t.mu.Unlock()
	return ts, err
}

// recordCommit writes the session's config.transactions document in the
// commit's request ("Commit record rides the commit").
func (u *Use) recordCommit(tx *storage.Txn, n int64, ts hlc.Timestamp) error {
	return u.recordState(tx, n, ts, "committed") // prepare.go
}

// storedState is the newest number config.transactions holds for the
// session (-1 for none) and whether it is a committed transaction's.
func (t *Table) storedState(id ID) (int64, bool, error) {
	n, err := t.storedTxn(id)
	if err != nil || n < 0 {
		return n, false, err
	}
	doc, _, err := t.eng.Get(nil, TransactionsNS, id.Value())
	if err != nil {
		return -1, false, err
	}
	state, _ := bsoncore.Document(doc).Lookup("state").StringValueOK()
	return n, state == "committed", nil
}

// AbortExpired aborts the open transactions past their lifetime that no
// command is using; it returns how many.
func (t *Table) AbortExpired() int {
	cut := t.now().Add(-t.TransactionLifetime())
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.m {
		if e.tx.status != txnOpen || !e.tx.started.Before(cut) {
			continue
		}
		select {
		case e.turn <- struct{}{}: // no command uses the session
			e.abortTxLocked()
			e.tx.expired = true
			<-e.turn
			n++
		default:
		}
	}
	return n
}

// abortTxOrLater aborts the entry's open transaction now if no command
// uses the session, or when that command releases it (under the table's
// lock).
func (e *entry) abortTxOrLater() {
	if e.tx.status != txnOpen {
		return
	}
	select {
	case e.turn <- struct{}{}:
		e.abortTxLocked()
		<-e.turn
	default:
		e.abortTx = true
	}
}

// abortTxLocked aborts the open transaction (the caller holds the turn or
// is its command).
func (e *entry) abortTxLocked() {
	if e.tx.status == txnOpen {
		e.tx.etx.Abort()
		e.spare = e.tx.etx
		e.tx.status, e.tx.etx = txnAborted, nil
	}
}

// IdleTransaction is an open transaction no command is running in, as
// currentOp lists it (an "idleSession").
type IdleTransaction struct {
	ID        ID
	TxnNumber int64
	Started   time.Time
	Expires   time.Time
}

// IdleTransactions lists the open transactions no command is running in.
func (t *Table) IdleTransactions() []IdleTransaction {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []IdleTransaction
	for id, e := range t.m {
		if e.tx.status == txnOpen && len(e.turn) == 0 {
			out = append(out, IdleTransaction{ID: id, TxnNumber: e.txn, Started: e.tx.started, Expires: e.tx.started.Add(t.TransactionLifetime())})
		}
	}
	return out
}

// OpenTransactions is how many sessions have an open transaction.
func (t *Table) OpenTransactions() int { return t.countStatus(txnOpen) }

// countStatus is how many sessions' transactions stand at st.
func (t *Table) countStatus(st txnStatus) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.m {
		if e.tx.status == st {
			n++
		}
	}
	return n
}
