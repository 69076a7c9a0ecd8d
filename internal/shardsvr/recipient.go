package shardsvr

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// receipt is a migration this shard receives.
type receipt struct {
	id, ns, from, fromShard string
	r                       keyRange

	mu        sync.Mutex
	state     string // clone, catchup, steady, done, fail
	err       error
	commit    bool          // the donor is in its critical section
	changed   chan struct{} // closed and replaced at every state change
	cancel    context.CancelFunc
	finished  chan struct{}
	docs      int64
	bytes     int64
	modsTaken int64
	versioned bool // the collection is versioned: histories move (versioned.go)
	// critEnd ends the recipient's critical section (holdReceived); nil
	// when none is on.
	critEnd func(ctx context.Context)
}

func (r *receipt) set(state string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == "fail" || r.state == "done" {
		return
	}
	r.state, r.err = state, err
	close(r.changed)
	r.changed = make(chan struct{})
}

// recvChunkStart is _recvChunkStart: check, clear leftovers of the range,
// record a pending range deletion (a crash leaves a trace), copy the
// donor's indexes, and start cloning in the background.
func (n *Node) recvChunkStart(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, _ := body.Index(0).Value().StringValueOK()
	id, _ := body.Lookup("sessionId").StringValueOK()
	from, _ := body.Lookup("from").StringValueOK()
	fromShard, _ := body.Lookup("fromShard").StringValueOK()
	key, okKey := body.Lookup("shardKeyPattern").DocumentOK()
	min, okMin := body.Lookup("min").DocumentOK()
	max, okMax := body.Lookup("max").DocumentOK()
	if ns == "" || id == "" || from == "" || !okKey || !okMin || !okMax {
		return nil, mongoerr.New(mongoerr.BadValue, "_recvChunkStart needs a namespace, sessionId, from, shardKeyPattern, min and max")
	}
	p, err := shard.ParsePattern(key)
	if err != nil {
		return nil, err
	}
	r, err := newRange(p, min, max)
	if err != nil {
		return nil, err
	}
	me, _ := n.shardIdentity(ctx)
	m, _, err := n.current(ctx, n.meta(ns), true)
	if err != nil {
		return nil, err
	}
	if ownsAny(m, me.ShardName, r) {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "shard %s already owns part of [%s, %s) of %s", me.ShardName, min, max, ns)
	}
	rc := &receipt{id: id, ns: ns, from: from, fromShard: fromShard, r: r, state: "clone", changed: make(chan struct{}), finished: make(chan struct{})}
	n.mu.Lock()
	for _, other := range n.receipts {
		if other.ns == ns {
			n.mu.Unlock()
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "this shard is already receiving a chunk of %s", ns)
		}
	}
	n.receipts[id] = rc
	n.mu.Unlock()
	fail := func(err error) (bsoncore.Document, error) {
		n.mu.Lock()
		delete(n.receipts, id)
		n.mu.Unlock()
		return nil, err
	}
	if err := n.clearForReceipt(ctx, rc); err != nil {
		return fail(err)
	}
	if err := n.copyIndexes(ctx, rc); err != nil {
		return fail(err)
	}
	rctx, cancel := context.WithCancel(n.ctx)
	rc.cancel = cancel
	go func() {
		defer close(rc.finished)
		if err := n.receive(rctx, rc); err != nil {
			rc.set("fail", err)
			n.opts.Log.Warn("receiving a chunk failed", "ns", ns, "from", fromShard, "err", err)
		}
	}()
	return bsoncore.NewDocumentBuilder().AppendBoolean("started", true).Build(), nil
}

// clearForReceipt removes what an earlier, abandoned migration of the
// range left, drops range deletions that overlap it (they would delete
// the new copy), and records the pending deletion of this one.
func (n *Node) clearForReceipt(ctx context.Context, rc *receipt) error {
	n.rangeMu.Lock()
	defer n.rangeMu.Unlock()
	if _, err := n.deleteInRange(ctx, rc.ns, rc.r); err != nil {
		return err
	}
	tasks, err := n.localFind(ctx, "config", "rangeDeletions", bson.D{{Key: "nss", Value: rc.ns}})
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tmin, _ := t.Lookup("range", "min").DocumentOK()
		tmax, _ := t.Lookup("range", "max").DocumentOK()
		tr, err := newRange(rc.r.p, tmin, tmax)
		if err != nil || !tr.overlaps(rc.r) {
			continue
		}
		if err := n.dropTask(ctx, t.Lookup("_id")); err != nil {
			return err
		}
	}
	task := bson.D{{Key: "_id", Value: rc.id}, {Key: "nss", Value: rc.ns}, {Key: "range", Value: bson.D{{Key: "min", Value: rawDoc(rc.r.min)}, {Key: "max", Value: rawDoc(rc.r.max)}}},
		{Key: "pending", Value: true}, {Key: "whenToClean", Value: "now"}, {Key: "donorHost", Value: rc.from}, {Key: "shardKeyPattern", Value: rawDoc(rc.r.p.Doc)}}
	_, err = n.local(ctx, "config", bson.D{{Key: "insert", Value: "rangeDeletions"}, {Key: "documents", Value: bson.A{task}}, {Key: "writeConcern", Value: majority}})
	return err
}

// copyIndexes creates the collection here with the donor's options (its
// default collation, validator, idGenerator, versioning: what
// listCollections shows; createVersioned then checks a versioned one is
// versioned here too), then the donor's indexes.
func (n *Node) copyIndexes(ctx context.Context, rc *receipt) error {
	db, coll := splitNS(rc.ns)
	if err := n.copyOptions(ctx, rc, db, coll); err != nil {
		return err
	}
	versioned, err := n.createVersioned(ctx, rc)
	if err != nil {
		return err
	}
	rc.versioned = versioned
	reply, err := n.peers.RunPrimary(ctx, rc.from, command(db, bson.D{{Key: "listIndexes", Value: coll}}))
	if err != nil {
		if mongoerr.CodeOf(err) == mongoerr.NamespaceNotFound {
			return nil
		}
		return err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	var specs bson.A
	for _, v := range vals {
		spec, _ := v.DocumentOK()
		if name, _ := spec.Lookup("name").StringValueOK(); name == "_id_" {
			continue
		}
		var clean bson.D
		els, _ := spec.Elements()
		for _, el := range els {
			if el.Key() == "v" || el.Key() == "ns" {
				continue
			}
			clean = append(clean, bson.E{Key: el.Key(), Value: bson.RawValue{Type: bson.Type(el.Value().Type), Value: el.Value().Data}})
		}
		specs = append(specs, clean)
	}
	if len(specs) == 0 {
		if _, err := n.local(ctx, db, bson.D{{Key: "create", Value: coll}}); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
			return err
		}
		return nil
	}
	_, err = n.local(ctx, db, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: specs}})
	return err
}

// copyOptions creates the collection with the donor's options, unless it
// exists here already.
func (n *Node) copyOptions(ctx context.Context, rc *receipt, db, coll string) error {
	reply, err := n.peers.RunPrimary(ctx, rc.from, command(db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: coll}}}}))
	if err != nil {
		return err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	if len(vals) == 0 {
		return nil // the donor has no such collection: nothing to copy
	}
	first, _ := vals[0].DocumentOK()
	create := bson.D{{Key: "create", Value: coll}}
	opts, _ := first.Lookup("options").DocumentOK()
	els, _ := opts.Elements()
	for _, el := range els {
		create = append(create, bson.E{Key: el.Key(), Value: bson.RawValue{Type: bson.Type(el.Value().Type), Value: el.Value().Data}})
	}
	if _, err := n.local(ctx, db, create); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
		return err
	}
	return nil
}

// receive clones the range, then applies the donor's changes until the
// donor's critical section drained them all.
func (n *Node) receive(ctx context.Context, rc *receipt) error {
	sess := bson.D{{Key: "sessionId", Value: rc.id}}
	for {
		reply, err := n.peers.RunPrimary(ctx, rc.from, command("admin", append(bson.D{{Key: "_migrateClone", Value: 1}}, sess...)))
		if err != nil {
			return err
		}
		if rc.versioned {
			hist, _ := reply.Lookup("histories").ArrayOK()
			k, size, err := n.installHistories(ctx, rc, hist, reply.Lookup("horizon"), nil)
			if err != nil {
				return err
			}
			if k == 0 {
				break
			}
			rc.mu.Lock()
			rc.docs += int64(k)
			rc.bytes += int64(size)
			rc.mu.Unlock()
			continue
		}
		objs, _ := reply.Lookup("objects").ArrayOK()
		vals, _ := objs.Values()
		if len(vals) == 0 {
			break
		}
		if err := n.insertCloned(ctx, rc, vals); err != nil {
			return err
		}
	}
	rc.set("catchup", nil)
	for {
		rc.mu.Lock()
		final := rc.commit // asked before this drain began
		rc.mu.Unlock()
		reply, err := n.peers.RunPrimary(ctx, rc.from, command("admin", append(bson.D{{Key: "_transferMods", Value: 1}}, sess...)))
		if err != nil {
			return err
		}
		entries, _ := reply.Lookup("entries").AsInt64OK()
		if err := n.applyMods(ctx, rc, reply); err != nil {
			return err
		}
		if entries > 0 {
			continue
		}
		if final {
			rc.set("done", nil)
			return nil
		}
		rc.set("steady", nil)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// insertCloned inserts a clone batch. A duplicate _id means this shard
// holds a document of that _id outside the range (the range's own
// leftovers were cleared): two shards hold one _id, which a migration
// must report rather than silently drop or overwrite.
func (n *Node) insertCloned(ctx context.Context, rc *receipt, vals []bsoncore.Value) error {
	db, coll := splitNS(rc.ns)
	docs := make(bson.A, len(vals))
	size := 0
	for i, v := range vals {
		d, _ := v.DocumentOK()
		docs[i] = bson.Raw(d)
		size += len(d)
	}
	if _, err := n.local(ctx, db, bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}, {Key: "ordered", Value: true}}); err != nil {
		return n.conflict(rc, err)
	}
	rc.mu.Lock()
	rc.docs += int64(len(vals))
	rc.bytes += int64(size)
	rc.mu.Unlock()
	return nil
}

// conflict names a failed write of the migration: a duplicate key is a
// MigrationConflict.
func (n *Node) conflict(rc *receipt, err error) error {
	code, msg := mongoerr.CodeOf(err), err.Error()
	if code == mongoerr.DuplicateKey {
		return mongoerr.New(mongoerr.MigrationConflict, "migrating [%s, %s) of %s from %s: this shard already holds a document with the same key outside the range (%s): an _id (or unique key) is on two shards; resolve the duplicate, then move the chunk again",
			rc.r.min, rc.r.max, rc.ns, rc.fromShard, msg)
	}
	return mongoerr.New(code, "migrating [%s, %s) of %s: writing a document failed: %s", rc.r.min, rc.r.max, rc.ns, msg)
}

// applyMods applies a _transferMods batch: reloaded documents replace
// (or become) this shard's copy; deleted _ids remove the copy in range.
func (n *Node) applyMods(ctx context.Context, rc *receipt, reply bsoncore.Document) error {
	if err := n.installSessions(ctx, reply); err != nil { // sessions.go
		return err
	}
	if rc.versioned {
		hist, _ := reply.Lookup("histories").ArrayOK()
		purge, _ := reply.Lookup("purge").ArrayOK()
		k, _, err := n.installHistories(ctx, rc, hist, bsoncore.Value{}, purge)
		rc.mu.Lock()
		rc.modsTaken += int64(k)
		rc.mu.Unlock()
		return err
	}
	db, coll := splitNS(rc.ns)
	reload, _ := reply.Lookup("reload").ArrayOK()
	deleted, _ := reply.Lookup("deleted").ArrayOK()
	rvals, _ := reload.Values()
	dvals, _ := deleted.Values()
	if len(rvals)+len(dvals) == 0 {
		return nil
	}
	var ids bson.A
	for _, v := range rvals {
		d, _ := v.DocumentOK()
		id := d.Lookup("_id")
		ids = append(ids, bson.RawValue{Type: bson.Type(id.Type), Value: id.Data})
	}
	for _, v := range dvals {
		ids = append(ids, bson.RawValue{Type: bson.Type(v.Type), Value: v.Data})
	}
	have, err := n.localFind(ctx, db, coll, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return err
	}
	inRange := map[string]bool{}
	for _, d := range have {
		id := d.Lookup("_id")
		k := string(id.Data) + string(rune(id.Type))
		if !rc.r.holds(d) {
			inRange[k] = false
			continue
		}
		inRange[k] = true
	}
	var updates, deletes bson.A
	for _, v := range rvals {
		d, _ := v.DocumentOK()
		id := d.Lookup("_id")
		if in, ok := inRange[string(id.Data)+string(rune(id.Type))]; ok && !in {
			return n.conflict(rc, mongoerr.New(mongoerr.DuplicateKey, "_id %s", id))
		}
		updates = append(updates, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}}}}, {Key: "u", Value: bson.Raw(d)}, {Key: "upsert", Value: true}})
	}
	for _, v := range dvals {
		if in := inRange[string(v.Data)+string(rune(v.Type))]; in {
			deletes = append(deletes, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}}}}, {Key: "limit", Value: 1}})
		}
	}
	if len(updates) > 0 {
		if _, err := n.local(ctx, db, bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: updates}}); err != nil {
			return n.conflict(rc, err)
		}
	}
	if len(deletes) > 0 {
		if _, err := n.local(ctx, db, bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: deletes}}); err != nil {
			return err
		}
	}
	rc.mu.Lock()
	rc.modsTaken += int64(len(ids))
	rc.mu.Unlock()
	return nil
}

// recvChunkControl answers the donor's _recvChunkStatus, _recvChunkCommit,
// _recvChunkAbort and _recvChunkReleaseCritSec.
func (n *Node) recvChunkControl(ctx context.Context, name string, body bsoncore.Document) (bsoncore.Document, error) {
	id, _ := body.Lookup("sessionId").StringValueOK()
	n.mu.Lock()
	rc := n.receipts[id]
	n.mu.Unlock()
	switch name {
	case "_recvChunkAbort":
		if rc != nil {
			rc.cancel()
			<-rc.finished
			rc.endCritical(ctx)
		}
		if err := n.resolveReceipt(ctx, id, false); err != nil {
			return nil, err
		}
		n.forgetReceipt(id)
		return bsoncore.NewDocumentBuilder().Build(), nil
	case "_recvChunkReleaseCritSec":
		if rc != nil {
			rc.endCritical(ctx)
		}
		if err := n.resolveReceipt(ctx, id, true); err != nil {
			return nil, err
		}
		n.forgetReceipt(id)
		return bsoncore.NewDocumentBuilder().Build(), nil
	}
	if rc == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "no migration %q is being received by this shard", id)
	}
	if name == "_recvChunkCommit" {
		rc.mu.Lock()
		rc.commit = true
		rc.mu.Unlock()
		for {
			rc.mu.Lock()
			st, ch := rc.state, rc.changed
			rc.mu.Unlock()
			if st == "done" || st == "fail" {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		rc.mu.Lock()
		done := rc.state == "done"
		rc.mu.Unlock()
		if done {
			if err := n.holdReceived(rc); err != nil {
				return nil, err
			}
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	b := bsoncore.NewDocumentBuilder().AppendString("state", rc.state).AppendInt64("clonedDocs", rc.docs).
		AppendInt64("clonedBytes", rc.bytes).AppendInt64("modsTaken", rc.modsTaken)
	if rc.err != nil {
		b.AppendString("errmsg", rc.err.Error()).AppendInt32("errCode", int32(mongoerr.CodeOf(rc.err)))
	}
	return b.Build(), nil
}

// ended reports whether rc's receiving has returned (failed or done).
func (rc *receipt) ended() bool {
	select {
	case <-rc.finished:
		return true
	default:
		return false
	}
}

func (n *Node) forgetReceipt(id string) {
	n.mu.Lock()
	if rc := n.receipts[id]; rc != nil {
		rc.cancel()
	}
	delete(n.receipts, id)
	n.mu.Unlock()
}

// recipientCritMax bounds the recipient's critical section when the donor
// never tells it the outcome (it died): the map is then read from the
// config servers, whatever they say by then.
const recipientCritMax = time.Minute

// holdReceived begins the recipient's critical section once its last
// drain is done (_recvChunkCommit), as mongod's recipient does: writes to
// the collection here wait until the donor says the migration committed
// (_recvChunkReleaseCritSec) or aborted, and the map is reloaded before
// they go on. Without it a write carrying this shard's version from
// before the commit would be judged by the map from before it, which
// gives the received range to the donor: a write by _id alone, sent to
// both shards, would skip the document here as an orphan while the donor
// refuses it as stale, and the router, having had this shard's answer,
// would not ask again — an acknowledged write applied nowhere.
func (n *Node) holdReceived(rc *receipt) error {
	rc.mu.Lock()
	held := rc.critEnd != nil
	rc.mu.Unlock()
	if held {
		return nil // a retried _recvChunkCommit
	}
	cm := n.meta(rc.ns)
	exit, err := cm.enterCritical(MigrationLockWait())
	if err != nil {
		return err
	}
	ended := make(chan struct{})
	rc.mu.Lock()
	rc.critEnd = n.reloadThenExit(cm, exit, ended)
	rc.mu.Unlock()
	n.unlessEnded(recipientCritMax, ended, func() {
		n.opts.Log.Warn("the donor did not say how a migration ended; reading the map from the config servers", "ns", rc.ns, "sessionId", rc.id)
		rc.endCritical(n.ctx)
	})
	return nil
}

// endCritical ends the recipient's critical section, if on: the map is
// reloaded, then the waiting writes go on.
func (rc *receipt) endCritical(ctx context.Context) {
	rc.mu.Lock()
	end := rc.critEnd
	rc.critEnd = nil
	rc.mu.Unlock()
	if end != nil {
		end(context.WithoutCancel(ctx))
	}
}
