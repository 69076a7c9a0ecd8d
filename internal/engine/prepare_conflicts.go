package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// Prepare conflicts per document (see txn_prepare.go). Everything here
// costs one atomic load per step while no transaction is prepared
// (storage.DB.AnyPrepared).

// preparedWriteWait bounds a plain write's wait on a prepared
// transaction; after it the write fails with WriteConflict.
const preparedWriteWait = 60 * time.Second

// writeRerun is write for a request that may run again from the start
// (each run resets what it builds: InsertWith's): alone, while it meets a
// prepare conflict (it writes a key a prepared transaction holds: a unique
// index entry the transaction inserted, say) it waits for that key to be
// released, at most preparedWriteWait, and runs again.
func (e *Engine) writeRerun(t *Txn, ns Namespace, fn func(tx *storage.Txn) error) error {
	if t != nil {
		return e.write(t, ns, fn)
	}
	var ctx context.Context
	for {
		err := e.db.Write(fn)
		var pc *storage.PrepareConflictError
		if !errors.As(err, &pc) {
			return conflictError(err)
		}
		if ctx == nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.Background(), preparedWriteWait)
			defer cancel()
		}
		if e.waitPreparedIn(ctx, pc.Key, keySuccessor(pc.Key)) != nil {
			return conflictError(err)
		}
	}
}

// waitPreparedDocs is a plain write's wait, before its request, for the
// documents of ns it names (by _id, or by encoded _id in idKeys) that a
// prepared transaction holds. It ends with ctx (nil: none), whose cause
// (opctx.Err: maxTimeMS, killOp) fails the write; without a deadline it
// waits at most preparedWriteWait in all, then goes on (to meet
// WriteConflict if a document is still held). It costs one atomic load
// while nothing is prepared.
func (e *Engine) waitPreparedDocs(ctx context.Context, ns Namespace, ids []bsoncore.Value, idKeys [][]byte) error {
	if !e.db.AnyPrepared() {
		return nil
	}
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	wctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, preparedWriteWait)
		defer cancel()
	}
	var key []byte
	wait := func(idKey []byte) bool {
		key = storage.DocKey(key[:0], coll.ID, idKey)
		return e.waitPreparedIn(wctx, key, keySuccessor(key)) == nil
	}
	for _, id := range ids {
		if !wait(appendIDKey(nil, id)) {
			return opctx.Err(ctx) // nil when only preparedWriteWait passed
		}
	}
	for _, k := range idKeys {
		if !wait(k) {
			return opctx.Err(ctx)
		}
	}
	return nil
}

// WaitPreparedDoc waits while a prepared transaction holds the document of
// ns whose _id is id, until none does or ctx ends (opctx.Err). A point
// read outside a transaction (planner.Open's IDHACK) calls it first.
func (e *Engine) WaitPreparedDoc(ctx context.Context, ns Namespace, id bsoncore.Value) error {
	if !e.db.AnyPrepared() {
		return nil
	}
	return e.waitPreparedDoc(ctx, ns, id)
}

func (e *Engine) waitPreparedDoc(ctx context.Context, ns Namespace, id bsoncore.Value) error {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil
	}
	key := appendIDKey(storage.Prefix(nil, storage.SpaceDocument, coll.ID), id)
	return e.waitPreparedIn(ctx, key, keySuccessor(key))
}

// waitPreparedIn waits until no prepared transaction holds a key in
// [lo, hi) (nil hi: no bound), or ctx ends (opctx.Err).
func (e *Engine) waitPreparedIn(ctx context.Context, lo, hi []byte) error {
	for e.db.AnyPrepared() {
		held, ended := e.db.PreparedIn(lo, hi)
		if held == nil {
			return nil
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return opctx.Err(ctx)
		}
	}
	return nil
}

// keySuccessor is the least key after k.
func keySuccessor(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}

// PrepareConflicts makes the reader wait on prepare conflicts under ctx: a
// cursor that steps over a key a prepared transaction holds (or a gap
// where it inserted one), and a fetch of a held document, wait until the
// transaction ends, then the reader reads on from a new snapshot (as
// MongoDB's plans yield and restore on a prepare conflict). A reader in a
// transaction or as of a time must not be given it. A reader whose
// collection was dropped or whose indexes changed while it waited fails
// with QueryPlanKilled.
func (r *Reader) PrepareConflicts(ctx context.Context) { r.ctx = ctx }

// SetContext makes a reader given PrepareConflicts wait under ctx from now
// on (a plan kept by a cursor past its request); other readers ignore it.
func (r *Reader) SetContext(ctx context.Context) {
	if r.ctx != nil {
		r.ctx = ctx
	}
}

// prepareWait waits until no prepared transaction holds a key in [lo, hi),
// then, if it waited, takes a new snapshot (refresh).
func (r *Reader) prepareWait(lo, hi []byte) (waited bool, err error) {
	for r.e.db.AnyPrepared() {
		held, ended := r.e.db.PreparedIn(lo, hi)
		if held == nil {
			break
		}
		select {
		case <-ended:
			waited = true
		case <-r.ctx.Done():
			return false, opctx.Err(r.ctx)
		}
	}
	if waited {
		return true, r.refresh()
	}
	return false, nil
}

// refresh moves the reader to a new snapshot; cursors follow at their next
// step (Cursor.reopen). The snapshots left are closed with the reader.
func (r *Reader) refresh() error {
	for {
		st, g := r.e.cat.ReadBegin()
		snap := r.e.db.NewSnapshot()
		if !r.e.cat.ReadValid(g) {
			_ = snap.Close()
			continue
		}
		if r.coll != nil && !sameShape(st.Collection(r.coll.DB, r.coll.Name), r.coll) {
			_ = snap.Close()
			return mongoerr.New(mongoerr.QueryPlanKilled, "collection %s.%s or its indexes changed while the query waited for a prepared transaction", r.coll.DB, r.coll.Name)
		}
		r.old = append(r.old, r.closer)
		r.snap, r.closer = snap, snap
		r.gen++
		return nil
	}
}

// sameShape reports whether c is still the collection a plan was made
// for: the same id, the same indexes, none of them multikey since.
func sameShape(c, was *catalog.Collection) bool {
	return c != nil && c.ID == was.ID && slices.EqualFunc(c.Indexes, was.Indexes, func(x, y catalog.Index) bool {
		return x.ID == y.ID && x.Multikey == y.Multikey && x.Building == y.Building &&
			slices.Equal(x.MultikeyPaths, y.MultikeyPaths) &&
			slices.EqualFunc(x.MultikeyComponents, y.MultikeyComponents, func(a, b []int) bool { return slices.Equal(a, b) })
	})
}

// fetchWaiting is Fetch of key (a document's) while a transaction is
// prepared: it waits first while a prepared transaction holds key.
func (r *Reader) fetchWaiting(dst, key []byte) ([]byte, bool, error) {
	if _, err := r.prepareWait(key, keySuccessor(key)); err != nil {
		return dst, false, err
	}
	return r.snap.Get(dst, key)
}

// closeOld closes the snapshots refresh left.
func (r *Reader) closeOld() error {
	var err error
	for _, c := range r.old {
		err = errors.Join(err, c.Close())
	}
	r.old = nil
	return err
}

// checkedCursor is what a cursor of a reader with PrepareConflicts keeps.
type checkedCursor struct {
	r       *Reader
	gen     uint64 // the reader's snapshot the iterator reads
	lo, hi  []byte // the iterator's bounds (whole keys)
	last    []byte // the last key returned (whole), when hasLast
	hasLast bool
	seek    bool // reopened: the next step seeks past last
}

// nextChecked is Next for a cursor of a reader with PrepareConflicts: it
// steps, checks the keys between the last key and the new one (both ends
// included, so a prepared insert in the gap counts) and, on a held one,
// waits and steps again from the last key on the new snapshot.
func (c *Cursor) nextChecked() bool {
	k := c.chk
	if k.gen != k.r.gen && !c.reopen() {
		return false
	}
	for {
		ok := c.move()
		if k.r.e.db.AnyPrepared() {
			lo, hi := c.crossed(ok)
			waited, err := k.r.prepareWait(lo, hi)
			if err != nil {
				c.err = err
				return false
			}
			if waited {
				if !c.reopen() {
					return false
				}
				continue
			}
		}
		if ok {
			k.last = append(k.last[:0], c.it.Key()...)
			k.hasLast = true
		}
		return ok
	}
}

// move steps the iterator as Next does, or seeks to Skip's target, or,
// after reopen, seeks past the last key returned. After a Skip the keys
// checked for prepared writes are still all those from the last key
// returned to the new one: the skipped ones too, which only widens the
// check.
func (c *Cursor) move() bool {
	k := c.chk
	switch {
	case c.hasTarget: // Skip's target lies past the last key returned
		k.seek = false
		return c.seekTarget()
	case k.seek:
		k.seek = false
		if c.reverse {
			return c.it.SeekLT(k.last)
		}
		return c.it.SeekGE(keySuccessor(k.last))
	case c.started:
		return c.step()
	case c.reverse:
		c.started = true
		return c.it.Last()
	default:
		c.started = true
		return c.it.First()
	}
}

// crossed is the key range [lo, hi) the last move passed over: from after
// the last key returned to the new key included, or to the bound at the
// end.
func (c *Cursor) crossed(ok bool) (lo, hi []byte) {
	k := c.chk
	if !c.reverse {
		lo, hi = k.lo, k.hi
		if k.hasLast {
			lo = keySuccessor(k.last)
		}
		if ok {
			hi = keySuccessor(c.it.Key())
		}
		return lo, hi
	}
	lo, hi = k.lo, k.hi
	if ok {
		lo = c.it.Key()
	}
	if k.hasLast {
		hi = k.last
	}
	return lo, hi
}

// reopen moves the cursor to its reader's current snapshot, to go on after
// the last key it returned.
func (c *Cursor) reopen() bool {
	k := c.chk
	it, err := k.r.snap.NewIter(k.lo, k.hi)
	if err != nil {
		c.err = err
		return false
	}
	if err := c.it.Close(); err != nil {
		_ = it.Close()
		c.err = err
		return false
	}
	c.it, k.gen = it, k.r.gen
	k.seek = k.hasLast
	c.started = k.hasLast
	return true
}
