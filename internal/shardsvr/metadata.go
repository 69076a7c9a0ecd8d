package shardsvr

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// collMeta is a collection's filtering metadata on this shard: the
// routing table as the config servers last gave it (nil: not sharded)
// and the migration gate of its writes.
type collMeta struct {
	ns string

	mu     sync.Mutex
	loaded bool
	m      *shard.Map // nil: the collection is not sharded
	coll   shard.Collection
	// The migration gate (invariant "Writes hold the gate", doc.go):
	// holders counts the writes in flight and the open transactions that
	// wrote the collection here (engine.Txn.Hold keeps a transaction's
	// hold until it ends). crit is non-nil from the moment a critical
	// section asks to begin until its end (closed then): new holders wait
	// on it. drained, non-nil while the critical section waits for the
	// holders to go, is closed when the last one leaves.
	holders   int
	crit      chan struct{}
	drained   chan struct{}
	refreshes uint64 // completed refreshes (refresh coalesces on it)
	refreshMu sync.Mutex
	drop      dropMark // a sharded incarnation this shard dropped (dbversion.go)
}

// unsharded is the version of a collection the config servers do not
// list: MongoDB's ShardVersion::UNSHARDED (a zero epoch, timestamp and
// version).
var unsharded = shard.ShardVersion{}

func (n *Node) meta(ns string) *collMeta {
	n.mu.Lock()
	defer n.mu.Unlock()
	cm := n.colls[ns]
	if cm == nil {
		cm = &collMeta{ns: ns}
		n.colls[ns] = cm
	}
	return cm
}

// versionOf is the collection's routing table and this shard's version of
// it: the greatest version of the chunks it owns (zero when it owns none),
// of the collection's incarnation; UNSHARDED and nil when the collection
// is not sharded. One read of both, so that a read's filter is the table
// its version was judged by.
func (cm *collMeta) versionOf(me string) (*shard.Map, shard.ShardVersion) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.m == nil {
		return nil, unsharded
	}
	return cm.m, cm.m.ShardVersionFor(me, cm.coll.Timestamp)
}

// refresh reloads the collection's routing table from the config servers.
// Concurrent callers share one load: a caller that waited while another
// loaded takes that result.
func (n *Node) refresh(ctx context.Context, cm *collMeta) error {
	return n.reload(ctx, cm, false)
}

// reload is refresh; fresh: a load that begins after the call (not one
// that was under way when it came), for a caller that knows the config
// servers just changed.
func (n *Node) reload(ctx context.Context, cm *collMeta, fresh bool) error {
	cm.mu.Lock()
	seen := cm.refreshes
	cm.mu.Unlock()
	cm.refreshMu.Lock()
	defer cm.refreshMu.Unlock()
	cm.mu.Lock()
	done := cm.refreshes != seen
	cm.mu.Unlock()
	if done && !fresh {
		return nil
	}
	m, coll, err := n.loadMap(ctx, cm.ns)
	if err != nil {
		return err
	}
	cm.mu.Lock()
	cm.m, cm.coll, cm.loaded = m, coll, true
	cm.refreshes++
	if m == nil {
		cm.drop.suspect(nil)
	} else {
		cm.drop.suspect(coll.UUID[:])
	}
	cm.mu.Unlock()
	return nil
}

// invalidate forgets the collection's map: the next command on it loads
// it again (current), and fails while the config servers cannot say.
func (cm *collMeta) invalidate() {
	cm.mu.Lock()
	cm.m, cm.loaded = nil, false
	cm.mu.Unlock()
}

// loadMap reads a collection's routing table from the config servers (nil
// when it is not sharded).
func (n *Node) loadMap(ctx context.Context, ns string) (*shard.Map, shard.Collection, error) {
	docs, err := n.configFind(ctx, "collections", bson.D{{Key: "_id", Value: ns}})
	if err != nil || len(docs) == 0 {
		return nil, shard.Collection{}, err
	}
	return mapOf(ctx, func(ctx context.Context, filter any) ([]bsoncore.Document, error) {
		return n.configFind(ctx, "chunks", filter)
	}, docs[0])
}

// mapOf builds the routing table of a config.collections document from
// its config.chunks documents, which findChunks reads.
func mapOf(ctx context.Context, findChunks func(ctx context.Context, filter any) ([]bsoncore.Document, error), collDoc bsoncore.Document) (*shard.Map, shard.Collection, error) {
	coll, err := shard.ParseCollection(collDoc)
	if err != nil {
		return nil, coll, err
	}
	chunks, err := findChunks(ctx, bson.D{{Key: "uuid", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: coll.UUID[:]}}})
	if err != nil {
		return nil, coll, err
	}
	m, err := shard.MapFromConfig(coll, chunks)
	return m, coll, err
}

// localChunks reads config.chunks on this server (a config server).
func (n *Node) localChunks(ctx context.Context, filter any) ([]bsoncore.Document, error) {
	return n.localFind(ctx, "config", "chunks", filter)
}

// current returns the collection's map, loading it the first time, and
// every time while an incarnation this shard dropped may still be listed.
func (n *Node) current(ctx context.Context, cm *collMeta, force bool) (*shard.Map, shard.Collection, error) {
	cm.mu.Lock()
	loaded, dropped := cm.loaded, cm.drop.on
	cm.mu.Unlock()
	if force || !loaded || dropped {
		if err := n.refresh(ctx, cm); err != nil {
			return nil, shard.Collection{}, err
		}
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.m, cm.coll, nil
}

// Admit checks a command against the filtering metadata (commands.Sharding).
// A read whose shardVersion names the collection's sharded version gets
// the ownership filter of the same routing table the version was judged
// by (its SHARDING_FILTER).
func (n *Node) Admit(ctx context.Context, ns string, write bool, sv, dv bsoncore.Value) (func(), func(bsoncore.Document) bool, error) {
	if !n.opts.ShardSvr {
		if sv.Type != 0 || dv.Type != 0 {
			return nil, nil, mongoerr.New(mongoerr.InvalidOptions, "shardVersion and databaseVersion are for shards: this server was not started with --shardsvr")
		}
		return nil, nil, nil
	}
	if strings.HasPrefix(ns, "config.") || strings.HasPrefix(ns, "admin.") || strings.HasPrefix(ns, "local.") {
		return nil, nil, nil // a shard's own metadata, never sharded
	}
	cm := n.meta(ns)
	var release func()
	if write {
		if err := cm.enter(ctx); err != nil {
			return nil, nil, err
		}
		release = cm.leave
	}
	fail := func(err error) (func(), func(bsoncore.Document) bool, error) {
		if release != nil {
			release()
		}
		return nil, nil, err
	}
	if dv.Type != 0 {
		if err := n.checkDatabaseVersion(ctx, ns[:strings.IndexByte(ns, '.')], dv); err != nil {
			return fail(err)
		}
	}
	if sv.Type == 0 {
		return release, nil, nil
	}
	received, err := shard.ParseShardVersion(sv)
	if err != nil {
		return fail(err)
	}
	id, err := n.shardIdentity(ctx)
	if err != nil {
		return fail(err)
	}
	if _, _, err := n.current(ctx, cm, false); err != nil {
		return fail(err)
	}
	m, have := cm.versionOf(id.ShardName)
	if !received.Compatible(have) {
		// The router may know a newer version than this shard (a
		// migration committed): refresh once, then judge.
		if err := n.refresh(ctx, cm); err != nil {
			return fail(err)
		}
		m, have = cm.versionOf(id.ShardName)
		if !received.Compatible(have) {
			return fail(shard.StaleConfigError(ns, received, &have, id.ShardName, "the shard's version differs from the one the command carries"))
		}
	}
	if m == nil || received.IsUnsharded() {
		return release, nil, nil
	}
	return release, owns(m, id.ShardName), nil
}

// owns is the SHARDING_FILTER of shard me by routing table m: whether a
// document's shard key lies in a chunk m gives me. A document whose key
// cannot be placed (an array in it, which a sharded collection refuses)
// is kept: the filter drops only what m shows belongs elsewhere.
func owns(m *shard.Map, me string) func(bsoncore.Document) bool {
	return func(doc bsoncore.Document) bool {
		s, err := m.ShardFor(doc)
		return err != nil || s == me
	}
}

// inCritical reports whether a critical section of the collection is on.
func (cm *collMeta) inCritical() bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.crit != nil
}

// enter admits a holder of the gate (a write, or a transaction's first
// write here): it waits while a critical section is on or waits to begin.
func (cm *collMeta) enter(ctx context.Context) error {
	for {
		cm.mu.Lock()
		crit := cm.crit
		if crit == nil {
			cm.holders++
			cm.mu.Unlock()
			return nil
		}
		cm.mu.Unlock()
		select {
		case <-crit:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// leave ends a hold of the gate.
func (cm *collMeta) leave() {
	cm.mu.Lock()
	cm.holders--
	if cm.holders == 0 && cm.drained != nil {
		close(cm.drained)
		cm.drained = nil
	}
	cm.mu.Unlock()
}

// enterCritical begins ns's critical section: later writes wait from now
// on, and it begins once the holders are gone — the writes in flight (with
// their oplog entries) and the open transactions that wrote here, which
// commit or abort first (MongoDB's transactions hold their collection
// locks). Past wait it gives up with LockTimeout, as mongod's migration
// does past migrationLockAcquisitionMaxWaitMS, and the waiting writes go
// on. exit ends it. One critical section of a collection at a time.
func (cm *collMeta) enterCritical(wait time.Duration) (exit func(), err error) {
	cm.mu.Lock()
	if cm.crit != nil {
		cm.mu.Unlock()
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s is already in a critical section", cm.ns)
	}
	ch := make(chan struct{})
	cm.crit = ch
	var drained chan struct{}
	if cm.holders > 0 {
		drained = make(chan struct{})
		cm.drained = drained
	}
	cm.mu.Unlock()
	var once sync.Once
	exit = func() {
		once.Do(func() {
			cm.mu.Lock()
			cm.crit, cm.drained = nil, nil
			cm.mu.Unlock()
			close(ch)
		})
	}
	if drained == nil {
		return exit, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-drained:
		return exit, nil
	case <-timer.C:
		cm.mu.Lock()
		holders := cm.holders
		cm.mu.Unlock()
		exit()
		return nil, mongoerr.New(mongoerr.LockTimeout, "could not enter the critical section of %s within %s (migrationLockAcquisitionMaxWaitMS): %d writes or open transactions still hold it", cm.ns, wait, holders)
	}
}
