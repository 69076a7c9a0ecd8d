package shardsvr

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// donation is the migration this shard donates.
type donation struct {
	id      string
	ns      string
	r       keyRange
	toShard string
	mu      sync.Mutex // the recipient's calls
	read    bson.D     // find options reading r through the shard key's index (scan.go)
	cursor  int64      // the clone's local cursor; -1 once exhausted
	lastTS  bson.Timestamp
	startTS bson.Timestamp // the oplog's newest entry when the migration began
	// prior: the retryable-write records of the sessions that wrote
	// just before the start were sent (sessions.go).
	prior  bool
	cloned int64 // bytes sent by _migrateClone
	// clonedDocs: the documents (or histories) those bytes held.
	clonedDocs int64
	modsSent   int64

	// A versioned collection's clone and catch-up send histories
	// (versioned.go): the _ids the clone has still to send, whether the
	// range's deleted documents were listed, and per _id sent the newest
	// validFrom sent.
	versioned bool
	pending   []bsoncore.Value
	listed    bool
	sent      map[string]uint64
}

// moveTimeout bounds a migration's clone and catch-up.
const moveTimeout = 10 * time.Minute

// lockWaitMS is migrationLockAcquisitionMaxWaitMS (mongod's server
// parameter, process-wide as there): how long a critical section waits for
// the writes and open transactions holding its collection before the
// migration gives up (LockTimeout).
var lockWaitMS atomic.Int64

// DefaultMigrationLockWait is migrationLockAcquisitionMaxWaitMS's default,
// MongoDB's.
const DefaultMigrationLockWait = 500 * time.Millisecond

func init() { lockWaitMS.Store(DefaultMigrationLockWait.Milliseconds()) }

// MigrationLockWait is migrationLockAcquisitionMaxWaitMS now.
func MigrationLockWait() time.Duration { return time.Duration(lockWaitMS.Load()) * time.Millisecond }

// SetMigrationLockWait sets migrationLockAcquisitionMaxWaitMS.
func SetMigrationLockWait(d time.Duration) { lockWaitMS.Store(d.Milliseconds()) }

// moveRange is _shardsvrMoveRange: the donor's whole migration.
func (n *Node) moveRange(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, ok := body.Index(0).Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "_shardsvrMoveRange needs a namespace string")
	}
	toShard, ok := body.Lookup("toShard").StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "_shardsvrMoveRange needs a string toShard")
	}
	min, okMin := body.Lookup("min").DocumentOK()
	max, okMax := body.Lookup("max").DocumentOK()
	if !okMin || !okMax {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "_shardsvrMoveRange needs both min and max: Cairn moves whole chunks (a range given by min alone is not split by size yet)")
	}
	waitForDelete, _ := body.Lookup("waitForDelete").BooleanOK()
	hang(ctx, n.moveStep[0]) // step 1: the options parsed
	id, _ := n.shardIdentity(ctx)

	cm := n.meta(ns)
	if cm.inCritical() {
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s is in a migration's critical section whose commit's outcome is not known yet; move again once it is", ns)
	}
	m, coll, err := n.current(ctx, cm, true)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotSharded, "%s is not sharded", ns)
	}
	ci, r, err := exactChunk(m, min, max)
	if err != nil {
		return nil, err
	}
	if ci < 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no chunk of %s is exactly [%s, %s): move a whole chunk (split it first)", ns, min, max)
	}
	if from := m.Chunks[ci].Shard; from != id.ShardName {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "chunk [%s, %s) of %s is on shard %s, not on this shard %s", min, max, ns, from, id.ShardName)
	}
	if toShard == id.ShardName {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "chunk [%s, %s) is already on shard %s", min, max, toShard)
	}
	versioned, err := n.isVersioned(ctx, ns)
	if err != nil {
		return nil, err
	}
	toHost, err := n.shardHost(ctx, toShard)
	if err != nil {
		return nil, err
	}
	read, indexed, err := n.rangeRead(ctx, ns, r)
	if err != nil {
		return nil, err
	}
	if !indexed {
		if db, coll := splitNS(ns); n.collectionExists(ctx, db, coll) {
			return nil, mongoerr.New(mongoerr.IndexNotFound, "couldn't find index over shard key %s for collection %s: a migration reads its range through the shard key's index", m.Pattern, ns)
		}
	}
	d := &donation{id: bson.NewObjectID().Hex(), ns: ns, r: r, toShard: toShard, read: read, versioned: versioned, sent: map[string]uint64{}}
	n.mu.Lock()
	if n.donating != nil {
		n.mu.Unlock()
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "this shard is already donating a chunk of %s; one migration at a time", n.donating.ns)
	}
	n.donating = d
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.donating = nil
		n.mu.Unlock()
	}()
	start := time.Now()
	hang(ctx, n.moveStep[1]) // step 2: the metadata checked, the donation registered
	// The coordinator document says a migration may be under way, so that
	// a restarted donor resolves it (recovery.go).
	coord := bson.D{{Key: "_id", Value: d.id}, {Key: "nss", Value: ns}, {Key: "min", Value: rawDoc(min)}, {Key: "max", Value: rawDoc(max)},
		{Key: "donorShardId", Value: id.ShardName}, {Key: "recipientShardId", Value: toShard}, {Key: "recipientHost", Value: toHost}}
	if _, err := n.local(ctx, "config", bson.D{{Key: "insert", Value: "migrationCoordinators"}, {Key: "documents", Value: bson.A{coord}}, {Key: "writeConcern", Value: majority}}); err != nil {
		return nil, err
	}
	if d.lastTS, err = n.oplogTop(ctx); err != nil {
		return nil, err
	}
	d.startTS = d.lastTS
	mctx, cancel := context.WithTimeout(ctx, moveTimeout)
	defer cancel()
	abort := func(cause error) (bsoncore.Document, error) {
		n.tellRecipient(context.WithoutCancel(ctx), toHost, "_recvChunkAbort", d.id)
		n.forgetCoordinator(context.WithoutCancel(ctx), d.id)
		n.logMigration(ctx, ns, min, max, id.ShardName, toShard, cause)
		return nil, cause
	}
	recvStart := bson.D{{Key: "_recvChunkStart", Value: ns}, {Key: "sessionId", Value: d.id}, {Key: "from", Value: n.opts.Self},
		{Key: "fromShard", Value: id.ShardName}, {Key: "toShard", Value: toShard}, {Key: "min", Value: rawDoc(min)}, {Key: "max", Value: rawDoc(max)},
		{Key: "shardKeyPattern", Value: rawDoc(m.Pattern.Doc)}, {Key: "epoch", Value: m.Epoch}, {Key: "collectionTimestamp", Value: bson.Timestamp{T: coll.Timestamp.T(), I: coll.Timestamp.I()}}}
	if _, err := n.peers.RunPrimary(mctx, toHost, command("admin", recvStart)); err != nil {
		return abort(fmt.Errorf("the recipient %s did not start: %w", toShard, err))
	}
	hang(mctx, n.moveStep[2]) // step 3: the coordinator written, the recipient started
	// Clone and catch up until the recipient is steady, or in its
	// catch-up with little enough left that the critical section may
	// drain the rest (maxCatchUpPercentageBeforeBlockingWrites).
	var checked time.Time
	for {
		st, err := n.recipientState(mctx, toHost, d.id)
		if err != nil {
			return abort(fmt.Errorf("migration of [%s, %s) to %s failed: %w", min, max, toShard, err))
		}
		if st == "steady" {
			break
		}
		if st == "catchup" && time.Since(checked) >= catchUpCheckEvery {
			checked = time.Now()
			if near, err := n.nearlyCaughtUp(mctx, d); err != nil {
				return abort(fmt.Errorf("migration of [%s, %s) to %s failed: %w", min, max, toShard, err))
			} else if near {
				break
			}
		}
		select {
		case <-mctx.Done():
			return abort(fmt.Errorf("migration of [%s, %s) to %s did not catch up in %s", min, max, toShard, moveTimeout))
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The critical section: writes to the collection wait, the recipient
	// drains the last changes, the config servers commit.
	hang(mctx, n.moveStep[3]) // step 4: the recipient steady
	hang(mctx, n.hangBeforeCritical)
	exit, err := cm.enterCritical(MigrationLockWait())
	if err != nil {
		return abort(fmt.Errorf("migration of [%s, %s) to %s could not enter its critical section: %w", min, max, toShard, err))
	}
	critStart := time.Now()
	reply, err := n.peers.RunPrimary(mctx, toHost, command("admin", bson.D{{Key: "_recvChunkCommit", Value: ns}, {Key: "sessionId", Value: d.id}}))
	if st, _ := reply.Lookup("state").StringValueOK(); err != nil || st != "done" {
		exit()
		if err == nil {
			err = fmt.Errorf("the recipient ended in state %q", st)
		}
		return abort(fmt.Errorf("migration of [%s, %s) to %s failed in its critical section: %w", min, max, toShard, err))
	}
	hang(mctx, n.moveStep[4]) // step 5: the recipient holds the chunk's data, the commit not asked yet
	have := m.ShardVersionFor(id.ShardName, coll.Timestamp)
	migrated := bson.D{{Key: "min", Value: rawDoc(min)}, {Key: "max", Value: rawDoc(max)}, {Key: "lastmod", Value: bson.Timestamp{T: m.Chunks[ci].Version.Major, I: m.Chunks[ci].Version.Minor}}}
	commit := bson.D{{Key: "_configsvrCommitChunkMigration", Value: ns}, {Key: "fromShard", Value: id.ShardName}, {Key: "toShard", Value: toShard},
		{Key: "migratedChunk", Value: migrated}, {Key: "fromShardCollectionVersion", Value: rawDoc(have.Doc())},
		{Key: "validAfter", Value: bson.Timestamp{T: uint32(time.Now().Unix())}}, {Key: "writeConcern", Value: majority}}
	// The commit is retried while the config primary is down or changing
	// (runPrimary), with no deadline: an attempt given up while the config
	// server still held it could commit after this donor decided to
	// abort, and nothing here fences such a late commit off (MongoDB's
	// recovery bumps the chunk's version first, which Cairn does not yet).
	// A retried commit that finds the chunk moved succeeds, so retrying is
	// safe. An answer that refuses it is final, and the config servers'
	// map decides.
	_, cerr := n.configRun(context.WithoutCancel(ctx), "admin", commit)
	committed, err := n.decided(ctx, ns, r, toShard, cerr)
	if err != nil {
		// Unknown outcome: the critical section stays until recovery
		// learns it (writes to the collection wait rather than risk
		// landing on the wrong owner).
		go n.resolveLater(d.id, cm, exit)
		return nil, fmt.Errorf("migration of [%s, %s) to %s: the commit's outcome is not known yet (%v); writes wait until it is", min, max, toShard, err)
	}
	if !committed {
		exit()
		return abort(fmt.Errorf("the config servers refused the migration of [%s, %s) to %s: %w", min, max, toShard, cerr))
	}
	n.refreshAfterCommit(ctx, cm)
	hang(mctx, n.hangBeforeLeavingCritical)
	exit()
	crit := time.Since(critStart)
	hang(mctx, n.moveStep[5]) // step 6: committed, the range deletion not recorded nor the coordinator forgotten yet
	n.afterCommit(context.WithoutCancel(ctx), d.id, ns, r, toHost)
	n.logMigration(ctx, ns, min, max, id.ShardName, toShard, nil)
	took := time.Since(start) // the migration, without its range deletion
	if waitForDelete {
		if err := n.runRangeDeletions(ctx); err != nil {
			return nil, err
		}
	} else {
		n.wake()
	}
	d.mu.Lock()
	cloned, mods := d.cloned, d.modsSent
	d.mu.Unlock()
	n.opts.Log.Info("migrated a chunk", "ns", ns, "min", min.String(), "max", max.String(), "to", toShard,
		"ms", took.Milliseconds(), "criticalSectionMs", crit.Milliseconds(), "clonedBytes", cloned, "modsSent", mods)
	return bsoncore.NewDocumentBuilder().AppendInt64("clonedBytes", cloned).AppendInt64("modsSent", mods).
		AppendInt64("millis", took.Milliseconds()).AppendInt64("criticalSectionMillis", crit.Milliseconds()).Build(), nil
}

// MaxCatchUpPercentageBeforeBlockingWrites is MongoDB's server parameter
// of that name at its default (10; Cairn's is not settable): a donor
// whose recipient is still catching up enters the critical section once
// the changes it has not sent are estimated below that percentage of the
// chunk size (defaultRangeSize, 128 MB), and the critical section drains
// the rest while writes wait. Without it, writers that change the range
// faster than the recipient applies keep the recipient from ever being
// steady, and the move never ends (TestMigrationCatchUpUnderWrites).
const MaxCatchUpPercentageBeforeBlockingWrites = 10

// catchUpCheckEvery spaces the donor's estimates of what it has not sent
// (each counts oplog entries).
const catchUpCheckEvery = 250 * time.Millisecond

// nearlyCaughtUp estimates the bytes of the changes to d's collection the
// recipient has not pulled (the oplog entries after the last sent, each
// taken as a document of the clone's average size) and reports whether
// they are under MaxCatchUpPercentageBeforeBlockingWrites of the chunk
// size. The count stops at the threshold.
func (n *Node) nearlyCaughtUp(ctx context.Context, d *donation) (bool, error) {
	d.mu.Lock()
	lastTS, cloned, docs := d.lastTS, d.cloned, d.clonedDocs
	d.mu.Unlock()
	avg := int64(1)
	if docs > 0 {
		avg = max(1, cloned/docs)
	}
	budget := int64(defaultRangeSize) * MaxCatchUpPercentageBeforeBlockingWrites / 100
	limit := budget/avg + 1
	reply, err := n.local(ctx, "local", bson.D{{Key: "count", Value: "oplog.rs"},
		{Key: "query", Value: bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: lastTS}}}, {Key: "$or", Value: bson.A{
			bson.D{{Key: "ns", Value: d.ns}}, bson.D{{Key: "o.applyOps.ns", Value: d.ns}}}}}},
		{Key: "limit", Value: limit}})
	if err != nil {
		return false, err
	}
	entries, _ := reply.Lookup("n").AsInt64OK()
	return entries*avg < budget, nil
}

// decideTimeout bounds the donor's reading of the outcome after a refused
// commit, and of the map after a commit: past it the outcome is unknown,
// the move answers, and the critical section stays until recovery learns
// it (resolveLater).
const decideTimeout = 15 * time.Second

// decided learns whether the migration of r to toShard committed: from the
// commit's reply, or, when that failed, from the config servers' map.
func (n *Node) decided(ctx context.Context, ns string, r keyRange, toShard string, cerr error) (bool, error) {
	if cerr == nil {
		return true, nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer cancel()
	m, _, err := n.loadMap(dctx, ns)
	if err != nil {
		return false, fmt.Errorf("the config servers do not answer (%v) after the commit failed: %w", err, cerr)
	}
	return ownsAny(m, toShard, r), nil
}

// refreshAfterCommit loads the committed map before the critical section
// ends (the donor's, and the recipient's), so that a write carrying the
// version from before the migration is refused (StaleConfig) rather than
// admitted into the range the donor gave away or judged by a map that
// gives the recipient's range to the donor. When the config servers do not answer, the metadata is
// dropped instead: the next command on the collection must load it first
// (and fails while it cannot).
func (n *Node) refreshAfterCommit(ctx context.Context, cm *collMeta) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer cancel()
	// A fresh load: one under way since before the commit could bring the
	// map from before it.
	if err := n.reload(rctx, cm, true); err != nil {
		n.opts.Log.Warn("refreshing after a migration failed; the collection's metadata is reloaded at its next command", "ns", cm.ns, "err", err)
		cm.invalidate()
	}
}

// afterCommit records the donor's range for deletion, forgets the
// coordinator and tells the recipient the chunk is its own.
func (n *Node) afterCommit(ctx context.Context, id, ns string, r keyRange, toHost string) {
	task := bson.D{{Key: "_id", Value: id}, {Key: "nss", Value: ns}, {Key: "range", Value: bson.D{{Key: "min", Value: rawDoc(r.min)}, {Key: "max", Value: rawDoc(r.max)}}},
		{Key: "pending", Value: false}, {Key: "whenToClean", Value: "now"}}
	if _, err := n.local(ctx, "config", bson.D{{Key: "update", Value: "rangeDeletions"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: task}, {Key: "upsert", Value: true}}}}, {Key: "writeConcern", Value: majority}}); err != nil {
		n.opts.Log.Error("recording a range deletion failed; recovery will", "err", err)
		return
	}
	n.forgetCoordinator(ctx, id)
	n.tellRecipient(ctx, toHost, "_recvChunkReleaseCritSec", id)
}

func (n *Node) forgetCoordinator(ctx context.Context, id string) {
	if _, err := n.local(ctx, "config", bson.D{{Key: "delete", Value: "migrationCoordinators"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: 1}}}}, {Key: "writeConcern", Value: majority}}); err != nil {
		n.opts.Log.Warn("forgetting a migration coordinator failed", "id", id, "err", err)
	}
}

// tellRecipient sends a migration's outcome to the recipient, best
// effort: a recipient that misses it asks the donor later (recovery.go).
func (n *Node) tellRecipient(ctx context.Context, host, cmd, id string) {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := n.peers.RunPrimary(c, host, command("admin", bson.D{{Key: cmd, Value: 1}, {Key: "sessionId", Value: id}})); err != nil {
		n.opts.Log.Warn("telling the recipient failed", "command", cmd, "host", host, "err", err)
	}
}

// recipientState polls _recvChunkStatus; a failed recipient is an error.
func (n *Node) recipientState(ctx context.Context, host, id string) (string, error) {
	reply, err := n.peers.RunPrimary(ctx, host, command("admin", bson.D{{Key: "_recvChunkStatus", Value: 1}, {Key: "sessionId", Value: id}}))
	if err != nil {
		return "", err
	}
	st, _ := reply.Lookup("state").StringValueOK()
	if st == "fail" {
		msg, _ := reply.Lookup("errmsg").StringValueOK()
		code, _ := reply.Lookup("errCode").AsInt64OK()
		return st, mongoerr.New(mongoerr.Code(code), "%s", msg)
	}
	return st, nil
}

// shardHost is a shard's connection string from config.shards.
func (n *Node) shardHost(ctx context.Context, name string) (string, error) {
	docs, err := n.configFind(ctx, "shards", bson.D{{Key: "_id", Value: name}})
	if err != nil {
		return "", err
	}
	if len(docs) == 0 {
		return "", mongoerr.New(mongoerr.ShardNotFound, "shard %s not found", name)
	}
	host, _ := docs[0].Lookup("host").StringValueOK()
	return host, nil
}

// oplogTop is the ts of this server's newest oplog entry (zero when empty).
func (n *Node) oplogTop(ctx context.Context) (bson.Timestamp, error) {
	reply, err := n.local(ctx, "local", bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "sort", Value: bson.D{{Key: "$natural", Value: -1}}}, {Key: "limit", Value: 1}})
	if err != nil {
		return bson.Timestamp{}, err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	if len(vals) == 0 {
		return bson.Timestamp{}, nil
	}
	d, _ := vals[0].DocumentOK()
	t, i, _ := d.Lookup("ts").TimestampOK()
	return bson.Timestamp{T: t, I: i}, nil
}

// donation looks up the migration a recipient's call names.
func (n *Node) donationOf(body bsoncore.Document) (*donation, error) {
	id, _ := body.Lookup("sessionId").StringValueOK()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.donating == nil || n.donating.id != id {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "no migration %q is being donated by this shard", id)
	}
	return n.donating, nil
}

// cloneBatchBytes bounds one _migrateClone reply.
const cloneBatchBytes = 4 << 20

// migrateClone is _migrateClone: the next documents of the range, read
// through the shard key's index between the range's bounds (writes
// meanwhile reach the recipient through _transferMods, which starts from
// the oplog position before the clone).
func (n *Node) migrateClone(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	d, err := n.donationOf(body)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.versioned {
		return n.cloneHistories(ctx, d)
	}
	arr := bsoncore.NewArrayBuilder()
	size := 0
	for d.cursor >= 0 && size < cloneBatchBytes {
		vals, err := n.cloneRead(ctx, d, nil)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			doc, _ := v.DocumentOK()
			if d.r.holds(doc) { // the index's bounds say so already; a scan without one needs it
				arr.AppendDocument(doc)
				size += len(doc)
				d.clonedDocs++
			}
		}
	}
	d.cloned += int64(size)
	return bsoncore.NewDocumentBuilder().AppendArray("objects", arr.Build()).Build(), nil
}

// cloneRead reads the clone's next batch of the range (its documents, or
// proj of them) through its local cursor, opened at the first call;
// d.cursor is -1 once the cursor is exhausted.
func (n *Node) cloneRead(ctx context.Context, d *donation, proj bson.D) ([]bsoncore.Value, error) {
	db, coll := splitNS(d.ns)
	var reply bsoncore.Document
	var err error
	if d.cursor == 0 {
		cmd := append(bson.D{{Key: "find", Value: coll}, {Key: "batchSize", Value: 2000}}, d.read...)
		if proj != nil {
			cmd = append(cmd, bson.E{Key: "projection", Value: proj})
		}
		reply, err = n.local(ctx, db, cmd)
	} else {
		reply, err = n.local(ctx, db, bson.D{{Key: "getMore", Value: d.cursor}, {Key: "collection", Value: coll}, {Key: "batchSize", Value: 2000}})
	}
	if err != nil {
		return nil, err
	}
	vals, id := batchOf(reply)
	if d.cursor = id; d.cursor == 0 {
		d.cursor = -1
	}
	return vals, nil
}

// collectionExists reports whether db.coll exists here.
func (n *Node) collectionExists(ctx context.Context, db, coll string) bool {
	reply, err := n.local(ctx, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: coll}}}, {Key: "nameOnly", Value: true}})
	if err != nil {
		return true // unknown: as if it did
	}
	vals, _ := batchOf(reply)
	return len(vals) > 0
}

// changedID is the _id an oplog change (an entry, or an element of a
// transaction's applyOps) names; Type 0 for a command.
func changedID(c bsoncore.Document) bsoncore.Value {
	switch op, _ := c.Lookup("op").StringValueOK(); op {
	case "i", "d":
		return c.Lookup("o", "_id")
	case "u":
		return c.Lookup("o2", "_id")
	}
	return bsoncore.Value{}
}

// transferMods is _transferMods: the range's documents changed since the
// last call, found in the oplog after the migration's start (a
// transaction's changes in its commit's applyOps entry too) and sent as
// they are now (reload) or as deleted _ids. Sending the current document
// rather than the change makes applying idempotent: the recipient ends
// with the donor's state whatever the clone already saw.
func (n *Node) transferMods(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	d, err := n.donationOf(body)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	prevTS := d.lastTS
	reply, err := n.local(ctx, "local", bson.D{{Key: "find", Value: "oplog.rs"},
		{Key: "filter", Value: bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: d.lastTS}}}, {Key: "$or", Value: bson.A{
			bson.D{{Key: "ns", Value: d.ns}}, bson.D{{Key: "o.applyOps.ns", Value: d.ns}}}}}},
		{Key: "limit", Value: 5000}, {Key: "batchSize", Value: 5000}})
	if err != nil {
		return nil, err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	var ids bson.A
	var firstTS []bson.Timestamp
	seen := map[string]bool{}
	for _, v := range vals {
		e, _ := v.DocumentOK()
		t, i, _ := e.Lookup("ts").TimestampOK()
		d.lastTS = bson.Timestamp{T: t, I: i}
		changes := []bsoncore.Document{e}
		if ops, ok := e.Lookup("o", "applyOps").ArrayOK(); ok {
			// A transaction's commit: one entry for all its changes.
			changes = changes[:0]
			els, _ := ops.Values()
			for _, el := range els {
				if c, ok := el.DocumentOK(); ok && c.Lookup("ns").StringValue() == d.ns {
					changes = append(changes, c)
				}
			}
		}
		for _, c := range changes {
			id := changedID(c)
			if id.Type == 0 || seen[idString(id)] {
				continue
			}
			seen[idString(id)] = true
			ids = append(ids, bson.RawValue{Type: bson.Type(id.Type), Value: id.Data})
			firstTS = append(firstTS, bson.Timestamp{T: t, I: i})
		}
	}
	// The sessions of the batch's retryable writes (and, the first time,
	// of those just before the start) go with it: a record changed since
	// it was sent shows a new entry, so it is sent again.
	var lsids []bsoncore.Document
	seenSessions := map[string]bool{}
	if !d.prior {
		if lsids, err = n.priorSessions(ctx, d, seenSessions); err != nil {
			return nil, err
		}
		d.prior = true
	}
	lsids = lsidsOf(d.ns, vals, seenSessions, lsids)
	sessions, err := n.sessionHistories(lsids)
	if err != nil {
		return nil, err
	}
	if d.versioned {
		vids := make([]bsoncore.Value, len(ids))
		for i, id := range ids {
			rv := id.(bson.RawValue)
			vids[i] = bsoncore.Value{Type: bsoncore.Type(rv.Type), Data: rv.Value}
		}
		hist, purge, err := n.modHistories(ctx, d, vids, firstTS, prevTS)
		if err != nil {
			return nil, err
		}
		d.modsSent += int64(len(ids))
		return bsoncore.NewDocumentBuilder().AppendArray("histories", hist).AppendArray("purge", purge).
			AppendArray("sessions", sessions).AppendInt32("entries", int32(len(vals))).Build(), nil
	}
	reload, deleted := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	if len(ids) > 0 {
		db, coll := splitNS(d.ns)
		docs, err := n.localFind(ctx, db, coll, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil {
			return nil, err
		}
		found := map[string]bool{}
		for _, doc := range docs {
			id := doc.Lookup("_id")
			if d.r.holds(doc) {
				found[string(id.Data)+string(rune(id.Type))] = true
				reload.AppendDocument(doc)
			}
		}
		for _, id := range ids {
			rv := id.(bson.RawValue)
			if !found[string(rv.Value)+string(rune(rv.Type))] {
				deleted.AppendValue(bsoncore.Value{Type: bsoncore.Type(rv.Type), Data: rv.Value})
			}
		}
		d.modsSent += int64(len(ids))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("reload", reload.Build()).AppendArray("deleted", deleted.Build()).
		AppendArray("sessions", sessions).AppendInt32("entries", int32(len(vals))).Build(), nil
}

// logMigration records a migration's end in config.changelog as MongoDB's
// donor does, {what: "moveChunk.from", ns, details: {min, max, from, to,
// note: "success" | "aborted", errmsg}}: sh.status() counts them as its
// migration results for the last 24 hours. Best effort, within 10 s: an
// entry lost to a config server failover changes no data. (MongoDB's
// config.changelog is capped; Cairn's is not yet.)
func (n *Node) logMigration(ctx context.Context, ns string, min, max bsoncore.Document, from, to string, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	details := bson.D{{Key: "min", Value: rawDoc(min)}, {Key: "max", Value: rawDoc(max)}, {Key: "from", Value: from}, {Key: "to", Value: to}}
	if cause == nil {
		details = append(details, bson.E{Key: "note", Value: "success"})
	} else {
		details = append(details, bson.E{Key: "note", Value: "aborted"}, bson.E{Key: "errmsg", Value: cause.Error()})
	}
	now := time.Now()
	entry := bson.D{{Key: "_id", Value: fmt.Sprintf("%s-%s-%s", n.opts.Self, now.UTC().Format("2006-01-02T15:04:05.000Z"), bson.NewObjectID().Hex())},
		{Key: "server", Value: n.opts.Self}, {Key: "shard", Value: from}, {Key: "clientAddr", Value: ""}, {Key: "time", Value: now},
		{Key: "what", Value: "moveChunk.from"}, {Key: "ns", Value: ns}, {Key: "details", Value: details}}
	if _, err := n.configRun(ctx, "config", bson.D{{Key: "insert", Value: "changelog"}, {Key: "documents", Value: bson.A{entry}}}); err != nil {
		n.opts.Log.Warn("could not record a migration in config.changelog", "ns", ns, "err", err)
	}
}
