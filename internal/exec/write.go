package exec

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/update"
)

// Deletes and updates choose documents from a snapshot, then change them
// through engine.Modify, which re-reads each inside the commit pipeline;
// the filter is checked again there, so a document changed in between is
// not wrongly updated or deleted (invariant "Writes recheck", doc.go).
// Both run under the operation's context: the read that chooses, then each
// document's change, stop once it ends (maxTimeMS, killOp, a client gone);
// what was already changed stays changed, as in MongoDB.

// Delete is one parsed delete statement.
type Delete struct {
	Sel Selection
	// Limit is 1 to delete at most one document, 0 for all of them.
	Limit int64
	// Rider is written in the request that deletes (see Rider).
	Rider Rider
	// Session, when set, goes into the change's oplog entry.
	Session *engine.OplogSession
}

// Rider, when set on a statement, runs inside the commit-pipeline request
// of the statement's write with what the statement did (a delete's count in
// Matched, a removed document in Before), so what it writes — a retryable
// write's record — commits with the write or not at all (engine rider.go).
// A statement that writes nothing still runs its rider, in a request of its
// own; a statement that fails does not run it.
type Rider func(tx *storage.Txn, did UpdateResult) error

// Update is one parsed update statement (or findAndModify's update).
type Update struct {
	Sel Selection
	// Mod is the update language's update: operators, a replacement or a
	// pipeline.
	Mod *update.Update
	// Upsert inserts a document seeded from the filter when none matches.
	Upsert bool
	// Multi updates every match; otherwise the first.
	Multi bool
	// Bypass writes without checking the collection's validator
	// (bypassDocumentValidation).
	Bypass bool
	// KeepEmptyTimestamps: bypassEmptyTsReplacement, a replacement's
	// top-level Timestamp(0, 0) is stored as given.
	KeepEmptyTimestamps bool
	// Rider is written in the request of the statement's last write (see
	// Rider); for findAndModify (FindAndUpdate) its After is the stored
	// document there, for an update it is nil (the record of an update is
	// its counts and upserted _id: nothing reads its images).
	Rider Rider
	// Session, when set, goes into the changes' oplog entries.
	Session *engine.OplogSession
}

// UpdateResult is what an update did.
type UpdateResult struct {
	Matched, Modified int64
	UpsertedID        bsoncore.Value // Type 0: nothing upserted
	// Before and After are the images of the one document findAndModify
	// touched (copies; After is the upserted document after an upsert).
	Before, After bsoncore.Document
}

// chosenIDs are the _ids of the documents a write changes through
// engine.Modify, at most limit of them (0 = all): for a selection of one
// _id, that _id unread (invariant "One read per point write", doc.go), and
// otherwise matchingIDs; point says which. The one _id is appended to
// one[:0] (a caller's room for it, or nil).
func (e *Env) chosenIDs(ctx context.Context, sp Selection, limit int64, one []bsoncore.Value) (ids []bsoncore.Value, point bool, err error) {
	if id, ok := sp.pointID(); ok {
		// Modify reads the document inside the pipeline and the callback
		// matches it there: a read here first would find what that read
		// finds, one read earlier. The _id index counts the access as the
		// IDHACK plan would have.
		e.eng.RecordIndexAccess(sp.NS, catalog.IDIndexName)
		return append(one[:0], id), true, nil
	}
	ids, err = e.matchingIDs(ctx, sp, limit)
	return ids, false, err
}

// matchingIDs returns the _ids of the documents sp selects, at most limit
// of them (0 = all), read from a consistent snapshot.
func (e *Env) matchingIDs(ctx context.Context, sp Selection, limit int64) ([]bsoncore.Value, error) {
	sp.Limit = limit
	src, err := e.Open(ctx, sp, Run)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var ids []bsoncore.Value
	for {
		d, err := src.Next()
		if err != nil || d == nil {
			return ids, err
		}
		id := d.Lookup("_id")
		ids = append(ids, bsoncore.Value{Type: id.Type, Data: append([]byte(nil), id.Data...)})
	}
}

// Delete runs one delete statement and returns how many documents it
// deleted.
func (e *Env) Delete(ctx context.Context, d Delete) (int64, error) {
	ids, _, err := e.chosenIDs(ctx, d.Sel, d.Limit, nil)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, e.rideAlone(d.Rider, UpdateResult{})
	}
	opts := engine.ModifyOptions{Ordered: true, Session: d.Session, Txn: e.txn, Ctx: ctx}
	if d.Rider != nil {
		opts.Rider = func(tx *storage.Txn, mr engine.ModifyResult) error {
			if len(mr.Errors) > 0 {
				return nil
			}
			return d.Rider(tx, UpdateResult{Matched: int64(mr.Deleted)})
		}
	}
	owned := e.OwnedFilter(d.Sel.NS)
	res, err := e.eng.ModifyWith(d.Sel.NS, ids, opts, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if err := opctx.Err(ctx); err != nil {
			return engine.Action{}, err // stops here; what is deleted stays deleted
		}
		if cur == nil || !d.Sel.Filter.Match(cur) || owned != nil && !owned(cur) {
			return engine.Action{}, nil // changed since it was chosen
		}
		return engine.Action{Delete: true}, nil
	})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return int64(res.Deleted), err
}

// Update runs one update statement.
func (e *Env) Update(ctx context.Context, u Update) (UpdateResult, error) {
	return e.runUpdate(ctx, u, false)
}

// FindAndUpdate updates the first document u selects (in its sort order),
// keeping its before and after images.
func (e *Env) FindAndUpdate(ctx context.Context, u Update) (UpdateResult, error) {
	u.Multi = false
	return e.runUpdate(ctx, u, true)
}

// FindAndRemove deletes the first document sel selects (in its sort order)
// and returns it (nil when none).
func (e *Env) FindAndRemove(ctx context.Context, sel Selection, rider Rider, sess *engine.OplogSession) (bsoncore.Document, error) {
	ids, _, err := e.chosenIDs(ctx, sel, 1, nil)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, e.rideAlone(rider, UpdateResult{})
	}
	var removed bsoncore.Document
	opts := engine.ModifyOptions{Ordered: true, Session: sess, Txn: e.txn, Ctx: ctx}
	if rider != nil {
		opts.Rider = func(tx *storage.Txn, mr engine.ModifyResult) error {
			if len(mr.Errors) > 0 {
				return nil
			}
			return rider(tx, UpdateResult{Matched: int64(mr.Deleted), Before: removed})
		}
	}
	owned := e.OwnedFilter(sel.NS)
	mres, err := e.eng.ModifyWith(sel.NS, ids, opts, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if cur == nil || !sel.Filter.Match(cur) || owned != nil && !owned(cur) {
			return engine.Action{}, nil
		}
		removed = append(bsoncore.Document(nil), cur...)
		return engine.Action{Delete: true}, nil
	})
	if err == nil && len(mres.Errors) > 0 {
		err = mres.Errors[0].Err
	}
	return removed, err
}

// rideAlone writes a statement's rider when the statement wrote nothing.
func (e *Env) rideAlone(rider Rider, did UpdateResult) error {
	if rider == nil {
		return nil
	}
	return e.eng.WriteRider(func(tx *storage.Txn) error { return rider(tx, did) })
}

// runUpdate applies u to the documents it selects; keep records the
// before and after images (of the one document findAndModify touches).
func (e *Env) runUpdate(ctx context.Context, spec Update, keep bool) (UpdateResult, error) {
	ns := spec.Sel.NS
	limit := int64(1)
	if spec.Multi {
		limit = 0
	}
	// The statement's state, and the callback ModifyWith runs on each
	// document, come from a pool ("An update's state from a pool"):
	// nothing refers to them once ModifyWith returns.
	r := updateRuns.Get().(*updateRun)
	defer r.release()
	r.ctx, r.spec, r.keep = ctx, spec, keep
	ids, point, err := e.chosenIDs(ctx, spec.Sel, limit, r.ids[:0])
	r.point = point
	if err != nil {
		return UpdateResult{}, err
	}
	if len(ids) > 0 {
		opts := engine.ModifyOptions{Ordered: true, Session: spec.Session, Txn: e.txn, Ctx: ctx}
		if spec.Rider != nil {
			opts.Rider = func(tx *storage.Txn, mr engine.ModifyResult) error {
				if len(mr.Errors) > 0 {
					return nil // failed: no record, a retry runs it again
				}
				if mr.Inserted > 0 {
					// A point upsert inserted in this request ("One read per
					// point write"): its record rides here too.
					did := r.res
					did.UpsertedID = copyValue(mr.Stored.Lookup("_id"))
					if keep {
						did.After = mr.Stored
					}
					return r.spec.Rider(tx, did)
				}
				if r.res.Matched == 0 && r.spec.Upsert {
					return nil // the upsert's own insert carries it
				}
				did := r.res
				did.Modified = int64(mr.Modified)
				if keep && r.res.Matched > 0 {
					// findAndModify's record holds its post-image as
					// stored; an update's record is its counts alone
					// (its retry answers n and nModified): no read of
					// the document, no copy of it in the record.
					after, _, err := e.eng.GetInTxn(tx, nil, ns, ids[0])
					if err != nil {
						return err
					}
					did.After = after
				}
				return r.spec.Rider(tx, did)
			}
		}
		r.owned = e.OwnedFilter(ns)
		mres, err := e.eng.ModifyWith(ns, ids, opts, r.modify)
		res := r.res
		res.Modified = int64(mres.Modified)
		if err != nil {
			return res, err
		}
		if len(mres.Errors) > 0 {
			return res, mres.Errors[0].Err
		}
		if keep && mres.Stored != nil {
			res.After = mres.Stored // as stored (_id first), without reading it back
		}
		if mres.Inserted > 0 {
			res.UpsertedID = mres.Stored.Lookup("_id")
			return res, nil
		}
		r.res = res
	}
	res := r.res
	if res.Matched > 0 || !spec.Upsert {
		if len(ids) == 0 {
			return res, e.rideAlone(spec.Rider, res)
		}
		return res, nil
	}
	return e.upsert(spec, keep)
}

// updateRun is one runUpdate's state: what its ModifyWith callback
// (modify, bound once per updateRun) reads and counts, and the buffer an
// update writes its new documents into ("New documents in a reused
// buffer"). Pooled (updateRuns): a statement's state and callback are not
// allocated per statement ("An update's state from a pool", doc.go).
type updateRun struct {
	ctx         context.Context
	spec        Update
	keep, point bool
	owned       func(bsoncore.Document) bool
	res         UpdateResult
	ids         [1]bsoncore.Value // a point update's one _id
	newDoc      []byte
	modify      func(i int, cur bsoncore.Document) (engine.Action, error)
}

var updateRuns = sync.Pool{New: func() any {
	r := new(updateRun)
	r.modify = r.apply
	return r
}}

// release returns r to the pool, keeping its callback and its buffer (at
// most maxNewDocBuf, newDocRoom) and nothing of the statement.
func (r *updateRun) release() {
	*r = updateRun{newDoc: r.newDoc[:0], modify: r.modify}
	if invariants.Enabled {
		clear(r.newDoc[:cap(r.newDoc)]) // a use after release reads zeros
	}
	updateRuns.Put(r)
}

// apply is the ModifyWith callback of runUpdate: cur is the document as
// the pipeline read it (nil when it is not there).
func (r *updateRun) apply(_ int, cur bsoncore.Document) (engine.Action, error) {
	spec := &r.spec
	if err := opctx.Err(r.ctx); err != nil {
		return engine.Action{}, err // stops here; what is updated stays updated
	}
	if cur == nil {
		if r.point && spec.Upsert {
			// An upsert of one _id that found nothing inserts in the
			// same pipeline request ("One read per point write").
			return upsertAction(*spec)
		}
		return engine.Action{}, nil
	}
	ok, pos := spec.Sel.Filter.MatchDetails(cur)
	if !ok || r.owned != nil && !r.owned(cur) {
		return engine.Action{}, nil // changed since it was chosen, or an orphan
	}
	r.res.Matched++
	// The new documents are written into r's buffer, reused across
	// requests: the engine copies what it keeps of a Replace before the
	// next document is read, and once ModifyWith returns nothing refers to
	// it — unless keep, whose res.After is the new document.
	var room []byte
	if !r.keep {
		room = newDocRoom(&r.newDoc, len(cur))
	}
	next, err := apply(room, spec.Mod, cur, pos, spec.KeepEmptyTimestamps)
	if err != nil {
		return engine.Action{}, err
	}
	if r.keep {
		r.res.Before = append(bsoncore.Document(nil), cur...)
		r.res.After = r.res.Before // a no-op leaves it as it was
		if next != nil {
			r.res.After = next
		}
	}
	if next == nil {
		return engine.Action{}, nil
	}
	return engine.Action{Replace: next, BypassValidation: spec.Bypass, KeepStored: r.keep, Replacement: spec.Mod.IsReplacement()}, nil
}

// upsertAction is the Insert of an upsert of one _id that found nothing,
// its stored image kept for the reply (the upserted _id, and findAndModify's
// new document). A document without _id, which a filter on _id should not
// give, is left to upsert after the pipeline (an Insert must carry one).
func upsertAction(spec Update) (engine.Action, error) {
	doc, err := spec.Mod.Upsert(spec.Sel.rawFilter(), update.ApplyContext{ArrayPos: -1, IsUpsertInsert: true, Now: time.Now(), KeepEmptyTimestamps: spec.KeepEmptyTimestamps})
	if err != nil {
		return engine.Action{}, err
	}
	if doc.Lookup("_id").Type == 0 {
		return engine.Action{}, nil
	}
	return engine.Action{Insert: doc, BypassValidation: spec.Bypass, KeepStored: true}, nil
}

// upsert inserts the document an update with upsert: true creates when
// nothing matched, seeded from the filter's equality fields.
func (e *Env) upsert(spec Update, keep bool) (UpdateResult, error) {
	ns := spec.Sel.NS
	doc, err := spec.Mod.Upsert(spec.Sel.rawFilter(), update.ApplyContext{ArrayPos: -1, IsUpsertInsert: true, Now: time.Now(), KeepEmptyTimestamps: spec.KeepEmptyTimestamps})
	if err != nil {
		return UpdateResult{}, err
	}
	opts := engine.InsertOptions{Ordered: true, BypassValidation: spec.Bypass, Session: spec.Session, Txn: e.txn}
	if spec.Rider != nil {
		opts.Rider = func(tx *storage.Txn, ride engine.InsertRide) error {
			if len(ride.Stored) == 0 {
				return nil // failed
			}
			id := doc.Lookup("_id")
			if len(ride.Generated) > 0 {
				id = ride.Generated[0].ID
			}
			did := UpdateResult{UpsertedID: id}
			if keep { // findAndModify's post-image; an update's record has the _id alone
				after, _, err := e.eng.GetInTxn(tx, nil, ns, id)
				if err != nil {
					return err
				}
				did.After = after
			}
			return spec.Rider(tx, did)
		}
	}
	ires, err := e.eng.InsertWith(ns, []bsoncore.Document{doc}, opts)
	if err != nil {
		return UpdateResult{}, err
	}
	if len(ires.WriteErrors) > 0 {
		return UpdateResult{}, ires.WriteErrors[0].Err
	}
	id := doc.Lookup("_id")
	if len(ires.GeneratedIDs) > 0 {
		id = ires.GeneratedIDs[0].ID
	}
	res := UpdateResult{UpsertedID: id}
	if keep {
		res.After, _, _ = e.get(ns, id)
	}
	return res, nil
}

// get reads one document by _id, inside the Env's transaction if any.
func (e *Env) get(ns engine.Namespace, id bsoncore.Value) ([]byte, bool, error) {
	if e.txn != nil {
		return e.eng.GetIn(e.txn, nil, ns, id)
	}
	return e.eng.Get(nil, ns, id)
}

// apply returns the new document for cur, or nil when the update changes
// nothing (a no-op writes nothing and does not count as modified); it may
// write it over dst's memory (update.ApplyTo). pos is the array position
// the filter's match bound (for the positional $), or -1; keepEmptyTs is
// the write's bypassEmptyTsReplacement.
func apply(dst []byte, u *update.Update, cur bsoncore.Document, pos int, keepEmptyTs bool) (bsoncore.Document, error) {
	next, modified, err := u.ApplyTo(dst, cur, update.ApplyContext{ArrayPos: pos, Now: time.Now(), KeepEmptyTimestamps: keepEmptyTs})
	if err != nil || !modified {
		return nil, err
	}
	return next, nil
}

// maxNewDocBuf bounds the new-document buffer an updateRun keeps, so one
// large document does not stay on the heap.
const maxNewDocBuf = 64 << 10

// newDocRoom is b's buffer with room for a new document made from one of n
// bytes (an eighth more), allocated when it has less; nil without b or
// past maxNewDocBuf. The buffer only ever holds memory made here: an
// update's result may alias other memory (a replacement's document), so
// results are never adopted as the buffer.
func newDocRoom(b *[]byte, n int) []byte {
	want := n + n/8 + 64
	if b == nil || want > maxNewDocBuf {
		return nil
	}
	if cap(*b) < want {
		*b = make([]byte, 0, want)
	}
	return *b
}

// copyValue is v with its own bytes.
func copyValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}
