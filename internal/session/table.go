package session

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/storage"
)

// DefaultTimeout is MongoDB's localLogicalSessionTimeoutMinutes (30): a
// session unused for this long expires.
const DefaultTimeout = 30 * time.Minute

// SessionsNS is where the session table is persisted, as in MongoDB.
var SessionsNS = engine.Namespace{DB: "config", Coll: "system.sessions"}

// TransactionsNS holds one document per session that ran a retryable write.
var TransactionsNS = engine.Namespace{DB: "config", Coll: "transactions"}

// Table is the session table: every live session, the command using each
// and the newest transaction number each has begun.
type Table struct {
	eng     *engine.Engine
	now     func() time.Time
	timeout time.Duration

	mu sync.Mutex
	m  map[ID]*entry
	// ended are sessions ended or killed since the last Flush, whose
	// records Flush removes.
	ended map[ID]struct{}
	// onKill closes what killed sessions own (their cursors); set by the
	// command layer.
	onKill func(killed map[ID]struct{})

	// lifetime is transactionLifetimeLimitSeconds, 0 for the default
	// (txn.go).
	lifetime atomic.Int64
	// restoreErr is the last failed RestorePrepared's error (Forget).
	restoreErr atomic.Pointer[error]
	// gen rises whenever the sessions' records may have changed behind
	// the table (Forget, RestorePrepared): statement keys kept from before
	// are not trusted (invariant "Stale keys from memory").
	gen atomic.Uint64

	stop, stopped chan struct{} // the refresh loop (Run)
	stopOnce      sync.Once
}

type entry struct {
	lastUse time.Time
	user    string // "db.name" of the user that started it ("" for none)
	// turn is held by the command using the session (Checkout).
	turn chan struct{}
	// interrupt stops the command using the session (killSessions).
	interrupt func(error)
	// txn is the newest transaction number begun (-1: none known yet;
	// loaded from config.transactions on first use).
	txn    int64
	loaded bool
	dirty  bool // lastUse changed since the last Flush
	// tx is the multi-document transaction of number txn (txn.go);
	// abortTx asks the command using the session to abort it when it
	// releases the session (killSessions, a new primary).
	tx      txnState
	abortTx bool
	// recordsFrom is the lowest transaction number that may still have
	// statement records (retry.go's olderKeys reads from it), kept by the
	// command using the session. pendingFrom is the number whose first
	// Record deleted the older ones' keys, with storage's FailedGroups
	// then (pendingFails): recordsFrom rises to it at the session's next
	// BeginRetry if no group failed since (retry.go's settleClear).
	recordsFrom  int64
	pendingFrom  int64
	pendingFails uint64
	pending      bool
	// keys are the session's statement keys from recordsFrom on, keyLen
	// bytes each, one after another, trusted only while keysValid
	// (retry.go, invariant "Stale keys from memory"): a new transaction
	// number's stale keys, read without an iterator. spareKeys is the other
	// buffer: the first Record of a number swaps them, so the keys a
	// command's Retry deletes stay whole for the command. keysGen and
	// keysFails are the table's gen and storage's FailedGroups when the
	// keys became known. Under the turn (the command's Records and their
	// undo run on the pipeline goroutine while it waits for them).
	keys, spareKeys []byte
	keysKnown       bool
	keysGen         uint64
	keysFails       uint64
	// forgetKeys marks keys unknown (an undone Record's), made once.
	forgetKeys func()
	// lsid is the session's id as a document, for its oplog entries and
	// config.transactions records (Use.lsidDoc: built at the first, by
	// the command holding the turn; never changed).
	lsid bsoncore.Document
	// spare is the session's last transaction once it ended, for its next
	// to reuse (engine.BeginReusing): the command layer closes the
	// session's transaction cursors before it starts the next, so nothing
	// holds it then. Under the turn (every abort of a transaction holds it).
	spare *engine.Txn
	// use is what Checkout hands the command holding the turn: one
	// command at a time holds it, so every checkout can share the one
	// value instead of allocating its own (a driver sends an lsid with
	// every command).
	use Use
}

// NewTable returns the session table over eng; now is the clock.
func NewTable(eng *engine.Engine, now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{eng: eng, now: now, timeout: DefaultTimeout, m: map[ID]*entry{}, ended: map[ID]struct{}{}}
}

// OnKill sets what killing sessions also closes (their cursors).
func (t *Table) OnKill(fn func(killed map[ID]struct{})) {
	t.mu.Lock()
	t.onKill = fn
	t.mu.Unlock()
}

// Timeout is how long an unused session lives.
func (t *Table) Timeout() time.Duration { return t.timeout }

func (t *Table) entryLocked(id ID, user string) *entry {
	e := t.m[id]
	if e == nil {
		e = &entry{turn: make(chan struct{}, 1), user: user, txn: -1}
		e.use = Use{t: t, id: id, e: e}
		t.m[id] = e
		delete(t.ended, id)
	}
	e.lastUse = t.now()
	e.dirty = true
	return e
}

// Start makes a new session for user (startSession).
func (t *Table) Start(user string) ID {
	id := ID{UID: UIDOfUser(user)}
	_, _ = rand.Read(id.UUID[:])        // crypto/rand.Read never fails on Linux
	id.UUID[6] = id.UUID[6]&0x0f | 0x40 // a version 4 UUID
	id.UUID[8] = id.UUID[8]&0x3f | 0x80
	t.mu.Lock()
	t.entryLocked(id, user)
	t.mu.Unlock()
	return id
}

// Use is a session checked out by one command, valid until its Release
// (the session's next checkout hands out the same Use).
type Use struct {
	t  *Table
	id ID
	e  *entry
}

// ID is the session used.
func (u *Use) ID() ID { return u.id }

// Checkout marks the session used now and waits until no other command
// uses it, or ctx ends; interrupt is how killSessions stops this command.
// Release the Use when the command is done.
func (t *Table) Checkout(ctx context.Context, id ID, user string, interrupt func(error)) (*Use, error) {
	t.mu.Lock()
	e := t.entryLocked(id, user)
	// The common case, a session no other command holds, takes its turn
	// under the one lock and never asks ctx for its Done channel (which an
	// operation's context makes on first use).
	select {
	case e.turn <- struct{}{}:
		e.interrupt = interrupt
		t.mu.Unlock()
		return &e.use, nil
	default:
	}
	t.mu.Unlock()
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	t.mu.Lock()
	e.interrupt = interrupt
	t.mu.Unlock()
	return &e.use, nil
}

// Release ends the command's use of the session.
func (u *Use) Release() {
	u.t.mu.Lock()
	u.e.interrupt = nil
	u.e.lastUse = u.t.now()
	if u.e.abortTx {
		u.e.abortTx = false
		u.e.abortTxLocked()
	}
	u.t.mu.Unlock()
	<-u.e.turn
}

// Refresh marks sessions used now (refreshSessions); unknown ones are
// added, as MongoDB's refresh vivifies them.
func (t *Table) Refresh(ids []ID, user string) {
	t.mu.Lock()
	for _, id := range ids {
		t.entryLocked(id, user)
	}
	t.mu.Unlock()
}

// End forgets sessions (endSessions): their record goes at the next
// Flush, and an open transaction of one is aborted. A command running in
// one finishes; its cursors stay, as MongoDB's endSessions leaves them to
// the cursor timeout.
func (t *Table) End(ids []ID) {
	t.mu.Lock()
	for _, id := range ids {
		if e, ok := t.m[id]; ok && e.tx.status != txnPrepared { // kept: prepare.go
			// Its open transaction ends too (nothing could reach it
			// again): what it holds — its storage snapshot, a shard's
			// migration gate (engine.Txn.Hold) — is released.
			e.abortTxOrLater()
			delete(t.m, id)
			t.ended[id] = struct{}{}
		}
	}
	t.mu.Unlock()
}

// Kill ends the sessions match selects (killSessions, killAllSessions,
// killAllSessionsByPattern): the command running in each is interrupted
// with cause, their cursors are closed and their records go at the next
// Flush. It returns how many it killed.
func (t *Table) Kill(match func(id ID, user string) bool, cause error) int {
	t.mu.Lock()
	killed := map[ID]struct{}{}
	var stop []func(error)
	for id, e := range t.m {
		if !match(id, e.user) || e.tx.status == txnPrepared { // kept: prepare.go
			continue
		}
		killed[id] = struct{}{}
		if e.interrupt != nil {
			stop = append(stop, e.interrupt)
		}
		e.abortTxOrLater()
		delete(t.m, id)
		t.ended[id] = struct{}{}
	}
	onKill := t.onKill
	t.mu.Unlock()
	for _, fn := range stop {
		fn(cause)
	}
	if onKill != nil {
		onKill(killed)
	}
	return len(killed)
}

// Forget makes every session read its newest transaction number from
// config.transactions again at its next retryable write: for a replica
// set whose member becomes primary, since records written through another
// primary arrived as replicated commit groups, not through this table.
//
// Prepared transactions are rebuilt from their records
// (RestorePrepared: replication may have committed or aborted them, or
// prepared others, since this member held them).
func (t *Table) Forget() {
	t.gen.Add(1) // every session's statement keys are read again
	t.mu.Lock()
	for _, e := range t.m {
		if e.tx.status == txnPrepared {
			continue // RestorePrepared
		}
		e.loaded, e.txn = false, -1
		e.abortTxOrLater()
		if e.tx.status != txnOpen {
			e.tx = txnState{}
		}
	}
	t.mu.Unlock()
	if err := t.RestorePrepared(); err != nil {
		t.restoreErr.Store(&err)
	}
}

// RestoreError is the error of the last rebuild of prepared transactions
// that failed (nil: none failed), for the server's log and tests.
func (t *Table) RestoreError() error {
	if p := t.restoreErr.Load(); p != nil {
		return *p
	}
	return nil
}

// AbortTransactions aborts every open transaction, now or, for one whose
// command is running, when that command releases the session: a primary
// stepping down aborts its transactions, as mongod does, so their next
// statement or commit answers NoSuchTransaction (TransientTransactionError)
// and the driver's withTransaction retries them on the new primary.
func (t *Table) AbortTransactions() {
	t.mu.Lock()
	for _, e := range t.m {
		e.abortTxOrLater()
	}
	t.mu.Unlock()
}

// Len is how many sessions are live.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Has reports whether the session is live.
func (t *Table) Has(id ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[id]
	return ok
}

// Expire forgets sessions unused for the timeout and not in use; their
// records go at the next Flush (the TTL index also removes them).
func (t *Table) Expire() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := t.now().Add(-t.timeout)
	n := 0
	for id, e := range t.m {
		if e.lastUse.Before(cut) && len(e.turn) == 0 && e.tx.status != txnPrepared {
			delete(t.m, id)
			t.ended[id] = struct{}{}
			n++
		}
	}
	return n
}

// Flush writes the table to config.system.sessions: {_id: lsid, lastUse}
// for each session used since the last Flush, and removes the records of
// ended ones, in one request. The collection gets MongoDB's TTL index
// (lsidTTLIndex: lastUse, expireAfterSeconds = the timeout) first.
func (t *Table) Flush() error {
	t.mu.Lock()
	var put []bsoncore.Document
	var gone []ID
	for id, e := range t.m {
		if e.dirty {
			put = append(put, bsoncore.NewDocumentBuilder().
				AppendDocument("_id", id.Doc()).
				AppendDateTime("lastUse", e.lastUse.UnixMilli()).Build())
			e.dirty = false
		}
	}
	for id := range t.ended {
		gone = append(gone, id)
	}
	clear(t.ended)
	t.mu.Unlock()
	if len(put) == 0 && len(gone) == 0 {
		return nil
	}
	err := t.eng.WriteRider(func(tx *storage.Txn) error {
		for _, d := range put {
			if err := t.eng.PutInTxn(tx, SessionsNS, d); err != nil {
				return err
			}
		}
		for _, id := range gone {
			if err := t.eng.DeleteInTxn(tx, SessionsNS, id.Value()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.ensureTTLIndex()
}

// ensureTTLIndex gives config.system.sessions (made by the first Flush
// that stores a record) MongoDB's TTL index on lastUse.
func (t *Table) ensureTTLIndex() error {
	c := t.eng.Catalog().Collection(SessionsNS.DB, SessionsNS.Coll)
	if c == nil {
		return nil
	}
	for _, ix := range c.Indexes {
		if ix.Name == "lsidTTLIndex" {
			return nil
		}
	}
	spec := bsoncore.NewDocumentBuilder().
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("lastUse", 1).Build()).
		AppendString("name", "lsidTTLIndex").
		AppendInt32("expireAfterSeconds", int32(t.timeout/time.Second)).Build()
	_, err := t.eng.CreateIndexes(context.Background(), SessionsNS, []bsoncore.Document{spec})
	return err
}

// uidName is the name a uid is the hash of: "name@db" for user "db.name".
func uidName(user string) string {
	for i := 0; i < len(user); i++ {
		if user[i] == '.' {
			return user[i+1:] + "@" + user[:i]
		}
	}
	return user
}

// UIDOfUser is the uid of a user given as "db.name" ("" for none). Every
// command with an lsid asks for it, so the hashes are kept: the one of no
// user, and those of the users seen (few; a dropped user's stays).
func UIDOfUser(user string) [32]byte {
	if user == "" {
		return noUserUID
	}
	if uid, ok := userUIDs.Load(user); ok {
		return uid.([32]byte)
	}
	uid := UIDOf(uidName(user))
	userUIDs.Store(user, uid)
	return uid
}

var (
	noUserUID = UIDOf("")
	userUIDs  sync.Map // user key → [32]byte
)

// RefreshInterval is how often the table expires unused sessions and
// writes itself to config.system.sessions (MongoDB's
// logicalSessionRefreshMillis, 5 minutes).
const RefreshInterval = 5 * time.Minute

// Run starts the refresh loop: every interval, Expire then Flush (errors
// are logged). Stop ends it with a last Flush. writable, when set, says
// whether this node may write config.system.sessions now (a replica set's
// secondary may not: only the primary flushes, as MongoDB's sessions
// collection is written through the primary); nil means always.
func (t *Table) Run(every time.Duration, log *slog.Logger, writable func() bool) {
	t.stop = make(chan struct{})
	t.stopped = make(chan struct{})
	go func() {
		defer close(t.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		reap := time.NewTicker(time.Second) // transactions past their lifetime (txn.go)
		defer reap.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-reap.C:
				t.AbortExpired()
			case <-tick.C:
				t.Expire()
				if writable != nil && !writable() {
					continue
				}
				if err := t.Flush(); err != nil {
					log.Warn("cannot write the session table to config.system.sessions", "err", err)
				}
			}
		}
	}()
}

// Stop ends the refresh loop started by Run.
func (t *Table) Stop() {
	if t.stop == nil {
		return
	}
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.stopped
}
