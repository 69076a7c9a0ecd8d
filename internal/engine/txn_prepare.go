package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// Prepared transactions: two-phase commit's participant (MongoDB's
// prepareTransaction, issue #21). Prepare checks that the transaction can
// commit and, in the same pipeline request, writes its prepared record —
// everything its commit needs: its writes, its oplog changes, pre-images,
// versions, inserted keys, written collections — under
// SystemKey("prepared/…"), so the record reaches the disk and the replica
// set's log with the request's group; from then on the transaction holds
// its documents and the catalog records of the collections it wrote
// (storage's "Prepared holds its keys": plain writes, other transactions
// and DDL of those collections fail with WriteConflict; plain writes and
// the readers that must not read past it wait on its documents (prepare
// conflicts, below), DDL waits through AwaitPrepared).
//
// Invariant "Prepared survives": a prepared transaction ends only by
// CommitPrepared or AbortPrepared, whose requests delete its record with
// the commit or the abort; Abort (a session's kill, the lifetime limit, a
// step-down) leaves it prepared. After a restart, or on a member becoming
// primary, RestorePrepared rebuilds every recorded transaction, holding
// its keys again before any write is served. TestPrepared*.
//
// Prepare conflicts (prepare_conflicts.go): as MongoDB's readers and
// writers meet WT_PREPARE_CONFLICT, Cairn's wait only on the storage keys
// a prepared transaction holds — its documents and its index entries —
// until it commits or aborts, so that a reader that waits never sees one
// shard's half of a cross-shard commit: a read on the other shard that
// began after this one's prepare sees its commit. Which readers wait is
// MongoDB 7.0's
// rule: the reads of a write and reads with readConcern snapshot,
// linearizable or afterClusterTime (planner.Options.PrepareConflicts);
// other reads (local, majority) read past a prepared transaction and see
// its documents as before it (MongoDB's ignore_prepared), so a local read
// through a router may see one shard's half of a cross-shard commit, as
// MongoDB's may. A reader that waits (a plan opened by planner.Open with
// PrepareConflicts: Reader.PrepareConflicts) checks every key its
// cursors step over and every document it fetches, including the gaps
// between keys, where a prepared insert would be; on a held key it waits
// (under its context: maxTimeMS gives MaxTimeMSExpired, killOp
// Interrupted), then reads on from a new snapshot, so it sees the outcome;
// readers of other documents of the collection do not wait. A plain write
// first waits for the documents it names that a prepared transaction
// holds (an update's or a delete's chosen _ids, an insert's _ids:
// waitPreparedDocs) under the write's context when it has one
// (ModifyOptions.Ctx: maxTimeMS gives MaxTimeMSExpired), at most
// preparedWriteWait without a deadline, then goes on to WriteConflict;
// an insert that then writes another held key (a unique index
// entry the prepared transaction inserted) fails in the pipeline with
// storage.PrepareConflictError, waits for that key and runs again (writeRerun).
// Deviation from MongoDB 7.0: an update or a delete whose request writes
// a held key it did not name (an index entry) fails with WriteConflict
// rather than waiting — its callback is not safe to run twice.
// Transactions' statements do not wait: one that writes a prepared
// document fails with WriteConflict, and one that reads it reads its
// snapshot.
//
// The prepare timestamp is the cluster time the prepare request takes. A
// commit takes a commitTimestamp (the coordinator's: the highest of the
// participants' prepare timestamps): the node's clock observes the time
// just before it first, so the commit's oplog entry is at it (nothing
// here has a later time) or after it (snapshot_prepared.go's invariant
// covers a read in between).
//
// Deviation from MongoDB 7.0: the oplog carries no prepare entry ({prepare:
// true}) and no separate commitTransaction entry: the prepared record
// replicates as a storage write with the prepare's group, and the commit
// writes the transaction's one applyOps entry, as an unprepared commit
// does, so change streams, history and migrations read committed
// transactions only, as before.

// preparedPrefix starts every prepared record's key.
var preparedPrefix = storage.SystemKey("prepared/")

// preparedKey is the key of the prepared record of the session's
// transaction.
func preparedKey(s *OplogSession) []byte {
	k := append([]byte(nil), preparedPrefix...)
	k = append(k, s.LSID...)
	return binary.BigEndian.AppendUint64(k, uint64(s.TxnNumber))
}

// Prepared reports whether the transaction is prepared.
func (t *Txn) Prepared() bool { return t.st.Prepared() }

// PrepareTimestamp is the prepared transaction's prepare time.
func (t *Txn) PrepareTimestamp() hlc.Timestamp { return t.prepareTS }

// Prepare prepares the transaction (see above); also runs in the prepare's
// request with its time (the session's record). Preparing a prepared
// transaction answers its prepare time again. A transaction that cannot
// commit fails with WriteConflict, still open: the caller aborts it.
func (t *Txn) Prepare(also func(tx *storage.Txn, ts hlc.Timestamp) error) (hlc.Timestamp, error) {
	if t.Session == nil {
		return 0, errors.New("engine: a prepared transaction needs its session")
	}
	if t.st.Prepared() {
		return t.prepareTS, nil
	}
	var holds [][]byte
	for ns := range t.written {
		if c := t.collection(ns); c != nil {
			holds = append(holds, catalog.RecordKey(c.ID))
		}
	}
	writes := t.st.Writes()
	var ts hlc.Timestamp
	err := t.st.Prepare(holds, func(tx *storage.Txn) error {
		for ns := range t.written {
			if err := t.checkCollection(ns); err != nil {
				return err
			}
		}
		ts = tx.Tick()
		tx.Set(preparedKey(t.Session), t.record(ts, writes, holds))
		if also != nil {
			return also(tx, ts)
		}
		return nil
	})
	if err != nil {
		return 0, conflictError(err)
	}
	t.prepareTS = ts
	return ts, nil
}

// CommitPrepared commits the prepared transaction at commitTS or later
// (see above), deleting its record; also runs in the commit's request with
// the commit's time. It returns the commit's oplog time.
func (t *Txn) CommitPrepared(commitTS hlc.Timestamp, also func(tx *storage.Txn, ts hlc.Timestamp) error) (hlc.Timestamp, error) {
	if !t.st.Prepared() {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "commitTimestamp is for a prepared transaction only")
	}
	if commitTS < t.prepareTS {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "commitTimestamp %v is before the prepareTimestamp %v", commitTS, t.prepareTS)
	}
	// The clock observes the time just before commitTS: the commit takes
	// commitTS itself when nothing here has a later time yet, so a read at
	// commitTS sees it (snapshot_prepared.go); otherwise a later one.
	if err := t.e.db.Clock().Observe(commitTS - 1); err != nil {
		return 0, err
	}
	key := preparedKey(t.Session)
	var ts hlc.Timestamp
	err := t.st.CommitPrepared(t.commitFn(func(tx *storage.Txn, ts hlc.Timestamp) error {
		tx.Delete(key)
		t.e.recordPreparedCommit(t, commitTS, ts) // before anyone sees it (snapshot_prepared.go)
		if also != nil {
			return also(tx, ts)
		}
		return nil
	}, &ts))
	if err != nil {
		return 0, err
	}
	t.ended()
	return ts, nil
}

// AbortPrepared aborts the prepared transaction, deleting its record (with
// also, in the same request).
func (t *Txn) AbortPrepared(also func(tx *storage.Txn) error) error {
	key := preparedKey(t.Session)
	if err := t.e.db.Write(func(tx *storage.Txn) error {
		tx.Delete(key)
		if also != nil {
			return also(tx)
		}
		return nil
	}); err != nil {
		return err
	}
	t.st.Release()
	t.ended()
	return nil
}

// Release drops the transaction's state in memory, prepared or not,
// leaving a prepared one's record (RestorePrepared rebuilds it).
func (t *Txn) Release() {
	t.st.Release()
	t.ended()
}

// record is the transaction's prepared record.
func (t *Txn) record(ts hlc.Timestamp, writes []storage.Write, holds [][]byte) []byte {
	b := bsoncore.NewDocumentBuilder().
		AppendDocument("lsid", t.Session.LSID).
		AppendInt64("txnNumber", t.Session.TxnNumber).
		AppendTimestamp("prepareTimestamp", ts.T(), ts.I())
	w := bsoncore.NewArrayBuilder()
	for _, x := range writes {
		w.AppendDocument(bsoncore.NewDocumentBuilder().AppendBinary("k", 0, x.Key).AppendBinary("v", 0, x.Value).AppendBoolean("d", x.Delete).Build())
	}
	b.AppendArray("writes", w.Build())
	h := bsoncore.NewArrayBuilder()
	for _, k := range holds {
		h.AppendBinary(0, k)
	}
	b.AppendArray("holds", h.Build())
	c := bsoncore.NewArrayBuilder()
	for _, ch := range t.changes {
		c.AppendDocument(ch)
	}
	b.AppendArray("changes", c.Build())
	p := bsoncore.NewArrayBuilder()
	for _, x := range t.preImages {
		p.AppendDocument(bsoncore.NewDocumentBuilder().AppendBinary("ui", 0, x.ui).AppendInt64("idx", x.idx).AppendDocument("doc", x.doc).Build())
	}
	b.AppendArray("preImages", p.Build())
	v := bsoncore.NewArrayBuilder()
	for _, x := range t.versions {
		v.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("c", int64(x.collID)).AppendBinary("k", 0, x.idKey).AppendInt64("v", int64(x.v)).Build())
	}
	b.AppendArray("versions", v.Build())
	in := bsoncore.NewArrayBuilder()
	for _, x := range t.inserted {
		in.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt64("c", int64(x.collID)).AppendBinary("k", 0, x.key).Build())
	}
	b.AppendArray("inserted", in.Build())
	ns := bsoncore.NewArrayBuilder()
	for n := range t.written {
		ns.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("db", n.DB).AppendString("coll", n.Coll).Build())
	}
	b.AppendArray("written", ns.Build())
	return b.Build()
}

// RestorePrepared rebuilds every prepared transaction from its record
// ("Prepared survives"). Call it before the node serves writes: after
// opening the store, or on becoming primary (after dropping the
// transactions it held in memory: Release).
func (e *Engine) RestorePrepared() ([]*Txn, error) {
	it, err := e.db.NewIter(preparedPrefix, storage.PrefixEnd(preparedPrefix))
	if err != nil {
		return nil, err
	}
	var recs []bsoncore.Document
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		recs = append(recs, append(bsoncore.Document(nil), v...))
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	out := make([]*Txn, 0, len(recs))
	for _, rec := range recs {
		t, err := e.restoreTxn(rec)
		if err != nil {
			for _, t := range out {
				t.Release()
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// restoreTxn rebuilds one prepared transaction from its record.
func (e *Engine) restoreTxn(rec bsoncore.Document) (*Txn, error) {
	bad := func(what string) error {
		return mongoerr.New(mongoerr.InternalError, "engine: a prepared transaction's record is damaged (%s)", what)
	}
	lsid, ok := rec.Lookup("lsid").DocumentOK()
	if !ok {
		return nil, bad("lsid")
	}
	n, _ := rec.Lookup("txnNumber").Int64OK()
	pt, pi, _ := rec.Lookup("prepareTimestamp").TimestampOK()
	elems := func(field string) []bsoncore.Value {
		arr, _ := rec.Lookup(field).ArrayOK()
		vals, _ := arr.Values()
		return vals
	}
	bin := func(d bsoncore.Document, f string) []byte {
		_, b, _ := d.Lookup(f).BinaryOK()
		return append([]byte(nil), b...)
	}
	var writes []storage.Write
	for _, v := range elems("writes") {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, bad("writes")
		}
		del, _ := d.Lookup("d").BooleanOK()
		writes = append(writes, storage.Write{Key: bin(d, "k"), Value: bin(d, "v"), Delete: del})
	}
	var holds [][]byte
	for _, v := range elems("holds") {
		_, b, ok := v.BinaryOK()
		if !ok {
			return nil, bad("holds")
		}
		holds = append(holds, append([]byte(nil), b...))
	}
	st, err := e.db.RestorePrepared(writes, holds)
	if err != nil {
		return nil, err
	}
	cat, _ := e.cat.ReadBegin()
	t := &Txn{e: e, st: st, cat: cat, created: map[Namespace]*catalog.Collection{}, written: map[Namespace]bool{},
		Session: &OplogSession{LSID: append(bsoncore.Document(nil), lsid...), TxnNumber: n}, prepareTS: hlc.New(pt, pi)}
	for _, v := range elems("changes") {
		d, _ := v.DocumentOK()
		t.changes = append(t.changes, append([]byte(nil), d...))
		t.size += len(d)
	}
	for _, v := range elems("preImages") {
		d, _ := v.DocumentOK()
		idx, _ := d.Lookup("idx").Int64OK()
		doc, _ := d.Lookup("doc").DocumentOK()
		t.preImages = append(t.preImages, pendingPreImage{ui: bin(d, "ui"), idx: idx, doc: append(bsoncore.Document(nil), doc...)})
	}
	for _, v := range elems("versions") {
		d, _ := v.DocumentOK()
		c, _ := d.Lookup("c").Int64OK()
		ver, _ := d.Lookup("v").Int64OK()
		t.versions = append(t.versions, pendingVersion{collID: uint64(c), idKey: bin(d, "k"), v: uint64(ver)})
	}
	for _, v := range elems("inserted") {
		d, _ := v.DocumentOK()
		c, _ := d.Lookup("c").Int64OK()
		t.inserted = append(t.inserted, insertedKey{collID: uint64(c), key: bin(d, "k")})
	}
	for _, v := range elems("written") {
		d, _ := v.DocumentOK()
		db, _ := d.Lookup("db").StringValueOK()
		coll, _ := d.Lookup("coll").StringValueOK()
		t.written[Namespace{DB: db, Coll: coll}] = true
	}
	return t, nil
}

// preparedDDLWait bounds a DDL operation's wait on a prepared transaction
// when its context has no deadline of its own (no maxTimeMS). MongoDB's
// DDL waits for the collection's exclusive lock with no bound; Cairn gives
// up after this with LockTimeout rather than hang behind a transaction
// whose coordinator is gone. A variable for the tests.
var preparedDDLWait = 60 * time.Second

// preparedDDLPoll spaces the retries of a DDL operation that conflicts
// with a prepared transaction holding none of the collections it names
// (dropDatabase, an index record).
const preparedDDLPoll = 5 * time.Millisecond

// AwaitPrepared runs ddl, a DDL operation of the collections nss (drop,
// dropIndexes, collMod, renameCollection, dropDatabase), as MongoDB's DDL
// waits for its collection's exclusive lock behind a prepared transaction:
// while ddl meets a prepare conflict (a prepared transaction holds what it
// writes, storage.ErrPrepareConflict) it waits until that transaction ends
// and runs ddl again. The wait ends with ctx — opctx's cause, so
// maxTimeMS gives MaxTimeMSExpired and killOp Interrupted — or, with no
// deadline on ctx, after preparedDDLWait with LockTimeout. It costs
// nothing more than ddl while nothing is prepared.
func (e *Engine) AwaitPrepared(ctx context.Context, nss []Namespace, ddl func() error) error {
	var cancel context.CancelFunc
	for {
		err := ddl()
		if !errors.Is(err, storage.ErrPrepareConflict) {
			return err
		}
		if cancel == nil {
			cancel = func() {}
			if _, ok := ctx.Deadline(); !ok {
				ctx, cancel = context.WithTimeoutCause(ctx, preparedDDLWait, errPreparedDDLWait(nss))
			}
			defer cancel()
		}
		if err := e.awaitPreparedEnd(ctx, nss); err != nil {
			return err
		}
	}
}

// awaitPreparedEnd waits until a prepared transaction holding one of nss
// ends (or, none holding them, a short while), or ctx ends: its cause.
func (e *Engine) awaitPreparedEnd(ctx context.Context, nss []Namespace) error {
	var ended <-chan struct{}
	st, _ := e.cat.ReadBegin()
	for _, ns := range nss {
		if c := st.Collection(ns.DB, ns.Coll); c != nil {
			if held, ch := e.db.PreparedEnded(catalog.RecordKey(c.ID)); held {
				ended = ch
				break
			}
		}
	}
	var poll <-chan time.Time
	if ended == nil {
		t := time.NewTimer(preparedDDLPoll)
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-ended:
	case <-poll:
	case <-ctx.Done():
		return opctx.Err(ctx)
	}
	return nil
}

// errPreparedDDLWait is AwaitPrepared's error after preparedDDLWait.
func errPreparedDDLWait(nss []Namespace) error {
	what := "the collection"
	switch {
	case len(nss) > 0 && nss[0].Coll == "":
		what = "database " + nss[0].DB
	case len(nss) > 0:
		what = "collection " + nss[0].String()
	}
	return mongoerr.New(mongoerr.LockTimeout, "Unable to acquire an exclusive lock on %s within %v: a prepared transaction holds it until its commit or abort", what, preparedDDLWait)
}
