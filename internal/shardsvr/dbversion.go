package shardsvr

import (
	"bytes"
	"context"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// dbMeta is a database's version as this shard last read it from
// config.databases (MongoDB's DatabaseShardingState): a command whose
// databaseVersion equals it is admitted without asking the config
// servers; any other is judged by a fresh read, which the cache then
// holds.
type dbMeta struct {
	mu      sync.Mutex
	version bsoncore.Document // {uuid, timestamp, lastMod}; nil: read at the next command
	gen     uint64            // bumped by every drop: a read begun before it is not kept
	drop    dropMark
}

// dropMark remembers the incarnation of a database or collection this
// shard has dropped, until the config servers stop listing it: a version
// of that incarnation is judged by a fresh read on every command and never
// cached, since the config servers' entry for it is about to go (the
// router drops on the shards first, then in config).
type dropMark struct {
	on    bool
	known bool     // uuid is the dropped incarnation's; false: any listed incarnation is suspect
	uuid  [16]byte // of the dropped incarnation
}

// suspect reports whether an entry the config servers list with uuid
// (nil: none listed) may be the dropped incarnation, and clears the mark
// once the config servers show the drop is through (nothing listed, or
// another incarnation).
func (d *dropMark) suspect(uuid []byte) bool {
	if !d.on {
		return false
	}
	if uuid == nil || d.known && !bytes.Equal(uuid, d.uuid[:]) {
		*d = dropMark{}
		return false
	}
	return true
}

// set marks the incarnation uuid (nil: unknown) as dropped.
func (d *dropMark) set(uuid []byte) {
	*d = dropMark{on: true}
	if len(uuid) == 16 {
		d.known = true
		copy(d.uuid[:], uuid)
	}
}

func (n *Node) dbMeta(db string) *dbMeta {
	n.mu.Lock()
	defer n.mu.Unlock()
	dm := n.dbs[db]
	if dm == nil {
		dm = &dbMeta{}
		n.dbs[db] = dm
	}
	return dm
}

// uuidOf is a version document's uuid (nil when it has none).
func uuidOf(version bsoncore.Document) []byte {
	if version == nil {
		return nil
	}
	_, data, _ := version.Lookup("uuid").BinaryOK()
	return data
}

// sameDBVersion compares databaseVersions as MongoDB does: the same
// incarnation (uuid) and the same lastMod.
func sameDBVersion(got, want bsoncore.Document) bool {
	return want != nil && bytes.Equal(got.Lookup("uuid").Data, want.Lookup("uuid").Data) &&
		bytes.Equal(got.Lookup("lastMod").Data, want.Lookup("lastMod").Data)
}

// checkDatabaseVersion compares a databaseVersion {uuid, timestamp,
// lastMod} with db's: the cached one when they agree, else config.databases'
// entry, read now (and cached unless it is of an incarnation this shard
// dropped).
func (n *Node) checkDatabaseVersion(ctx context.Context, db string, dv bsoncore.Value) error {
	got, ok := dv.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "databaseVersion must be a document {uuid, timestamp, lastMod}")
	}
	dm := n.dbMeta(db)
	dm.mu.Lock()
	cached, gen := dm.version, dm.gen
	dm.mu.Unlock()
	if sameDBVersion(got, cached) {
		if invariants.Enabled {
			n.checkCachedDBVersion(ctx, db, dm, cached, gen)
		}
		return nil
	}
	want, err := n.readDBVersion(ctx, db)
	if err != nil {
		return err
	}
	dm.mu.Lock()
	if dm.gen == gen && !dm.drop.suspect(uuidOf(want)) {
		dm.version = want
	}
	dm.mu.Unlock()
	if sameDBVersion(got, want) {
		return nil
	}
	e := mongoerr.New(mongoerr.StaleDbVersion, "database version mismatch for %s: received %s, config servers hold %s", db, got, want)
	info := bsoncore.NewDocumentBuilder().AppendString("db", db).AppendDocument("vReceived", got)
	if want != nil {
		info.AppendDocument("vWanted", want)
	}
	e.Extra = append(e.Extra, mongoerr.Field{Name: "errInfo", Value: rawDoc(info.Build())})
	return e
}

// readDBVersion is config.databases' version of db (nil: not listed).
func (n *Node) readDBVersion(ctx context.Context, db string) (bsoncore.Document, error) {
	docs, err := n.configFind(ctx, "databases", bson.D{{Key: "_id", Value: db}})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	v, _ := docs[0].Lookup("version").DocumentOK()
	return v, nil
}

// checkCachedDBVersion is invariant "Database versions are the config
// servers'" at a cache hit: config.databases holds the cached version,
// unless a drop on this shard began since the hit (gen moved).
func (n *Node) checkCachedDBVersion(ctx context.Context, db string, dm *dbMeta, cached bsoncore.Document, gen uint64) {
	want, err := n.readDBVersion(ctx, db)
	if err != nil {
		return // the config servers cannot say; the check waits for a read that works
	}
	dm.mu.Lock()
	moved := dm.gen != gen
	dm.mu.Unlock()
	if !moved && !sameDBVersion(cached, want) {
		invariants.Fail("Database versions are the config servers'", "shard admitted %s by its cached version %s; config.databases holds %s", db, cached, want)
	}
}

// Dropped is called before this shard drops database db (coll "") or the
// collection db.coll (commands.Sharding). It forgets the cached versions
// of what goes and marks its incarnation dropped (dropMark): until the
// config servers no longer list it, commands are judged by reading them,
// so a router that still routes by the dropped incarnation is refused
// (StaleDbVersion, StaleConfig) once they have caught up, and nothing is
// ever admitted by a cached version of it.
func (n *Node) Dropped(ctx context.Context, db, coll string) {
	if !n.opts.ShardSvr || db == "config" || db == "admin" || db == "local" {
		return
	}
	if coll == "" {
		dm := n.dbMeta(db)
		dm.mu.Lock()
		uuid := uuidOf(dm.version)
		dm.version = nil
		dm.gen++
		dm.drop.set(uuid)
		gen := dm.gen
		dm.mu.Unlock()
		if uuid == nil {
			// Not cached: learn which incarnation is listed (a failed
			// read leaves any listed one suspect).
			if want, err := n.readDBVersion(ctx, db); err == nil {
				dm.mu.Lock()
				if dm.gen == gen {
					dm.drop.set(uuidOf(want))
					dm.drop.suspect(uuidOf(want)) // nothing listed: nothing to guard
				}
				dm.mu.Unlock()
			}
		}
		n.mu.Lock()
		var cms []*collMeta
		for ns, cm := range n.colls {
			if strings.HasPrefix(ns, db+".") {
				cms = append(cms, cm)
			}
		}
		n.mu.Unlock()
		for _, cm := range cms {
			n.collDropped(ctx, cm)
		}
		return
	}
	n.collDropped(ctx, n.meta(db+"."+coll))
}

// collDropped marks a collection's sharded incarnation dropped: Admit
// then reloads its routing table for every command until the config
// servers list another incarnation or none.
func (n *Node) collDropped(ctx context.Context, cm *collMeta) {
	cm.mu.Lock()
	loaded, m, uuid := cm.loaded, cm.m, cm.coll.UUID
	cm.mu.Unlock()
	if loaded && m == nil {
		return // unsharded here: no shard version to outlive the drop
	}
	if loaded {
		cm.mu.Lock()
		cm.drop.set(uuid[:])
		cm.mu.Unlock()
		return
	}
	docs, err := n.configFind(ctx, "collections", bson.D{{Key: "_id", Value: cm.ns}})
	cm.mu.Lock()
	defer cm.mu.Unlock()
	switch {
	case err != nil:
		cm.drop.set(nil)
	case len(docs) > 0:
		_, data, _ := docs[0].Lookup("uuid").BinaryOK()
		cm.drop.set(data)
		if data == nil {
			cm.drop.set(nil)
		}
	}
}

// flushRoutingTable is _flushRoutingTableCacheUpdates: reload a
// collection's routing table from the config servers now. A router sends
// it to the shards of a collection it has just sharded or refined, so that
// a shard that cached the collection as unsharded (or by its old key) no
// longer admits another router's version from before the change.
func (n *Node) flushRoutingTable(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, ok := body.Index(0).Value().StringValueOK()
	if !ok || strings.IndexByte(ns, '.') <= 0 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "_flushRoutingTableCacheUpdates needs a namespace db.collection")
	}
	if v, err := body.LookupErr("syncFromConfig"); err == nil {
		if _, ok := v.BooleanOK(); !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_flushRoutingTableCacheUpdates.syncFromConfig' is the wrong type '%s', expected type 'bool'", v.Type)
		}
	}
	hang(ctx, n.hangBeforeFlush)
	if err := n.reload(ctx, n.meta(ns), true); err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().Build(), nil
}
