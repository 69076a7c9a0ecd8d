package engine

import (
	"encoding/binary"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/docdiff"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// The oplog (DESIGN.md §8): every node, standalone too, keeps
// local.oplog.rs, one entry per document change in MongoDB's shape
// ({lsid, txnNumber, op, ns, ui, o, o2, stmtId, ts, t, v: 2, wall}), as
// keys of storage's oplog keyspace: o <ts, 8 bytes big-endian> → entry.
//
// Invariant "Change and entry commit together": insertOne and applyAction,
// the only places documents are stored or removed (see "Valid on commit"),
// write the change's entry in the same request, stamped with a cluster time
// from that request (Txn.Tick, strictly rising), so there is never a change
// without its entry nor an entry without its change, and the keyspace's
// key order is the changes' commit order. TestOplogEntries.
//
// local.oplog.rs is a capped collection in the catalog (made at open) whose
// documents are the oplog keyspace: a Reader of it scans the entries in ts
// order, which is its $natural order, and a tailable cursor's position is
// an entry's ts. The size cap (Options.OplogSize) is kept by trimOplog,
// which removes the oldest entries in a request of its own once the entries
// exceed it, as MongoDB truncates its oplog in the background.
//
// An update's entry is MongoDB's: o is {$v: 2, diff: <docdiff.Diff of the
// stored and the new document>}, o2 is {_id}; a replacement (and an update
// whose change only a replacement can say, docdiff's "Apply inverts
// Diff") holds the whole new document in o, as MongoDB logs a replacement.
//
// Deviations from MongoDB: writes to
// the local database and to config.transactions (implied by the entries'
// lsid and txnNumber, as in MongoDB) are not logged; a capped collection's
// evictions are not logged yet; catalog changes (op "c") are not logged yet.

// OplogNS is the change log's namespace.
var OplogNS = Namespace{DB: "local", Coll: "oplog.rs"}

// Oplog sizes, as mongod chooses its default: 5% of the disk, at least 990
// MB and at most 50 GB.
const (
	MinOplogSize = 990 << 20
	MaxOplogSize = 50 << 30
)

// DefaultOplogSize is mongod's default for a disk of diskBytes.
func DefaultOplogSize(diskBytes int64) int64 {
	return min(max(diskBytes/20, MinOplogSize), MaxOplogSize)
}

// OplogSession is the session of a write whose entries say lsid,
// txnNumber and stmtId (a retryable write's).
type OplogSession struct {
	LSID      bsoncore.Document
	TxnNumber int64
	// StmtIDs are the statement ids of an insert's documents, by position
	// in its batch; a Modify's changes all take StmtIDs[0].
	StmtIDs []int32
}

// oplog is the engine's state of the change log.
type oplog struct {
	collID uint64 // local.oplog.rs's catalog id (fixed once made)
	// max is the size cap in bytes; size the bytes of entries committed,
	// pending those of the group being applied (pipeline goroutine only).
	max     atomic.Int64
	size    atomic.Int64
	pending int64
	// sess and stmt describe the request being applied (pipeline
	// goroutine only): set by InsertWith and ModifyWith for a write with a
	// session, nil otherwise.
	sess *OplogSession
	stmt int32
	// lastTS is the ts of the request's last entry (pipeline goroutine;
	// reset when InsertWith, ModifyWith and WriteRider requests begin).
	lastTS hlc.Timestamp
	// term is the Raft term entries carry in t (-1 on a standalone,
	// MongoDB's uninitialised term); SetOplogTerm sets it.
	term atomic.Pointer[func() int64]
	// uuidOf caches the last logged collection's UUID by namespace, valid
	// while the working catalog is the same state (pipeline goroutine).
	uuidState *catalog.State
	uuidNS    Namespace
	uuid      []byte
	// counting is closed when the sum of the entries at open is done;
	// stopCount ends it early at Close.
	counting, stopCount chan struct{}
	// trimming is set while a trim request is queued.
	trimming atomic.Bool
	// trimmed is the ts of the newest entry a trim removed since open (0:
	// none), so change streams tell a gap they fell into (OplogTrimmed).
	trimmed atomic.Uint64
	buf     []byte // entry scratch, pipeline goroutine only
	// obuf holds an update's o (updateEntry) until logChange copies it
	// into buf; pipeline goroutine only.
	obuf []byte
	// tap, when set, gets each replicated group's entries (TapOplog).
	tap atomic.Pointer[OplogTap]
}

// OplogTap gets the entries a replicated group added, once the group is
// applied and visible, in log order on the applying goroutine: prev and
// now are LastCommitted before and after the group (see storage's
// Hooks.Applied), entries visits the group's entries in ts order, each
// valid only during the call. It must return quickly: the next group
// waits for it.
type OplogTap func(prev, now hlc.Timestamp, entries func(fn func(ts hlc.Timestamp, entry bsoncore.Document)))

// TapOplog sets the one tap of the oplog (nil: none): a change stream
// Feed's, which so learns a replica set member's new entries without
// reading them back. Entries written other than by a replicated group (a
// standalone's) are not tapped; prev then runs ahead of what a tap saw.
func (e *Engine) TapOplog(tap OplogTap) {
	if tap == nil {
		e.oplog.tap.Store(nil)
		return
	}
	e.oplog.tap.Store(&tap)
}

// oplogApplied hands a replicated group's entries to the tap (the storage
// Applied hook).
func (e *Engine) oplogApplied(prev, now hlc.Timestamp, records func(space byte, fn func(k, v []byte))) {
	tap := e.oplog.tap.Load()
	if tap == nil {
		return
	}
	(*tap)(prev, now, func(fn func(hlc.Timestamp, bsoncore.Document)) {
		records(storage.SpaceOplog, func(k, v []byte) {
			if ts, ok := hlc.FromBinary(k[1:]); ok {
				fn(ts, v)
			}
		})
	})
}

// RequestOpTime is, inside a request of InsertWith, ModifyWith or
// WriteRider (a rider), the cluster time of the request's last oplog
// entry, or a new one from tx when it wrote none (config.transactions'
// lastWriteOpTime), and the term entries carry.
func (e *Engine) RequestOpTime(tx *storage.Txn) (hlc.Timestamp, int64) {
	ts := e.oplog.lastTS
	if ts == 0 {
		ts = tx.Tick()
	}
	return ts, e.oplogTerm()
}

func (e *Engine) oplogTerm() int64 {
	if fn := e.oplog.term.Load(); fn != nil {
		return (*fn)()
	}
	return -1
}

// SetOplogTerm sets where entries' t comes from (the replica set's term).
func (e *Engine) SetOplogTerm(fn func() int64) { e.oplog.term.Store(&fn) }

// OplogCollectionID is local.oplog.rs's collection id.
func (e *Engine) OplogCollectionID() uint64 { return e.oplog.collID }

// OplogSize reports the entries' total bytes and the cap.
func (e *Engine) OplogSize() (size, max int64) { return e.oplog.size.Load(), e.oplog.max.Load() }

// SetOplogSize changes the cap (replSetResizeOplog, --oplogSize) and trims
// to it.
func (e *Engine) SetOplogSize(bytes int64) {
	e.oplog.max.Store(bytes)
	e.maybeTrimOplog()
}

// openOplog makes local.oplog.rs when missing and sums its entries.
func (e *Engine) openOplog(size int64) error {
	e.oplog.max.Store(size)
	if c := e.cat.Current().Collection(OplogNS.DB, OplogNS.Coll); c != nil {
		e.oplog.collID = c.ID
	} else {
		opts := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).AppendInt64("size", size).Build()
		err := e.db.Write(func(tx *storage.Txn) error {
			c, err := e.cat.CreateCollection(tx, OplogNS.DB, OplogNS.Coll, bson.Raw(opts))
			if err == nil {
				e.oplog.collID = c.ID
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	// The entries are summed in the background from an iterator taken
	// now, before any write: the writes after it add their own bytes, so
	// nothing is counted twice, and opening a large oplog does not wait
	// for the sum (until it arrives, trims see only the new entries).
	it, err := e.oplogIter()
	if err != nil {
		return err
	}
	e.oplog.counting = make(chan struct{})
	e.oplog.stopCount = make(chan struct{})
	go func() {
		defer close(e.oplog.counting)
		total, err := sumEntries(it, e.oplog.stopCount)
		if err != nil {
			e.log.Warn("cannot sum the oplog's entries", "err", err)
			return
		}
		e.oplog.size.Add(total)
		e.maybeTrimOplog()
	}()
	return nil
}

func (e *Engine) oplogIter() (*storage.Iter, error) {
	prefix := []byte{storage.SpaceOplog}
	return e.db.NewIter(prefix, storage.PrefixEnd(prefix))
}

// sumEntries adds up the values' bytes and closes it; stop ends it early.
func sumEntries(it *storage.Iter, stop <-chan struct{}) (total int64, err error) {
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n%1024 == 0 {
			select {
			case <-stop:
				return total, nil
			default:
			}
		}
		v, err := it.Value()
		if err != nil {
			return total, err
		}
		total += int64(len(v))
	}
	return total, nil
}

// stopOplogCount ends the background sum (before the store closes).
func (e *Engine) stopOplogCount() {
	if e.oplog.stopCount != nil {
		close(e.oplog.stopCount)
		<-e.oplog.counting
		e.oplog.stopCount = nil
	}
}

// RecountOplog sums the entries' bytes afresh: for a replica set after it
// applied commit groups made elsewhere (entries this engine did not write
// through logChange, so its running size did not see them).
func (e *Engine) RecountOplog() error {
	it, err := e.oplogIter()
	if err != nil {
		return err
	}
	total, err := sumEntries(it, nil)
	if err != nil {
		return err
	}
	e.oplog.size.Store(total)
	return nil
}

// isOplog reports whether coll is local.oplog.rs.
func (e *Engine) isOplog(coll *catalog.Collection) bool {
	return coll != nil && coll.ID == e.oplog.collID && e.oplog.collID != 0
}

// refuseOplogWrite refuses a client's write to local.oplog.rs: only the
// server writes it.
func refuseOplogWrite(ns Namespace) error {
	if ns == OplogNS {
		return mongoerr.New(mongoerr.IllegalOperation, "local.oplog.rs is written only by the server")
	}
	return nil
}

// logged reports whether changes to ns get oplog entries.
func logged(ns Namespace) bool {
	return ns.DB != "local" && !(ns.DB == "config" && (ns.Coll == "transactions" || ns.Coll == PreImagesNS.Coll))
}

// logStored logs a change to ns's documents (insertOne, applyAction).
func (e *Engine) logStored(tx *storage.Txn, op byte, ns Namespace, o bsoncore.Document, id bsoncore.Value) {
	if !logged(ns) {
		return
	}
	l := &e.oplog
	if t := e.txn.in; t != nil && t.created[ns] != nil {
		e.logChange(tx, op, ns, t.created[ns].UUID.Data, o, id) // not in the catalog yet (txn.go)
		return
	}
	if st := e.cat.Working(); st != l.uuidState || ns != l.uuidNS {
		coll := st.Collection(ns.DB, ns.Coll)
		if coll == nil {
			return
		}
		l.uuidState, l.uuidNS, l.uuid = st, ns, coll.UUID.Data
	}
	e.logChange(tx, op, ns, l.uuid, o, id)
}

// updateEntry is an update's o: the $v: 2 diff that turns cur into next,
// or next itself for a replacement or a change no diff can say. The diff
// is written into dst's bytes (the engine's obuf: logStored copies o into
// the entry, so it is scratch); buf is dst as grown, to keep.
func updateEntry(dst []byte, cur, next bsoncore.Document, replacement bool) (o bsoncore.Document, buf []byte) {
	if replacement {
		return next, dst
	}
	start, b := bsoncore.ReserveLength(dst[:0])
	b = bsoncore.AppendInt32Element(b, "$v", 2)
	b = append(b, byte(bsoncore.TypeEmbeddedDocument), 'd', 'i', 'f', 'f', 0)
	b, ok := docdiff.AppendDiff(b, cur, next)
	if !ok {
		return next, b
	}
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b, b
}

// logChange writes one change's entry inside tx ("Change and entry commit
// together"): op is 'i', 'u' or 'd'; o is the document (the new one for an
// update, {_id} for a delete), o2 is {_id} for an update.
//
// Inside a transaction's statement (txn.go) the change is not logged
// here: its fields (appendChange) join the transaction's applyOps entry,
// written at commit.
func (e *Engine) logChange(tx *storage.Txn, op byte, ns Namespace, collUUID []byte, o bsoncore.Document, id bsoncore.Value) {
	if t := e.txn.in; t != nil {
		t.addChange(tx, op, ns, collUUID, o, id)
		return
	}
	ts := tx.Tick()
	l := &e.oplog
	l.lastTS = ts
	b := l.buf[:0]
	var start int32
	start, b = bsoncore.ReserveLength(b)
	if s := l.sess; s != nil {
		b = bsoncore.AppendDocumentElement(b, "lsid", s.LSID)
		b = bsoncore.AppendInt64Element(b, "txnNumber", s.TxnNumber)
	}
	b = appendChange(b, op, ns, collUUID, o, id)
	if l.sess != nil {
		b = bsoncore.AppendInt32Element(b, "stmtId", l.stmt)
	}
	b = appendEntryTail(b, ts, e.oplogTerm(), e.now().UnixMilli())
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	l.buf = b
	var kb [9]byte
	tx.Append(oplogKey(kb[:0], ts), b)
	e.wake.mark(l.collID) // tailable cursors on the oplog
	// The size is approximate: the entry of a write rolled back later in
	// its request still counts (until the next open sums the entries), so
	// a trim may remove a little early; an undo hook per entry would cost
	// an allocation on every write.
	l.pending += int64(len(b))
}

// AppendOplogEntry appends the entry logChange writes for one change
// outside a session — op, ns, ui, o and o2 (appendChange), then ts, t, v
// and wall (appendEntryTail) — with wallMillis the wall clock in
// milliseconds. The bench's pebble-oplog floor writes its entries with it,
// so that it writes the bytes Cairn writes.
func AppendOplogEntry(b []byte, op byte, ns Namespace, collUUID []byte, o bsoncore.Document, id bsoncore.Value, ts hlc.Timestamp, term, wallMillis int64) []byte {
	var start int32
	start, b = bsoncore.ReserveLength(b)
	b = appendChange(b, op, ns, collUUID, o, id)
	b = appendEntryTail(b, ts, term, wallMillis)
	b, _ = bsoncore.AppendDocumentEnd(b, start)
	return b
}

// appendEntryTail appends an entry's last fields: ts, t, v and wall.
func appendEntryTail(b []byte, ts hlc.Timestamp, term, wallMillis int64) []byte {
	b = bsoncore.AppendTimestampElement(b, "ts", ts.T(), ts.I())
	b = bsoncore.AppendInt64Element(b, "t", term)
	b = bsoncore.AppendInt64Element(b, "v", 2)
	return bsoncore.AppendDateTimeElement(b, "wall", wallMillis)
}

// appendChange appends what an entry says of one change — op, ns, ui, o
// and o2 — for a write's own entry and for each change of a transaction's
// applyOps entry alike.
func appendChange(b []byte, op byte, ns Namespace, collUUID []byte, o bsoncore.Document, id bsoncore.Value) []byte {
	b = bsoncore.AppendStringElement(b, "op", string(op))
	b = appendNS(b, ns)
	if collUUID != nil {
		b = bsoncore.AppendBinaryElement(b, "ui", 4, collUUID)
	}
	if op == 'd' {
		var d int32
		d, b = bsoncore.AppendDocumentElementStart(b, "o")
		b = bsoncore.AppendValueElement(b, "_id", id)
		b, _ = bsoncore.AppendDocumentEnd(b, d)
	} else {
		b = bsoncore.AppendDocumentElement(b, "o", o)
	}
	if op == 'u' {
		var d int32
		d, b = bsoncore.AppendDocumentElementStart(b, "o2")
		b = bsoncore.AppendValueElement(b, "_id", id)
		b, _ = bsoncore.AppendDocumentEnd(b, d)
	}
	return b
}

func appendNS(b []byte, ns Namespace) []byte {
	if ns.DB == "" {
		return bsoncore.AppendStringElement(b, "ns", "")
	}
	b = append(b, byte(bsoncore.TypeString), 'n', 's', 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ns.DB)+len(ns.Coll)+2))
	b = append(b, ns.DB...)
	b = append(b, '.')
	b = append(b, ns.Coll...)
	return append(b, 0)
}

// oplogKey appends the key of the entry with cluster time ts.
func oplogKey(dst []byte, ts hlc.Timestamp) []byte {
	return ts.AppendBinary(append(dst, storage.SpaceOplog))
}

// oplogCommitting moves the group's entry bytes into the committed size
// (the Committing hook; a failed group's are dropped by oplogFailed).
func (e *Engine) oplogCommitting() {
	if e.oplog.pending != 0 {
		e.oplog.size.Add(e.oplog.pending)
		e.oplog.pending = 0
	}
}

func (e *Engine) oplogFailed() { e.oplog.pending = 0 }

// maybeTrimOplog queues a trim once the entries exceed the cap by a
// twentieth (so trims are batched), unless one is queued already.
func (e *Engine) maybeTrimOplog() {
	max := e.oplog.max.Load()
	if max <= 0 || e.oplog.size.Load() <= max+max/20 || !e.oplog.trimming.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.oplog.trimming.Store(false)
		if err := e.trimOplog(); err != nil {
			e.log.Warn("oplog trim failed", "err", err)
		}
	}()
}

// trimOplog removes the oldest entries until the rest fit the cap, with
// one range deletion in a request of its own.
func (e *Engine) trimOplog() error {
	return e.db.Write(func(tx *storage.Txn) error {
		excess := e.oplog.size.Load() + e.oplog.pending - e.oplog.max.Load()
		if excess <= 0 {
			return nil
		}
		prefix := []byte{storage.SpaceOplog}
		it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		var removed int64
		var cut, lastKey []byte
		for ok := it.First(); ok; ok = it.Next() {
			if removed >= excess {
				cut = append(cut, it.Key()...)
				break
			}
			lastKey = append(lastKey[:0], it.Key()...)
			v, err := it.Value()
			if err != nil {
				_ = it.Close()
				return err
			}
			removed += int64(len(v))
		}
		if err := it.Close(); err != nil {
			return err
		}
		if cut == nil {
			return nil // never remove the newest entry
		}
		tx.DeleteRange(prefix, cut)
		if ts, ok := hlc.FromBinary(lastKey[1:]); ok {
			// Raised before the trim commits: a stream that reads the gap
			// meanwhile fails a little early rather than late.
			for cur := e.oplog.trimmed.Load(); uint64(ts) > cur && !e.oplog.trimmed.CompareAndSwap(cur, uint64(ts)); cur = e.oplog.trimmed.Load() {
			}
		}
		e.oplog.pending -= removed
		tx.OnUndo(func() { e.oplog.pending += removed })
		return nil
	})
}

// LogNoop commits an oplog entry that changes nothing (op "n", o: {msg}),
// as MongoDB's primary writes one to move its last committed time past a
// cluster time it was asked to wait for (afterClusterTime).
func (e *Engine) LogNoop(msg string) error {
	o := bsoncore.NewDocumentBuilder().AppendString("msg", msg).Build()
	return e.db.Write(func(tx *storage.Txn) error {
		e.logChange(tx, 'n', Namespace{}, nil, o, bsoncore.Value{})
		return nil
	})
}

// OplogStart is where a forward read of local.oplog.rs with filter may
// start: the Natural position to read after, from a top-level (or
// top-level $and) condition on ts — {ts: {$gte: T}}, {ts: {$gt: T}} or
// {ts: T} — so such a read seeks to T instead of scanning the older
// entries (the filter is still applied to what is read). 0 reads all.
func OplogStart(filter bsoncore.Document) uint64 {
	var after uint64
	raise := func(v uint64) {
		if v > after {
			after = v
		}
	}
	elems, _ := filter.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "ts":
			v := el.Value()
			if t, i, ok := v.TimestampOK(); ok {
				raise(uint64(hlc.New(t, i)) - 1)
				continue
			}
			ops, ok := v.DocumentOK()
			if !ok {
				continue
			}
			if t, i, ok := ops.Lookup("$gte").TimestampOK(); ok && hlc.New(t, i) > 0 {
				raise(uint64(hlc.New(t, i)) - 1)
			}
			if t, i, ok := ops.Lookup("$gt").TimestampOK(); ok {
				raise(uint64(hlc.New(t, i)))
			}
			if t, i, ok := ops.Lookup("$eq").TimestampOK(); ok && hlc.New(t, i) > 0 {
				raise(uint64(hlc.New(t, i)) - 1)
			}
		case "$and":
			arr, ok := el.Value().ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					raise(OplogStart(d))
				}
			}
		}
	}
	return after
}

// IsOplog reports whether the reader reads local.oplog.rs.
func (r *Reader) IsOplog() bool { return r.e.isOplog(r.coll) }

// logCommand writes a catalog change's entry (op "c", ns "<db>.$cmd", o
// the command as MongoDB logs it) in the change's request; ui names the
// collection when there is one.
func (e *Engine) logCommand(tx *storage.Txn, db string, ui []byte, o bsoncore.Document) {
	if db == OplogNS.DB {
		return
	}
	e.logChange(tx, 'c', Namespace{DB: db, Coll: "$cmd"}, ui, o, bsoncore.Value{})
}

// cmdDoc builds a logged command: name: value, then the fields of more
// (a create's options, an index's spec) but name.
func cmdDoc(name string, value bsoncore.Value, more bsoncore.Document, extra ...bsoncore.Element) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendValue(name, value)
	if elems, err := more.Elements(); err == nil {
		for _, el := range elems {
			if el.Key() != name {
				b.AppendValue(el.Key(), el.Value())
			}
		}
	}
	for _, el := range extra {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

func strVal(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// refuseOplogDDL refuses dropping or renaming the oplog or its database.
func refuseOplogDDL(nss ...Namespace) error {
	for _, ns := range nss {
		if ns == OplogNS || ns.DB == OplogNS.DB && ns.Coll == "" {
			return mongoerr.New(mongoerr.IllegalOperation, "can't drop or rename the oplog local.oplog.rs: every node keeps it")
		}
	}
	return nil
}

// ReadOplog calls fn with the entries whose ts is above after, in ts
// order, until fn returns false or the entries end; an entry's bytes are
// valid only during its call. It returns the read's horizon: every entry
// with a ts at or below it was visible to this read (storage's
// LastCommitted when the read began), so a reader that saw the end may
// take max(horizon, last ts read) as where it is. Change streams read the
// log this way, a bounded batch at a time: nothing is buffered for them.
func (e *Engine) ReadOplog(after hlc.Timestamp, fn func(ts hlc.Timestamp, entry bsoncore.Document) bool) (horizon hlc.Timestamp, err error) {
	horizon = e.db.LastCommitted()
	prefix := []byte{storage.SpaceOplog}
	it, err := e.db.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	var kb [9]byte
	for ok := it.SeekGE(oplogKey(kb[:0], after+1)); ok; ok = it.Next() {
		ts, _ := hlc.FromBinary(it.Key()[1:])
		v, err := it.Value()
		if err != nil {
			return 0, err
		}
		if !fn(ts, v) {
			break
		}
	}
	return horizon, nil
}

// OplogFirst is the ts of the oldest entry kept (0 when there is none):
// a read from before it may have lost entries to a trim.
func (e *Engine) OplogFirst() (hlc.Timestamp, error) {
	var first hlc.Timestamp
	_, err := e.ReadOplog(0, func(ts hlc.Timestamp, _ bsoncore.Document) bool {
		first = ts
		return false
	})
	return first, err
}

// OplogTrimmed is the ts of the newest entry a trim removed since the
// engine opened (0: none): a reader whose position is below it may have
// missed entries.
func (e *Engine) OplogTrimmed() hlc.Timestamp { return hlc.Timestamp(e.oplog.trimmed.Load()) }

// OplogWrites returns a channel closed once a commit group that wrote
// entries commits (or a replicated group is applied): take it before a
// read, wait on it (bounded) when the read found nothing new.
func (e *Engine) OplogWrites() <-chan struct{} { return e.wake.current(e.oplog.collID) }
