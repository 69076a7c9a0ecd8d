package engine

import (
	"encoding/binary"
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Multi-document transactions (issue #19) over storage.Transaction: a
// transaction reads one snapshot plus its own writes and buffers its
// writes until Commit applies them in one pipeline request.
//
// Invariant "Statements on the pipeline": a transaction's write statement
// (InsertWith, ModifyWith with a Txn) runs as a commit-pipeline request
// whose function runs the statement (storage.Txn.RunStatement): its reads
// see the transaction's view, its writes join the transaction, and the
// engine state only the pipeline goroutine touches (working catalog, tail
// bounds, validator and versioning caches, the oplog's scratch) is touched
// there as for any write ("Serial apply"). A request that only ran a
// statement writes nothing to its group, so it costs no sync.
//
// What a statement must not do to shared state, because the transaction
// may abort, is deferred to the commit request or refused:
//   - oplog entries: each change's fields (appendChange, the function a
//     single write's entry uses) are kept in the Txn; Commit writes one
//     entry, MongoDB's applyOps shape (op "c", ns "admin.$cmd",
//     o.applyOps, lsid, txnNumber, prevOpTime), stamped in the commit
//     request ("Change and entry commit together").
//   - versions of versioned collections: the history record and version
//     key are written in the transaction at time pendingTS (history.go);
//     Commit moves the record to, and points the version key at, the
//     commit's cluster time, one for the whole transaction ("History
//     follows documents" holds at commit). A version the same transaction
//     superseded shares that time with the newer one: an as-of read at it
//     finds the newer (the key orders them by version), so it was never
//     visible.
//   - tail bounds ("Tail bound"): a statement's insert always reads for a
//     duplicate (a bound loaded from the transaction's view could be below
//     keys committed since) and raises no bound; Commit raises the loaded
//     bounds to the keys it inserts.
//   - multikey flags: a statement sets them, in the working catalog and
//     its record, in the statement's own request, which commits at once,
//     whatever becomes of the transaction: a flag set early only makes
//     plans more careful, while one kept in the transaction could be lost
//     (another writer's array document, relying on the flag the working
//     catalog shows, committed, and the transaction aborted).
//   - a collection the transaction creates (explicitly, CreateCollectionIn,
//     or implicitly, an insert, upsert or createIndexes of a missing one)
//     is the transaction's own until Commit ("Creation commits with the
//     transaction" below).
//   - capped collections, system collections and the admin, config and
//     local databases are refused, as MongoDB 7.0 refuses them
//     (OperationNotSupportedInTransaction).
//
// Invariant "Catalog as of the snapshot": the transaction reads through the
// catalog state that matches its snapshot (ReadBegin); a statement that
// writes a collection whose identity or index set changed since (dropped,
// recreated, an index built or dropped), and a commit of such a write,
// fail with WriteConflict, so no document of the transaction is indexed by
// another catalog than the one it was read with.
//
// Invariant "Creation commits with the transaction" (MongoDB 4.4+'s DDL
// in transactions): a collection the transaction creates gets its id from
// the catalog's sequence in the statement's own request (an id an aborted
// transaction took is never used) and lives in Txn.created only, with the
// indexes CreateIndexesIn gives it while it is empty; statements write and
// read it there (writeCollection, collection), its create and
// createIndexes join the transaction's applyOps entry, and Commit installs
// it in the catalog (catalog.AddCollection) in the commit's own request,
// with the documents: no reader outside the transaction sees the
// collection before the commit, and an abort leaves no trace of it. A
// collection or view of the same name created meanwhile fails the
// transaction's next statement on it, or its commit, with WriteConflict
// (first writer wins, as for documents). TestTxnCreateCollection.
//
// Size: the transaction's oplog entry must be a storable document, so its
// changes' fields may total at most MaxTransactionBytes (16 MiB less room
// for the entry's own fields); beyond, the statement fails with
// TransactionTooLarge (MongoDB 7.0 splits large transactions over several
// entries instead).

// MaxTransactionBytes bounds the changes of one transaction (see above).
const MaxTransactionBytes = MaxDocumentSize - 16<<10

// Txn is one multi-document transaction. Its statements are used one at a
// time (a session runs its commands one after another).
type Txn struct {
	e   *Engine
	st  *storage.Transaction // &stx
	stx storage.Transaction
	cat *catalog.State // the catalog matching the snapshot

	// Session, when set, names the transaction in its oplog entry.
	Session *OplogSession
	sess    OplogSession // SetSession's, so naming costs no allocation
	// ReadConcernLevel is the level the transaction was started with (""
	// for none), kept for the command layer: MongoDB lets explicit DDL run
	// only in a transaction under "local".
	ReadConcernLevel string
	// prepareTS is a prepared transaction's prepare time (txn_prepare.go).
	prepareTS hlc.Timestamp
	// holds are released when the transaction ends (txn_hold.go).
	holds txnHolds
	// at is the cluster time a transaction begun by BeginAt reads at
	// (snapshot_prepared.go); 0 otherwise.
	at hlc.Timestamp

	// The rest is used on the pipeline goroutine only (statements and the
	// commit request).
	mem          *txnMemory                        // kept by BeginReusing; made at the first write
	created      map[Namespace]*catalog.Collection // not yet in the catalog
	createdOrder []Namespace                       // created's keys, as created
	written      map[Namespace]bool
	changes      [][]byte // each change's applyOps element
	// preImages wait for the commit's time (storePreImage).
	preImages []pendingPreImage
	size      int
	versions  []pendingVersion
	inserted  []insertedKey
}

type pendingVersion struct {
	collID uint64
	idKey  []byte
	v      uint64
}

type insertedKey struct {
	collID uint64
	key    []byte
}

// txnMemory is what a transaction's statements and commit grow that the
// next transaction in the same Txn reuses (BeginReusing keeps it, as it
// keeps storage's Scratch), so a session's transactions stop allocating
// it: the changes' bytes (one buffer), the written set, and the functions
// a statement's request and the commit hand the pipeline, made once.
// What a large transaction grew is dropped rather than kept (recycle).
type txnMemory struct {
	t         *Txn
	changeBuf []byte   // the changes' bytes, one after another
	changes   [][]byte // Txn.changes' room
	written   map[Namespace]bool
	// pop undoes the newest change (a statement's undo hook per change:
	// hooks run newest first, so each takes back its own).
	pop func()
	// The statement being run (write) and the commit's arguments.
	busy               bool
	ns                 Namespace
	fn                 func(*storage.Txn) error
	outer              *storage.Txn
	request, statement func(*storage.Txn) error
	also               func(tx *storage.Txn, ts hlc.Timestamp) error
	ts                 hlc.Timestamp
	commit             func(*storage.Txn) error
}

// Bounds on what a txnMemory keeps from one transaction for the next.
const (
	keepTxnChanges = 1 << 10
	keepTxnBytes   = 1 << 20
)

// memory is t's txnMemory, made at the first use.
func (t *Txn) memory() *txnMemory {
	if t.mem == nil {
		m := &txnMemory{t: t}
		m.pop, m.request, m.statement, m.commit = m.popChange, m.runRequest, m.runStatement, m.runCommit
		t.mem = m
	}
	return t.mem
}

// recycle readies m, its transaction ended, for the next one in the same
// Txn.
func (m *txnMemory) recycle() *txnMemory {
	if m == nil {
		return nil
	}
	if cap(m.t.changes) > cap(m.changes) {
		m.changes = m.t.changes
	}
	if cap(m.changes) > keepTxnChanges || cap(m.changeBuf) > keepTxnBytes {
		m.changes, m.changeBuf = nil, nil
	}
	clear(m.changes[:cap(m.changes)]) // the last transaction's changes, unreferenced
	m.changes, m.changeBuf = m.changes[:0], m.changeBuf[:0]
	if len(m.written) > keepTxnChanges {
		m.written = nil
	}
	clear(m.written)
	return m
}

// popChange undoes the newest change (addChange's undo hook).
func (m *txnMemory) popChange() {
	t := m.t
	c := t.changes[len(t.changes)-1]
	t.changes[len(t.changes)-1] = nil
	t.changes = t.changes[:len(t.changes)-1]
	t.size -= len(c)
	m.changeBuf = m.changeBuf[:len(m.changeBuf)-len(c)]
}

// txnCursor is the transaction whose statement the pipeline is applying.
type txnCursor struct {
	in    *Txn
	outer *storage.Txn // the statement's own request
}

// Begin starts a transaction reading everything committed so far.
func (e *Engine) Begin() *Txn { return e.BeginReusing(nil) }

// BeginReusing is Begin into prev, an ended transaction of the caller's
// that nothing else holds any more (a session's last one: its cursors are
// closed before its next transaction starts), which saves a transaction
// its one allocation. A prev that is nil, still open, or whose view an
// iterator still reads (storage's "Readers outlive the end") is left
// alone, and the transaction is a new one.
func (e *Engine) BeginReusing(prev *Txn) *Txn {
	t := prev
	var sc *storage.Scratch
	var mem *txnMemory
	if t == nil || !t.stx.Released() {
		t = new(Txn) // the engine's and storage's transaction in one allocation (DB.BeginIn)
	} else {
		// The memory prev's statements grew serves this one's.
		sc, mem = t.stx.Scratch(), t.mem.recycle()
		*t = Txn{mem: mem}
	}
	for {
		st, g, ok := e.cat.TryReadBegin() // inlined; ReadBegin waits while a catalog change is in flight
		if !ok {
			st, g = e.cat.ReadBegin()
		}
		t.e, t.cat = e, st // created, written: made at the first use
		e.db.BeginIn(&t.stx)
		t.st = &t.stx
		if e.cat.ReadValid(g) {
			t.stx.SetScratch(sc)
			return t
		}
		t.stx.Abort()
		t.stx = storage.Transaction{}
	}
}

// SetSession names the transaction's session (Session): lsid, which the
// caller must not change afterwards, and its transaction number.
func (t *Txn) SetSession(lsid bsoncore.Document, txnNumber int64) {
	t.sess = OplogSession{LSID: lsid, TxnNumber: txnNumber}
	t.Session = &t.sess
}

// Abort ends the transaction, writing nothing; aborting an ended one does
// nothing, and so does aborting a prepared one ("Prepared survives":
// AbortPrepared ends it).
func (t *Txn) Abort() {
	if !t.st.Prepared() {
		t.st.Abort()
		t.ended()
	}
}

// Writes reports whether the transaction changed any document or created
// a collection.
func (t *Txn) Writes() bool { return t.st.Len() > 0 || len(t.createdOrder) > 0 }

// NewReaderIn opens a reader of ns inside transaction t: its snapshot plus
// its own writes, through the catalog that matches them.
func (e *Engine) NewReaderIn(t *Txn, ns Namespace) (*Reader, error) {
	if t.at != 0 {
		if err := e.preparedAt(ns, t.at); err != nil { // snapshot_prepared.go
			return nil, err
		}
	}
	r := &Reader{e: e, snap: t.st}
	if err := r.describe(t.collection(ns)); err != nil {
		return nil, err
	}
	return r, nil
}

// GetIn appends the document of ns whose _id is id, as t sees it, to dst.
func (e *Engine) GetIn(t *Txn, dst []byte, ns Namespace, id bsoncore.Value) ([]byte, bool, error) {
	c := t.collection(ns)
	if c == nil {
		return dst, false, nil
	}
	if t.at != 0 {
		if err := e.preparedAt(ns, t.at); err != nil { // snapshot_prepared.go
			return dst, false, err
		}
	}
	// The key in a stack buffer, as Get builds it; Pebble's snapshot read
	// moves it to the heap (TestTxnReadAllocs).
	var kb [64]byte
	return t.st.Get(dst, appendIDKey(storage.Prefix(kb[:0], storage.SpaceDocument, c.ID), id))
}

// collection is ns as the transaction reads it.
func (t *Txn) collection(ns Namespace) *catalog.Collection {
	if c := t.cat.Collection(ns.DB, ns.Coll); c != nil {
		return c
	}
	return t.created[ns] // changed by statements only, one at a time
}

// writeCollection is ns as a write (a request on the pipeline) sees it:
// the working catalog's, or, in a transaction's statement, the one the
// transaction created ("Creation commits with the transaction").
func (e *Engine) writeCollection(ns Namespace) *catalog.Collection {
	if t := e.txn.in; t != nil {
		if c := t.created[ns]; c != nil {
			return c
		}
	}
	return e.cat.Working().Collection(ns.DB, ns.Coll)
}

// write runs fn as the request of one write: alone, or, with a
// transaction, as one of its statements ("Statements on the pipeline").
// Alone, a request that writes a key a prepared transaction holds fails
// with WriteConflict: its caller waits for the keys it knows first
// (waitPreparedDocs), or runs it again (writeRerun).
func (e *Engine) write(t *Txn, ns Namespace, fn func(tx *storage.Txn) error) error {
	if t == nil {
		return conflictError(e.db.Write(fn))
	}
	if err := refuseInTransaction(ns); err != nil {
		return err
	}
	m := t.memory()
	if m.busy {
		return errors.New("engine: a transaction's statement started while another runs") // one at a time (Txn)
	}
	m.busy, m.ns, m.fn = true, ns, fn
	err := e.db.Write(m.request) // runRequest
	m.busy, m.fn, m.outer = false, nil, nil
	return conflictError(err)
}

// runRequest is a statement's pipeline request (write): it runs the
// statement, runStatement, in the transaction.
func (m *txnMemory) runRequest(outer *storage.Txn) error {
	if err := m.t.checkCollection(m.ns); err != nil {
		return err
	}
	m.outer = outer
	return outer.RunStatement(m.t.st, m.statement)
}

// runStatement is the statement write runs, in the transaction.
func (m *txnMemory) runStatement(tx *storage.Txn) error {
	t, e := m.t, m.t.e
	e.txn = txnCursor{in: t, outer: m.outer}
	defer func() { e.txn = txnCursor{} }()
	if err := m.fn(tx); err != nil {
		return err
	}
	if t.size > MaxTransactionBytes {
		return mongoerr.New(mongoerr.TransactionTooLarge, "Total size of all transaction operations must be less than %d bytes", MaxTransactionBytes)
	}
	if t.written == nil {
		if m.written == nil {
			m.written = map[Namespace]bool{}
		}
		t.written = m.written
	}
	t.written[m.ns] = true
	return nil
}

// conflictError turns storage's write conflict into MongoDB's.
func conflictError(err error) error {
	if errors.Is(err, storage.ErrWriteConflict) {
		return mongoerr.New(mongoerr.WriteConflict, "Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.")
	}
	return err
}

// refuseInTransaction refuses writes MongoDB 7.0 refuses in a transaction:
// to the admin, config and local databases and to system collections.
func refuseInTransaction(ns Namespace) error {
	switch {
	case ns.DB == "admin" || ns.DB == "config" || ns.DB == "local":
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run command against the '%s' database in a transaction.", ns.DB)
	case len(ns.Coll) >= 7 && ns.Coll[:7] == "system.":
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot write to system collection %s within a transaction.", ns)
	}
	return nil
}

// checkCollection fails a write of ns (inside a pipeline request) whose
// collection is capped, or whose catalog entry is not the one the
// transaction reads ("Catalog as of the snapshot").
func (t *Txn) checkCollection(ns Namespace) error {
	w := t.e.cat.Working().Collection(ns.DB, ns.Coll)
	if t.created[ns] != nil {
		if w != nil || t.e.cat.Working().View(ns.DB, ns.Coll) != nil {
			return mongoerr.New(mongoerr.WriteConflict, "Unable to create collection '%s' in the transaction: it was created concurrently", ns)
		}
		return nil
	}
	if _, capped := CappedOf(w); capped {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.", ns)
	}
	r := t.collection(ns)
	if r == nil && w == nil {
		return nil // a statement's request may create it
	}
	if r == nil || w == nil || r.ID != w.ID || !sameIndexes(r, w) {
		return mongoerr.New(mongoerr.WriteConflict, "Unable to write to collection '%s' due to catalog changes; please retry the operation", ns)
	}
	return nil
}

// sameIndexes reports whether a and b have the same indexes (by id).
func sameIndexes(a, b *catalog.Collection) bool {
	return slices.EqualFunc(a.Indexes, b.Indexes, func(x, y catalog.Index) bool { return x.ID == y.ID })
}

// createInTxn creates ns for a statement of the transaction ("Creation
// commits with the transaction"): tx is the statement's, whose undo
// forgets the collection if the statement fails.
func (e *Engine) createInTxn(tx *storage.Txn, ns Namespace, options bson.Raw) (*catalog.Collection, error) {
	if err := catalog.ValidateUserCollectionName(ns.DB, ns.Coll); err != nil {
		return nil, err
	}
	cur := e.txn
	c, err := e.cat.NewCollection(cur.outer, ns.DB, ns.Coll, options)
	if err != nil {
		return nil, err
	}
	t := cur.in
	t.setCreated(tx, ns, c)
	t.addChange(tx, 'c', Namespace{DB: ns.DB, Coll: "$cmd"}, c.UUID.Data, cmdDoc("create", strVal(ns.Coll), bsoncore.Document(options)), bsoncore.Value{})
	return c, nil
}

// setCreated makes c the transaction's collection ns, undone with tx.
func (t *Txn) setCreated(tx *storage.Txn, ns Namespace, c *catalog.Collection) {
	prev, n := t.created[ns], len(t.createdOrder)
	if prev == nil {
		t.createdOrder = append(t.createdOrder, ns)
	}
	if t.created == nil {
		t.created = map[Namespace]*catalog.Collection{}
	}
	t.created[ns] = c
	tx.OnUndo(func() {
		t.createdOrder = t.createdOrder[:n]
		if prev == nil {
			delete(t.created, ns)
		} else {
			t.created[ns] = prev
		}
	})
}

// addChange keeps one change's applyOps element (logChange).
// Its bytes go to the transaction's one buffer (txnMemory), where the
// elements kept before stay valid when it grows (they keep the old array).
func (t *Txn) addChange(tx *storage.Txn, op byte, ns Namespace, collUUID []byte, o bsoncore.Document, id bsoncore.Value) {
	m := t.memory()
	from := len(m.changeBuf)
	start, b := bsoncore.ReserveLength(m.changeBuf)
	b = appendChange(b, op, ns, collUUID, o, id)
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	m.changeBuf = b
	c := b[from:len(b):len(b)]
	if t.changes == nil {
		t.changes = m.changes[:0]
	}
	t.changes = append(t.changes, c)
	t.size += len(c)
	tx.OnUndo(m.pop)
}

// addPreImage keeps the pre-image of the change just added (addChange),
// written at the commit under its time and the change's index.
func (t *Txn) addPreImage(tx *storage.Txn, ui []byte, cur bsoncore.Document) {
	n := len(t.preImages)
	t.preImages = append(t.preImages, pendingPreImage{ui: ui, idx: int64(len(t.changes) - 1), doc: append(bsoncore.Document(nil), cur...)})
	tx.OnUndo(func() { t.preImages = t.preImages[:n] })
}

// addVersion keeps a version whose history record waits for the commit's
// time (recordVersion).
func (t *Txn) addVersion(tx *storage.Txn, collID uint64, idKey []byte, v uint64) {
	n := len(t.versions)
	t.versions = append(t.versions, pendingVersion{collID: collID, idKey: append([]byte(nil), idKey...), v: v})
	tx.OnUndo(func() { t.versions = t.versions[:n] })
}

// addInserted keeps a document key a statement inserted (insertOne).
func (t *Txn) addInserted(tx *storage.Txn, collID uint64, key []byte) {
	n := len(t.inserted)
	t.inserted = append(t.inserted, insertedKey{collID: collID, key: append([]byte(nil), key...)})
	tx.OnUndo(func() { t.inserted = t.inserted[:n] })
}

// Commit applies the transaction in one pipeline request, with its one
// oplog entry and its versions' times, then also (what must commit with
// it: the session's record) in the same request; it returns the entry's
// time (0 for a transaction that wrote nothing). A write of another
// transaction or writer since the snapshot fails it with WriteConflict and
// writes nothing. The transaction ends either way.
func (t *Txn) Commit(also func(tx *storage.Txn, ts hlc.Timestamp) error) (hlc.Timestamp, error) {
	if !t.Writes() && also == nil {
		// Nothing to write: no commit request, and no time for the
		// request to fill in (which would escape: TestTxnReadAllocs).
		err := t.st.Commit(nil)
		t.ended()
		if err != nil {
			return 0, conflictError(err)
		}
		return 0, nil
	}
	return t.commitWrites(also)
}

// commitWrites is Commit of a transaction with something to write.
func (t *Txn) commitWrites(also func(tx *storage.Txn, ts hlc.Timestamp) error) (hlc.Timestamp, error) {
	m := t.memory()
	m.also = also
	err := t.st.Commit(m.commit) // runCommit
	ts := m.ts
	m.also, m.ts = nil, 0
	t.ended()
	if err != nil {
		return 0, conflictError(err)
	}
	return ts, nil
}

// runCommit is what the commit request does after the transaction's
// writes (commitFn, with the memory's also and ts).
func (m *txnMemory) runCommit(tx *storage.Txn) error {
	return m.t.commitRequest(tx, m.also, &m.ts)
}

// commitFn is what a commit request does after the transaction's writes
// (commitRequest), as a function.
func (t *Txn) commitFn(also func(tx *storage.Txn, ts hlc.Timestamp) error, ts *hlc.Timestamp) func(*storage.Txn) error {
	return func(tx *storage.Txn) error { return t.commitRequest(tx, also, ts) }
}

// commitRequest is what a commit request does after the transaction's
// writes: its oplog entry, versions, pre-images, tail bounds, then also;
// *ts gets the entry's time.
func (t *Txn) commitRequest(tx *storage.Txn, also func(tx *storage.Txn, ts hlc.Timestamp) error, ts *hlc.Timestamp) error {
	e := t.e
	*ts = 0
	e.oplog.lastTS = 0
	for ns := range t.written {
		if err := t.checkCollection(ns); err != nil {
			return err
		}
	}
	for _, ns := range t.createdOrder {
		if err := t.checkCollection(ns); err != nil {
			return err
		}
		if err := e.cat.AddCollection(tx, t.created[ns]); err != nil {
			return err
		}
	}
	if len(t.changes) > 0 {
		*ts = e.logTransaction(tx, t)
	}
	for _, p := range t.versions {
		if err := e.stampVersion(tx, p, *ts); err != nil {
			return err
		}
	}
	for _, p := range t.preImages {
		if err := e.PutInTxn(tx, PreImagesNS, preImageDoc(p.ui, *ts, p.idx, p.doc, e.now())); err != nil {
			return err
		}
	}
	for _, k := range t.inserted {
		if _, loaded := e.tails.last[k.collID]; loaded {
			e.tails.raise(k.collID, k.key)
		}
	}
	if also != nil {
		return also(tx, *ts)
	}
	return nil
}

// logTransaction writes the transaction's one oplog entry and returns its
// time.
func (e *Engine) logTransaction(tx *storage.Txn, t *Txn) hlc.Timestamp {
	ts := tx.Tick()
	l := &e.oplog
	l.lastTS = ts
	b := l.buf[:0]
	start, b := bsoncore.ReserveLength(b)
	if s := t.Session; s != nil {
		b = bsoncore.AppendDocumentElement(b, "lsid", s.LSID)
		b = bsoncore.AppendInt64Element(b, "txnNumber", s.TxnNumber)
	}
	b = bsoncore.AppendStringElement(b, "op", "c")
	b = bsoncore.AppendStringElement(b, "ns", "admin.$cmd")
	o, b := bsoncore.AppendDocumentElementStart(b, "o")
	arr, b := bsoncore.AppendArrayElementStart(b, "applyOps")
	var kb [20]byte
	for i, c := range t.changes {
		b = bsoncore.AppendDocumentElement(b, string(appendIndexKey(kb[:0], i)), c)
	}
	b, _ = bsoncore.AppendArrayEnd(b, arr)
	b, _ = bsoncore.AppendDocumentEnd(b, o)
	b = bsoncore.AppendTimestampElement(b, "ts", ts.T(), ts.I())
	b = bsoncore.AppendInt64Element(b, "t", e.oplogTerm())
	b = bsoncore.AppendInt64Element(b, "v", 2)
	b = bsoncore.AppendDateTimeElement(b, "wall", e.now().UnixMilli())
	prev, b := bsoncore.AppendDocumentElementStart(b, "prevOpTime")
	b = bsoncore.AppendTimestampElement(b, "ts", 0, 0)
	b = bsoncore.AppendInt64Element(b, "t", -1)
	b, _ = bsoncore.AppendDocumentEnd(b, prev)
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	l.buf = b
	var okb [9]byte
	tx.Append(oplogKey(okb[:0], ts), b)
	e.wake.mark(l.collID)
	l.pending += int64(len(b))
	return ts
}

// appendIndexKey appends the decimal form of i (an array element's key).
func appendIndexKey(dst []byte, i int) []byte {
	if i == 0 {
		return append(dst, '0')
	}
	var d [20]byte
	n := len(d)
	for ; i > 0; i /= 10 {
		n--
		d[n] = byte('0' + i%10)
	}
	return append(dst, d[n:]...)
}

// stampVersion gives a version a transaction recorded the commit's time:
// its record moves from pendingTS to its key at ts, and its version key
// (if it has one) names ts.
func (e *Engine) stampVersion(tx *storage.Txn, p pendingVersion, ts hlc.Timestamp) error {
	key := storage.HistoryKey(nil, p.collID, p.idKey, pendingTS, p.v)
	rec, found, err := tx.Get(nil, key)
	if err != nil {
		return err
	}
	if !found || len(rec) < 1 {
		return mongoerr.New(mongoerr.InternalError, "engine: a transaction's version record is missing at commit")
	}
	tx.Delete(key)
	tx.Set(storage.HistoryKey(nil, p.collID, p.idKey, uint64(ts), p.v), rec)
	if !hasVersionKey(p.v) {
		return nil
	}
	var tb [8]byte
	binary.BigEndian.PutUint64(tb[:], uint64(ts))
	tx.Set(storage.HistoryVersionKey(nil, p.collID, p.idKey, p.v), tb[:])
	return nil
}

// pendingPreImage is a transaction's pre-image of its change idx.
type pendingPreImage struct {
	ui  []byte
	idx int64
	doc bsoncore.Document
}
