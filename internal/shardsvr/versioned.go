package shardsvr

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Chunk migrations of versioned collections (issue #23) move each
// document's whole history, not the document: every version keeps its
// number, validFrom and op, so after the commit the recipient answers
// $versions, as-of reads and compare-and-swap on the version field as the
// donor did. The engine's part is engine/history_migrate.go, reached
// through the internal commands _historyRead (donor), _historyInstall
// (recipient) and _historyPurge (range deletion).
//
// Which histories a range holds: history is keyed by _id, the range by the
// shard key. A document's history belongs, whole, to the chunk of its
// newest live version's shard key — the document's own for a live one,
// the last version before the tombstone for a deleted one (with only the
// tombstone retained, the _id decides when the shard key is {_id}, and
// otherwise the history stays where it is). Older versions whose shard key
// was in another chunk move with it: one document's history is never
// split, so "the version of X at T" stays one seek on one shard.
//
//   - Clone: the donor sends, in place of documents, the full history of
//     each document of the range (read through the shard key's index), then
//     of each deleted document of the range (DeletedHistories), each marked
//     first. The recipient installs them: the document is the newest
//     version installed. A first history that finds anything of its _id on
//     the recipient — another chunk's document or history with the same
//     _id — fails the migration with MigrationConflict, as a duplicate _id
//     does.
//   - Catch-up: for each _id the oplog shows changed, the donor sends the
//     versions from the newest validFrom it already sent on (all of them,
//     first, for a document new to the range), or, for a document that
//     left the range, a purge of the recipient's copy. Installing is
//     idempotent, so a version sent by both the clone and the catch-up
//     counts once; "Nothing lost, nothing twice" holds for versions as for
//     documents.
//   - Range deletion (the donor's after the commit, a recipient's after an
//     abort, a recipient's leftovers before a start) purges the range's
//     documents with their histories, deleted documents' included, leaving
//     no tombstone (a delete would add versions).
//
// The donor remembers, per _id sent, the newest validFrom sent (memory in
// proportion to the chunk's documents, for the migration's length). The
// recipient creates the collection with the donor's versioning options
// before anything is installed; a recipient whose collection exists
// unversioned refuses to receive (IllegalOperation).
//
// Not yet: an as-of read through a router is targeted by the shard key of
// its filter, so one naming a shard key value a document had only in an
// older version goes to that value's chunk, not to the shard holding the
// document's history (a filter on _id alone scatters and finds it). A
// deleted document whose retention kept only the tombstone, in a
// collection sharded on another key than _id, has no shard key to judge
// it by: its history neither moves nor is range-deleted. A single history
// travels in one batch, so one larger than a reply (16 MB) cannot move.

// versioningOptions returns the create options (versioning and
// versionField) of a versioned collection as listCollections describes it;
// nil for a collection that is not versioned (or not there).
func versioningOptions(listReply bsoncore.Document) bson.D {
	vals, _ := batchOf(listReply)
	for _, v := range vals {
		d, _ := v.DocumentOK()
		ver, ok := d.Lookup("options", "versioning").DocumentOK()
		if on, _ := ver.Lookup("enabled").BooleanOK(); !ok || !on {
			continue
		}
		out := bson.D{{Key: "versioning", Value: bson.Raw(ver)}}
		if f, ok := d.Lookup("options", "versionField").StringValueOK(); ok {
			out = append(out, bson.E{Key: "versionField", Value: f})
		}
		return out
	}
	return nil
}

func listCollection(coll string) bson.D {
	return bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: coll}}}}
}

// isVersioned reports whether ns is a versioned collection here.
func (n *Node) isVersioned(ctx context.Context, ns string) (bool, error) {
	db, coll := splitNS(ns)
	reply, err := n.local(ctx, db, listCollection(coll))
	if err != nil {
		return false, err
	}
	return versioningOptions(reply) != nil, nil
}

// createVersioned makes the received collection versioned as the donor's
// is, before anything is installed in it; it reports whether it is.
func (n *Node) createVersioned(ctx context.Context, rc *receipt) (bool, error) {
	db, coll := splitNS(rc.ns)
	reply, err := n.peers.RunPrimary(ctx, rc.from, command(db, listCollection(coll)))
	if err != nil {
		return false, err
	}
	opts := versioningOptions(reply)
	if opts == nil {
		return false, nil
	}
	if _, err := n.local(ctx, db, append(bson.D{{Key: "create", Value: coll}}, opts...)); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
		return false, err
	}
	if on, err := n.isVersioned(ctx, rc.ns); err != nil || !on {
		if err == nil {
			err = mongoerr.New(mongoerr.IllegalOperation, "cannot receive a chunk of the versioned collection %s: this shard holds it unversioned (collMod it with versioning: {enabled: true} first)", rc.ns)
		}
		return false, err
	}
	return true, nil
}

// idString is an _id as a map key (its type and bytes, as the donor reads
// it from its documents and oplog).
func idString(v bsoncore.Value) string { return string(v.Data) + string(rune(v.Type)) }

func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}

// history is one document's history as _historyRead answers it.
type history struct {
	doc     bsoncore.Document
	id      bsoncore.Value
	newest  uint64            // the newest version's validFrom (seconds<<32 | increment)
	last    bsoncore.Document // the newest live version's document (nil: none)
	deleted bool              // the newest version is a tombstone
}

func parseHistory(d bsoncore.Document) history {
	h := history{doc: d, id: d.Lookup("_id")}
	arr, _ := d.Lookup("versions").ArrayOK()
	vals, _ := arr.Values()
	for i, v := range vals {
		vd, _ := v.DocumentOK()
		if i == 0 {
			t, inc, _ := vd.Lookup("validFrom").TimestampOK()
			h.newest = uint64(t)<<32 | uint64(inc)
			op, _ := vd.Lookup("op").StringValueOK()
			h.deleted = op == "d"
		}
		if doc, ok := vd.Lookup("doc").DocumentOK(); ok {
			h.last = doc
			break
		}
	}
	return h
}

// withFirst returns a history document with its first field set to first.
func withFirst(d bsoncore.Document, first bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := d.Elements()
	for _, el := range els {
		if el.Key() != "first" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.AppendBoolean("first", first).Build()
}

// readHistories runs _historyRead here: the versions of ids from from[i]
// on (from nil: all).
func (n *Node) readHistories(ctx context.Context, ns string, ids []bsoncore.Value, from []uint64) ([]history, bsoncore.Value, error) {
	db, coll := splitNS(ns)
	ia := make(bson.A, len(ids))
	for i, id := range ids {
		ia[i] = rawValue(id)
	}
	cmd := bson.D{{Key: "_historyRead", Value: coll}, {Key: "ids", Value: ia}}
	if from != nil {
		fa := make(bson.A, len(from))
		for i, f := range from {
			fa[i] = bson.Timestamp{T: uint32(f >> 32), I: uint32(f)}
		}
		cmd = append(cmd, bson.E{Key: "from", Value: fa})
	}
	reply, err := n.local(ctx, db, cmd)
	if err != nil {
		return nil, bsoncore.Value{}, err
	}
	arr, _ := reply.Lookup("histories").ArrayOK()
	vals, _ := arr.Values()
	out := make([]history, 0, len(vals))
	for _, v := range vals {
		d, _ := v.DocumentOK()
		out = append(out, parseHistory(d))
	}
	return out, reply.Lookup("horizon"), nil
}

// holdsHistory reports whether r holds a history whose newest live
// version is last (nil: only a tombstone is retained; then only a shard
// key of _id alone decides).
func (r keyRange) holdsHistory(id bsoncore.Value, last bsoncore.Document) bool {
	if last == nil {
		last = bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	}
	return r.holds(last)
}

// deletedInRange lists the _ids of the deleted documents of ns whose
// histories r holds (engine.DeletedHistories, paged).
func (n *Node) deletedInRange(ctx context.Context, ns string, r keyRange) ([]bsoncore.Value, error) {
	db, coll := splitNS(ns)
	var out []bsoncore.Value
	var after bsoncore.Value
	for {
		cmd := bson.D{{Key: "_historyRead", Value: coll}, {Key: "deleted", Value: true}}
		if after.Type != 0 {
			cmd = append(cmd, bson.E{Key: "startAfter", Value: rawValue(after)})
		}
		reply, err := n.local(ctx, db, cmd)
		if err != nil {
			return nil, err
		}
		arr, _ := reply.Lookup("deleted").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			d, _ := v.DocumentOK()
			id := d.Lookup("_id")
			last, _ := d.Lookup("last").DocumentOK()
			if r.holdsHistory(id, last) {
				out = append(out, id)
			}
			after = id
		}
		if more, _ := reply.Lookup("more").BooleanOK(); !more || len(vals) == 0 {
			return out, nil
		}
	}
}

// historyBatchIDs is how many documents' histories one _historyRead asks for.
const historyBatchIDs = 200

// cloneHistories is _migrateClone of a versioned collection: the full
// histories of the range's documents (the clone's cursor), then of its
// deleted documents, each first, about cloneBatchBytes at a time.
func (n *Node) cloneHistories(ctx context.Context, d *donation) (bsoncore.Document, error) {
	arr := bsoncore.NewArrayBuilder()
	size, count := 0, 0
	var horizon bsoncore.Value
	for size < cloneBatchBytes {
		if len(d.pending) == 0 && d.cursor >= 0 {
			vals, err := n.cloneRead(ctx, d, bson.D{{Key: "_id", Value: 1}})
			if err != nil {
				return nil, err
			}
			for _, v := range vals {
				doc, _ := v.DocumentOK()
				d.pending = append(d.pending, copyVal(doc.Lookup("_id")))
			}
			continue
		}
		if len(d.pending) == 0 && !d.listed {
			ids, err := n.deletedInRange(ctx, d.ns, d.r)
			if err != nil {
				return nil, err
			}
			d.pending, d.listed = ids, true
			continue
		}
		if len(d.pending) == 0 {
			break
		}
		var ids []bsoncore.Value
		for len(d.pending) > 0 && len(ids) < historyBatchIDs {
			id := d.pending[0]
			d.pending = d.pending[1:]
			if _, dup := d.sent[idString(id)]; !dup {
				ids = append(ids, id)
			}
		}
		hs, hz, err := n.readHistories(ctx, d.ns, ids, nil)
		if err != nil {
			return nil, err
		}
		horizon = hz
		for _, h := range hs {
			// The projection read the shard key's index, not the
			// document: one that left the range since goes back with
			// the catch-up's purge, so sending it is harmless.
			arr.AppendDocument(withFirst(h.doc, true))
			d.sent[idString(h.id)] = h.newest
			size += len(h.doc)
			count++
		}
	}
	d.cloned += int64(size)
	d.clonedDocs += int64(count)
	b := bsoncore.NewDocumentBuilder().AppendArray("objects", bsoncore.NewArrayBuilder().Build()).AppendArray("histories", arr.Build())
	if horizon.Type != 0 {
		b.AppendValue("horizon", horizon)
	}
	return b.Build(), nil
}

func copyVal(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// modHistories is _transferMods of a versioned collection for the _ids the
// oplog shows changed (in order of first appearance; firstTS[i] is the ts
// of the entry where ids[i] first appears): the versions each sent _id
// gained, full histories of _ids new to the range, purges of _ids that left
// it. It stops after about cloneBatchBytes, and then moves d.lastTS back
// to just before the first entry of the first _id left out, so that the
// next call reads it again.
func (n *Node) modHistories(ctx context.Context, d *donation, ids []bsoncore.Value, firstTS []bson.Timestamp, prevTS bson.Timestamp) (hist, purge bsoncore.Array, err error) {
	harr, parr := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	size := 0
	for start := 0; start < len(ids); start += historyBatchIDs {
		if size >= cloneBatchBytes {
			d.lastTS = prevTS
			if start > 0 {
				d.lastTS = justBefore(firstTS[start])
			}
			break
		}
		end := min(start+historyBatchIDs, len(ids))
		batch := ids[start:end]
		// Full histories: a deleted document's last live version says
		// whether the range holds it; a sent one needs only what it
		// gained, an unsent one all of it.
		from := make([]uint64, len(batch))
		for i, id := range batch {
			from[i] = d.sent[idString(id)]
		}
		hs, _, err := n.readHistories(ctx, d.ns, batch, from)
		if err != nil {
			return nil, nil, err
		}
		got := map[string]history{}
		for _, h := range hs {
			got[idString(h.id)] = h
		}
		for _, id := range batch {
			k := idString(id)
			h, ok := got[k]
			_, sent := d.sent[k]
			if ok && h.last == nil && sent {
				// Only versions without a document since the last send
				// (a delete): the newest live version, older, says
				// whether the range holds the history.
				full, _, err := n.readHistories(ctx, d.ns, []bsoncore.Value{id}, nil)
				if err != nil {
					return nil, nil, err
				}
				if len(full) == 1 {
					h.last = full[0].last
				}
			}
			switch {
			case ok && d.r.holdsHistory(id, h.last):
				harr.AppendDocument(withFirst(h.doc, !sent))
				d.sent[k] = h.newest
				size += len(h.doc)
			case sent:
				// Left the range (or its history is gone): the
				// recipient's copy, which this migration sent, goes.
				parr.AppendValue(id)
				delete(d.sent, k)
			}
		}
	}
	return harr.Build(), parr.Build(), nil
}

// justBefore is the timestamp just before ts (a "$gt" bound that includes ts).
func justBefore(ts bson.Timestamp) bson.Timestamp {
	if ts.I > 0 {
		return bson.Timestamp{T: ts.T, I: ts.I - 1}
	}
	return bson.Timestamp{T: ts.T - 1, I: ^uint32(0)}
}

// installHistories applies histories and purges on the recipient.
func (n *Node) installHistories(ctx context.Context, rc *receipt, hist bsoncore.Array, horizon bsoncore.Value, purge bsoncore.Array) (int, int, error) {
	db, coll := splitNS(rc.ns)
	hv, _ := hist.Values()
	pv, _ := purge.Values()
	size := 0
	if len(hv) > 0 {
		docs := make(bson.A, len(hv))
		for i, v := range hv {
			d, _ := v.DocumentOK()
			docs[i] = bson.Raw(d)
			size += len(d)
		}
		cmd := bson.D{{Key: "_historyInstall", Value: coll}, {Key: "histories", Value: docs}}
		if horizon.Type == bsoncore.TypeTimestamp {
			cmd = append(cmd, bson.E{Key: "horizon", Value: rawValue(horizon)})
		}
		if _, err := n.local(ctx, db, cmd); err != nil {
			return 0, 0, n.conflict(rc, err)
		}
	}
	if len(pv) > 0 {
		ids := make(bson.A, len(pv))
		for i, v := range pv {
			ids[i] = rawValue(v)
		}
		if _, err := n.purge(ctx, rc.ns, ids); err != nil {
			return 0, 0, err
		}
	}
	return len(hv) + len(pv), size, nil
}

// purge runs _historyPurge here: the documents ids go with their whole
// histories. It returns how many had anything to remove.
func (n *Node) purge(ctx context.Context, ns string, ids bson.A) (int, error) {
	db, coll := splitNS(ns)
	reply, err := n.local(ctx, db, bson.D{{Key: "_historyPurge", Value: coll}, {Key: "ids", Value: ids}})
	if err != nil {
		return 0, err
	}
	got, _ := reply.Lookup("n").AsInt64OK()
	return int(got), nil
}
