package router

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// The cluster's metadata commands. The router runs them itself against
// the config servers (majority writes): Cairn's config servers are plain
// replica sets holding the config database, without MongoDB's
// _configsvr* commands (see doc.go).

func cmdAddShard(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	conn := req.str("addShard")
	setName, hosts, err := memberclient.ParseConnString(conn)
	if err != nil {
		return nil, err
	}
	set := r.members.Set(setName, hosts)
	defer set.Close()
	primary, err := set.FindPrimary(ctx, 5*time.Second)
	if err != nil {
		return nil, mongoerr.New(mongoerr.OperationFailed, "failed to connect to the shard %s: %v", conn, err)
	}
	hello, err := primary.Run(ctx, marshal(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}}))
	if err != nil {
		return nil, mongoerr.New(mongoerr.OperationFailed, "failed to run hello on the shard %s: %v", conn, err)
	}
	if msg, _ := hello.Lookup("msg").StringValueOK(); msg == "isdbgrid" {
		return nil, mongoerr.New(mongoerr.OperationFailed, "can't add a mongos process as a shard")
	}
	if cs, _ := hello.Lookup("configsvr").AsInt32OK(); cs != 0 {
		return nil, mongoerr.New(mongoerr.OperationFailed, "Cannot add %s as a shard since it is a config server", conn)
	}
	actualSet, _ := hello.Lookup("setName").StringValueOK()
	if setName != "" && actualSet != setName {
		return nil, mongoerr.New(mongoerr.OperationFailed, "the host %s belongs to replica set %q, not %q", primary.Addr(), actualSet, setName)
	}
	if setName == "" && actualSet != "" {
		return nil, mongoerr.New(mongoerr.OperationFailed, "host is part of set %s; use replica set url format <setname>/<server1>,<server2>, ...", actualSet)
	}
	id := req.str("name")
	if id == "" {
		id = actualSet
	}
	hostStr := conn
	if actualSet != "" {
		hostStr = actualSet + "/" + strings.Join(hosts, ",")
	}
	existing, err := r.configFind(ctx, "shards", nil, nil)
	if err != nil {
		return nil, err
	}
	for _, d := range existing {
		eid, _ := d.Lookup("_id").StringValueOK()
		ehost, _ := d.Lookup("host").StringValueOK()
		if ehost == hostStr && (id == "" || eid == id) {
			return okReply("shardAdded", eid), nil // already there: addShard is idempotent
		}
		if eid == id {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "A shard named %s already exists with host %s", id, ehost)
		}
	}
	if id == "" {
		id = fmt.Sprintf("shard%04d", len(existing))
	}
	clusterID, err := r.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	identity := bson.D{{Key: "shardName", Value: id}, {Key: "clusterId", Value: clusterID}, {Key: "configsvrConnectionString", Value: r.config.ConnString()}}
	reply, err := primary.Run(ctx, marshal(bson.D{{Key: "_addShard", Value: 1}, {Key: "shardIdentity", Value: identity}, {Key: "$db", Value: "admin"}}))
	if err == nil {
		_, err = memberclient.Check(reply, nil)
	}
	if err != nil { // a server not started with --shardsvr refuses it: so is the shard
		return nil, mongoerr.New(mongoerr.OperationFailed, "the shard %s refused its shard identity: %v", conn, err)
	}
	prefix, err := r.assignIDPrefix(ctx, primary, existing)
	if err != nil {
		return nil, err
	}
	doc := bson.D{{Key: "_id", Value: id}, {Key: "host", Value: hostStr}, {Key: "state", Value: int32(1)},
		{Key: "topologyTime", Value: bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}},
		{Key: "documentIdUniquePrefix", Value: int32(prefix)}}
	if err := r.configInsert(ctx, "shards", marshal(doc)); err != nil {
		return nil, err
	}
	_ = r.cache.loadShards(ctx)
	return okReply("shardAdded", id), nil
}

// assignIDPrefix gives a new shard its own documentIdUniquePrefix, so the
// sequential ids its primaries make are unique in the cluster: the one it
// has when no other shard holds it (its existing ids keep their prefix),
// else the smallest free one from 1; it is set on the shard and recorded
// in its config.shards entry.
func (r *Router) assignIDPrefix(ctx context.Context, primary *memberclient.Host, shards []bsoncore.Document) (int64, error) {
	taken := map[int64]bool{}
	for _, d := range shards {
		if p, ok := d.Lookup("documentIdUniquePrefix").AsInt64OK(); ok {
			taken[p] = true
		}
	}
	reply, err := memberclient.Check(primary.Run(ctx, marshal(bson.D{{Key: "getParameter", Value: 1}, {Key: "documentIdUniquePrefix", Value: 1}, {Key: "$db", Value: "admin"}})))
	if err != nil {
		return 0, mongoerr.New(mongoerr.OperationFailed, "reading the shard's documentIdUniquePrefix: %v", err)
	}
	prefix, _ := reply.Lookup("documentIdUniquePrefix").AsInt64OK()
	if prefix == 0 || taken[prefix] {
		for prefix = 1; taken[prefix]; prefix++ {
		}
		if prefix > 65535 {
			return 0, mongoerr.New(mongoerr.OperationFailed, "every documentIdUniquePrefix is taken")
		}
		if _, err := memberclient.Check(primary.Run(ctx, marshal(bson.D{{Key: "setParameter", Value: 1}, {Key: "documentIdUniquePrefix", Value: prefix}, {Key: "$db", Value: "admin"}}))); err != nil {
			return 0, mongoerr.New(mongoerr.OperationFailed, "setting the shard's documentIdUniquePrefix: %v", err)
		}
	}
	return prefix, nil
}

func cmdListShards(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	var filter any // listShards' filter (sh.listShards(filter)): a query on config.shards
	if v, ok := req.arg("filter"); ok {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'listShards.filter' is the wrong type '%s', expected type 'object'", v.Type)
		}
		filter = bson.Raw(d)
	}
	docs, err := r.configFind(ctx, "shards", filter, bson.D{{Key: "_id", Value: 1}})
	if err != nil {
		return nil, err
	}
	arr := bson.A{}
	for _, d := range docs {
		arr = append(arr, bson.Raw(d))
	}
	return okReply("shards", arr), nil
}

func cmdEnableSharding(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	db := req.str("enableSharding")
	if db == "" || db == "admin" || db == "config" || db == "local" || strings.ContainsAny(db, "./\\ \"$") {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "invalid db name specified: %s", db)
	}
	primary := req.str("primaryShard")
	if primary != "" {
		if _, err := r.cache.shard(ctx, primary); err != nil {
			return nil, err
		}
	}
	d, err := r.cache.db(ctx, db, false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		if err := r.cache.createDB(ctx, db, primary); err != nil {
			return nil, err
		}
	} else if primary != "" && d.primary != primary {
		return nil, mongoerr.New(mongoerr.NamespaceExists, "database %s already exists on shard %s", db, d.primary)
	}
	return okReply(), nil
}

func splitNS(ns string) (db, coll string, err error) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return "", "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	return db, coll, nil
}

// shardKeyIndexName is the name MongoDB's createIndex gives the key.
func shardKeyIndexName(key bsoncore.Document) string {
	els, _ := key.Elements()
	parts := make([]string, 0, 2*len(els))
	for _, el := range els {
		v := el.Value()
		s, ok := v.StringValueOK()
		if !ok {
			n, _ := v.AsInt64OK()
			s = fmt.Sprint(n)
		}
		parts = append(parts, el.Key(), s)
	}
	return strings.Join(parts, "_")
}

// indexSupports reports whether an index on key starts with the shard
// key pattern's fields (a hashed field by a hashed index field).
func indexSupports(key bsoncore.Document, p *shard.Pattern) bool {
	els, err := key.Elements()
	if err != nil || len(els) < len(p.Fields) {
		return false
	}
	for i, f := range p.Fields {
		if els[i].Key() != f.Path {
			return false
		}
		s, isStr := els[i].Value().StringValueOK()
		if f.Hashed != (isStr && s == "hashed") {
			return false
		}
		if !f.Hashed {
			if n, ok := els[i].Value().AsFloat64OK(); !ok || n != 1 {
				return false
			}
		}
	}
	return true
}

// shardIndexes reads ns's indexes and whether it holds a document, on
// shard id.
func (r *Router) shardIndexes(ctx context.Context, rt *routing, id, coll string) (specs []bsoncore.Document, nonEmpty bool, err error) {
	reply, err := r.toShard(ctx, id, rt, bsoncore.NewDocumentBuilder().AppendString("listIndexes", coll).Build())
	if err != nil {
		if mongoerr.CodeOf(err) == mongoerr.NamespaceNotFound {
			return nil, false, nil
		}
		return nil, false, err
	}
	specs = arrayDocs(reply.Lookup("cursor").Document().Lookup("firstBatch"))
	reply, err = r.toShard(ctx, id, rt, bsoncore.NewDocumentBuilder().AppendString("find", coll).AppendInt32("limit", 1).Build())
	if err != nil {
		return nil, false, err
	}
	nonEmpty = len(arrayDocs(reply.Lookup("cursor").Document().Lookup("firstBatch"))) > 0
	return specs, nonEmpty, nil
}

// createCommand is the create command that makes coll on another shard as
// the primary has it: its options from listCollections (a collection the
// primary does not have yet is created there first).
func (r *Router) createCommand(ctx context.Context, rt *routing, coll string) (bsoncore.Document, error) {
	list := func() (bsoncore.Document, error) {
		body := bsoncore.NewDocumentBuilder().AppendInt32("listCollections", 1).
			AppendDocument("filter", bsoncore.NewDocumentBuilder().AppendString("name", coll).Build()).Build()
		reply, err := r.toShard(ctx, rt.db.primary, rt, body)
		if err != nil {
			return nil, err
		}
		for _, c := range arrayDocs(reply.Lookup("cursor", "firstBatch")) {
			opts, _ := c.Lookup("options").DocumentOK()
			return opts, nil
		}
		return nil, nil
	}
	opts, err := list()
	if err != nil {
		return nil, err
	}
	if opts == nil {
		body := bsoncore.NewDocumentBuilder().AppendString("create", coll).Build()
		if _, err := r.toShard(ctx, rt.db.primary, rt, body); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
			return nil, err
		}
		if opts, err = list(); err != nil {
			return nil, err
		}
	}
	b := bsoncore.NewDocumentBuilder().AppendString("create", coll)
	els, _ := opts.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build(), nil
}

// ensureShardKeyIndex creates the shard key index on shard id.
func (r *Router) ensureShardKeyIndex(ctx context.Context, rt *routing, id, coll string, key bsoncore.Document, unique, simple bool) error {
	if bytes.Equal(key, bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()) {
		return nil
	}
	spec := bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", shardKeyIndexName(key))
	if unique {
		spec.AppendBoolean("unique", true)
	}
	if simple { // the collection has a default collation; chunks are in the simple order
		spec.AppendDocument("collation", bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build())
	}
	body := bsoncore.NewDocumentBuilder().AppendString("createIndexes", coll).
		AppendArray("indexes", bsoncore.NewArrayBuilder().AppendDocument(spec.Build()).Build()).Build()
	_, err := r.toShard(ctx, id, rt, body)
	return err
}

var allowedShardCollection = map[string]bool{
	"shardCollection": true, "key": true, "unique": true, "numInitialChunks": true, "collation": true,
	"$db": true, "lsid": true, "$clusterTime": true, "$readPreference": true, "writeConcern": true, "comment": true, "maxTimeMS": true,
}

func cmdShardCollection(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	els, _ := req.body.Elements()
	for _, el := range els {
		if !allowedShardCollection[el.Key()] {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "shardCollection option %q is not supported by Cairn's router yet", el.Key())
		}
	}
	ns := req.str("shardCollection")
	db, coll, err := splitNS(ns)
	if err != nil {
		return nil, err
	}
	if db == "config" || db == "admin" || db == "local" {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "can't shard %s collections", db)
	}
	key, ok := req.body.Lookup("key").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'shardCollection.key' is missing but a required field")
	}
	simpleGiven := false
	if c, ok := req.body.Lookup("collation").DocumentOK(); ok {
		if loc, _ := c.Lookup("locale").StringValueOK(); loc != "simple" {
			return nil, mongoerr.New(mongoerr.BadValue, "The collation for shardCollection must be {locale: 'simple'}, but found: %s", c)
		}
		simpleGiven = true
	}
	p, err := shard.ParsePattern(key)
	if err != nil {
		return nil, err
	}
	unique, _ := req.body.Lookup("unique").BooleanOK()
	if unique && p.Fields[0].Hashed {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
	}
	numInitial, _ := req.body.Lookup("numInitialChunks").AsInt64OK()
	if numInitial != 0 && !p.Fields[0].Hashed {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "numInitialChunks is only supported when the collection is empty and has a hashed field as the shard key prefix")
	}
	release, err := r.lockNS(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	var out bsoncore.Document
	err = r.retry(ctx, ns, func() error {
		rt, err := r.route(ctx, db, coll, true)
		if err != nil {
			return err
		}
		if rt.sharded() {
			if bytes.Equal(rt.coll.coll.Key, key) && rt.coll.coll.Unique == unique {
				// A retry after a flush that failed flushes again.
				if err := r.flushShards(ctx, ns, withPrimary(rt, rt.allShards())); err != nil {
					return err
				}
				out = okReply("collectionsharded", ns)
				return nil
			}
			return mongoerr.New(mongoerr.AlreadyInitialized, "sharding already enabled for collection %s with options { key: %s, unique: %v }", ns, rt.coll.coll.Key, rt.coll.coll.Unique)
		}
		specs, nonEmpty, err := r.shardIndexes(ctx, rt, rt.db.primary, coll)
		if err != nil {
			return err
		}
		supported := false
		for _, s := range specs {
			k, _ := s.Lookup("key").DocumentOK()
			c, _ := s.Lookup("collation").DocumentOK()
			if indexSupports(k, p) && simpleCollation(c) {
				supported = true
			}
			if u, _ := s.Lookup("unique").BooleanOK(); u {
				if err := p.AllowsUniqueIndex(k); err != nil {
					return mongoerr.New(mongoerr.InvalidOptions, "can't shard collection '%s' with unique index on %s and proposed shard key %s. Uniqueness can't be maintained unless shard key is a prefix", ns, k, key)
				}
			}
		}
		if !supported && nonEmpty {
			return mongoerr.New(mongoerr.InvalidOptions, "Please create an index that starts with the proposed shard key before sharding the collection")
		}
		epoch := bson.NewObjectID()
		var m *shard.Map
		if p.Fields[0].Hashed && !nonEmpty {
			shards, err := r.cache.shardIDs(ctx)
			if err != nil {
				return err
			}
			var ids []string
			for _, s := range shards {
				if !s.draining {
					ids = append(ids, s.id)
				}
			}
			per := 2
			if numInitial > 0 {
				per = max(1, int(numInitial)/len(ids))
			}
			if m, err = shard.NewHashedMap(ns, p, epoch, ids, per); err != nil {
				return err
			}
		} else {
			m = shard.NewMap(ns, p, epoch, rt.db.primary)
		}
		owners := withPrimary(rt, nil)
		for _, c := range m.Chunks {
			seen := false
			for _, o := range owners {
				seen = seen || o == c.Shard
			}
			if !seen {
				owners = append(owners, c.Shard)
			}
		}
		createCmd, err := r.createCommand(ctx, rt, coll)
		if err != nil {
			return err
		}
		// A collection with a default collation is sharded only when the
		// command names the simple one (the shard key's order), as mongos;
		// the default goes to config.collections for the routers.
		defColl, _ := createCmd.Lookup("collation").DocumentOK()
		if simpleCollation(defColl) {
			defColl = nil
		} else if !simpleGiven {
			return mongoerr.New(mongoerr.BadValue, "Collection has default collation: %s. Must specify collation {locale: 'simple'}", defColl)
		}
		for _, o := range owners {
			if o != rt.db.primary {
				// Every shard holding chunks has the collection with the
				// primary's options (idGenerator, validator, collation).
				if _, err := r.toShard(ctx, o, rt, createCmd); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
					return err
				}
			} else if supported {
				continue
			}
			if err := r.ensureShardKeyIndex(ctx, rt, o, coll, key, unique, defColl != nil); err != nil {
				return err
			}
		}
		// The shards' critical section (mongod's shardCollection
		// coordinator holds one on the primary shard): from before the
		// config write until each shard reloaded its table, their writes
		// to ns wait, so another router's write from before (UNSHARDED)
		// is refused afterwards rather than admitted outside the chunks.
		reason := bson.D{{Key: "command", Value: "shardCollection"}, {Key: "ns", Value: ns}, {Key: "epoch", Value: epoch}}
		blocked, err := r.blockShards(ctx, db, coll, owners, reason)
		defer r.unblockShards(ctx, db, coll, blocked, reason)
		if err != nil {
			return err
		}
		now := nowTS()
		for i := range m.Chunks {
			m.Chunks[i].Since = now
		}
		uuid := newUUID()
		if err := r.configInsert(ctx, "chunks", m.ChunkDocs(uuid)...); err != nil {
			return err
		}
		c := shard.Collection{NS: ns, Epoch: epoch, Updated: time.Now(), Timestamp: now, UUID: uuid, Key: key, Unique: unique, DefaultCollation: defColl}
		if err := r.configInsert(ctx, "collections", c.Doc()); err != nil {
			return err
		}
		r.cache.invalidate(ns)
		if err := r.flushShards(ctx, ns, owners); err != nil {
			return err
		}
		out = okReply("collectionsharded", ns)
		return nil
	})
	return out, err
}

// shardedRouting takes ns's DDL lock and reads its routing, which must be
// of a sharded collection; the caller releases the lock.
func (r *Router) shardedRouting(ctx context.Context, ns string) (*routing, func(), error) {
	db, coll, err := splitNS(ns)
	if err != nil {
		return nil, nil, err
	}
	release, err := r.lockNS(ctx, ns)
	if err != nil {
		return nil, nil, err
	}
	r.cache.invalidate(ns) // chunk commands act on the config servers' latest
	rt, err := r.route(ctx, db, coll, false)
	if err == nil && !rt.sharded() {
		err = mongoerr.New(mongoerr.NamespaceNotSharded, "%s is not sharded", ns)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return rt, release, nil
}

// cloneMap copies a routing table (Split, Merge and Move change a map in
// place).
func cloneMap(ci *collInfo) (*shard.Map, error) {
	return shard.MapFromConfig(ci.coll, ci.m.ChunkDocs(ci.coll.UUID))
}

// commitMap writes the chunks of next that differ from the cached map's
// (new and changed ones by _id, then removed ones): chunk documents are
// rewritten one at a time, so a reader may see an overlap in between,
// which MapFromConfig refuses and loadColl reads again.
func (r *Router) commitMap(ctx context.Context, rt *routing, next *shard.Map) error {
	uuid := rt.coll.coll.UUID
	old := map[bson.ObjectID]bsoncore.Document{}
	for i, d := range rt.coll.m.ChunkDocs(uuid) {
		old[rt.coll.m.Chunks[i].ID] = d
	}
	keep := map[bson.ObjectID]bool{}
	for i, d := range next.ChunkDocs(uuid) {
		id := next.Chunks[i].ID
		keep[id] = true
		if bytes.Equal(old[id], d) {
			continue
		}
		if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "chunks"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.Raw(d)}, {Key: "upsert", Value: true}}}}}); err != nil {
			return err
		}
	}
	for id := range old {
		if !keep[id] {
			if err := r.configDelete(ctx, "chunks", bson.D{{Key: "_id", Value: id}}); err != nil {
				return err
			}
		}
	}
	if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "collections"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: rt.ns}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "lastmod", Value: time.Now()}}}}}}}}}); err != nil {
		return err
	}
	r.cache.invalidate(rt.ns)
	return nil
}

func cmdSplit(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns := req.str("split")
	middle, hasMiddle := req.body.Lookup("middle").DocumentOK()
	find, hasFind := req.body.Lookup("find").DocumentOK()
	_, hasBounds := req.arg("bounds")
	if n := btoi(hasMiddle) + btoi(hasFind) + btoi(hasBounds); n != 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "need to specify exactly one of find, bounds or middle")
	}
	rt, release, err := r.shardedRouting(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	if !hasMiddle {
		// sh.splitFind / bounds: split the chunk at its documents' median.
		var c *shard.Chunk
		if hasFind {
			key, err := rt.coll.m.Pattern.Extract(find)
			if err != nil {
				return nil, err
			}
			if c, err = rt.coll.m.ChunkFor(key); err != nil {
				return nil, err
			}
		} else {
			min, max, err := boundsArg(req)
			if err != nil || min == nil || max == nil {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "bounds must be an array of two shard keys")
			}
			i, err := chunkIndex(rt.coll.m, min, max)
			if err != nil {
				return nil, err
			}
			c = &rt.coll.m.Chunks[i]
		}
		if middle, err = r.chunkMedian(ctx, rt, c); err != nil {
			return nil, err
		}
	}
	if err := checkKeyShape(rt.coll.m.Pattern, middle); err != nil {
		return nil, err
	}
	next, err := cloneMap(rt.coll)
	if err != nil {
		return nil, err
	}
	if err := next.Split(middle); err != nil {
		return nil, err
	}
	if err := r.commitMap(ctx, rt, next); err != nil {
		return nil, err
	}
	return okReply(), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// chunkMedian is the median shard key of chunk c's documents, read from
// its shard: the shard key fields of the shard's documents (those whose
// first key field lies in the chunk's range, or all for a hashed first
// field), keyed and sorted here. It reads every such document's key, which
// a shard's splitVector would spare.
func (r *Router) chunkMedian(ctx context.Context, rt *routing, c *shard.Chunk) (bsoncore.Document, error) {
	p := rt.coll.m.Pattern
	proj := bsoncore.NewDocumentBuilder().AppendInt32("_id", 0)
	for _, f := range p.Fields {
		proj.AppendInt32(f.Path, 1)
	}
	filter := bsoncore.NewDocumentBuilder()
	if first := p.Fields[0]; !first.Hashed {
		lo, hi := c.Min.Lookup(first.Path), c.Max.Lookup(first.Path)
		filter.AppendDocument(first.Path, bsoncore.NewDocumentBuilder().AppendValue("$gte", lo).AppendValue("$lte", hi).Build())
	}
	_, coll, _ := splitNS(rt.ns)
	body := bsoncore.NewDocumentBuilder().AppendString("find", coll).AppendDocument("filter", filter.Build()).
		AppendDocument("projection", proj.Build()).Build()
	reply, err := r.toShard(ctx, c.Shard, rt, body)
	if err != nil {
		return nil, err
	}
	ctxp := &ctx
	src, err := r.streams(ctxp, []string{c.Shard}, rt, []bsoncore.Document{reply}, nil, nil)
	if err != nil {
		return nil, err
	}
	lo, _ := p.Encode(c.Min)
	hi, _ := p.Encode(c.Max)
	type keyed struct {
		enc []byte
		key bsoncore.Document
	}
	var keys []keyed
	for {
		d, err := src.Next()
		if err != nil {
			_ = src.Close()
			return nil, err
		}
		if d == nil {
			break
		}
		key, err := p.Extract(d)
		if err != nil {
			continue // an array in the key: no chunk owns it
		}
		enc, err := p.Encode(key)
		if err != nil || bytes.Compare(enc, lo) < 0 || bytes.Compare(enc, hi) >= 0 {
			continue
		}
		keys = append(keys, keyed{enc, key})
	}
	_ = src.Close()
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i].enc, keys[j].enc) < 0 })
	// The median, moved up past keys equal to the chunk's minimum (a
	// split point must lie strictly inside the chunk).
	for i := len(keys) / 2; i < len(keys); i++ {
		if !bytes.Equal(keys[i].enc, lo) {
			return keys[i].key, nil
		}
	}
	return nil, mongoerr.New(mongoerr.CannotSplit, "cannot split chunk [%s, %s) of %s: it holds no two distinct shard keys", c.Min, c.Max, rt.ns)
}

// checkKeyShape refuses a key document that is not the pattern's fields in
// order.
func checkKeyShape(p *shard.Pattern, key bsoncore.Document) error {
	els, err := key.Elements()
	if err != nil || len(els) != len(p.Fields) {
		return mongoerr.New(mongoerr.InvalidOptions, "%s is not a shard key of pattern %s", key, p)
	}
	for i, f := range p.Fields {
		if els[i].Key() != f.Path {
			return mongoerr.New(mongoerr.InvalidOptions, "%s is not a shard key of pattern %s", key, p)
		}
		if els[i].Value().Type == bsoncore.TypeArray {
			return mongoerr.New(mongoerr.ShardKeyNotFound, "Shard key cannot contain array values or array descendants.")
		}
	}
	return nil
}

// chunkIndex finds the chunk starting at min (and ending at max, when
// given).
func chunkIndex(m *shard.Map, min, max bsoncore.Document) (int, error) {
	lo, err := m.Pattern.Encode(min)
	if err != nil {
		return -1, err
	}
	for i, c := range m.Chunks {
		cmin, _ := m.Pattern.Encode(c.Min)
		if bytes.Equal(cmin, lo) {
			if max != nil {
				hi, err := m.Pattern.Encode(max)
				if err != nil {
					return -1, err
				}
				if cmax, _ := m.Pattern.Encode(c.Max); !bytes.Equal(cmax, hi) {
					break
				}
			}
			return i, nil
		}
	}
	return -1, mongoerr.New(mongoerr.IllegalOperation, "no chunk of %s has the bounds [%s, %s)", m.NS, min, max)
}

func boundsArg(req *request) (min, max bsoncore.Document, err error) {
	if v, ok := req.arg("bounds"); ok {
		arr, ok := v.ArrayOK()
		vals, _ := arr.Values()
		if !ok || len(vals) != 2 {
			return nil, nil, mongoerr.New(mongoerr.TypeMismatch, "bounds must be an array of two shard keys")
		}
		min, _ = vals[0].DocumentOK()
		max, _ = vals[1].DocumentOK()
		return min, max, nil
	}
	min, _ = req.body.Lookup("min").DocumentOK()
	max, _ = req.body.Lookup("max").DocumentOK()
	return min, max, nil
}

func cmdMergeChunks(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	rt, release, err := r.shardedRouting(ctx, req.str("mergeChunks"))
	if err != nil {
		return nil, err
	}
	defer release()
	min, max, err := boundsArg(req)
	if err != nil || min == nil || max == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "mergeChunks needs bounds: [min, max]")
	}
	m := rt.coll.m
	lo, err := chunkIndex(m, min, nil)
	if err != nil {
		return nil, err
	}
	hiKey, err := m.Pattern.Encode(max)
	if err != nil {
		return nil, err
	}
	hi := -1
	for i := lo; i < len(m.Chunks); i++ {
		if cmax, _ := m.Pattern.Encode(m.Chunks[i].Max); bytes.Equal(cmax, hiKey) {
			hi = i
			break
		}
	}
	if hi < 0 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "could not merge chunks of %s: no chunk ends at %s", m.NS, max)
	}
	if hi == lo {
		return okReply(), nil
	}
	next, err := cloneMap(rt.coll)
	if err != nil {
		return nil, err
	}
	if err := next.Merge(lo, hi); err != nil {
		return nil, err
	}
	if err := r.commitMap(ctx, rt, next); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// cmdMoveChunk checks the request and hands the move to the donor shard's
// _shardsvrMoveRange (MongoDB 7.0's donor-side command: copy, catch up,
// critical section, commit on the config servers, range deletion).
func cmdMoveChunk(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns := req.str(req.name)
	to := req.str("to")
	if req.name == "moveRange" {
		to = req.str("toShard")
	}
	if to == "" {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s needs the destination shard", req.name)
	}
	rt, release, err := r.shardedRouting(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	if rt.coll.coll.NoMigrations { // setAllowMigrations: false
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Collection %s is undergoing changes so moveChunk is not allowed.", ns)
	}
	if _, err := r.cache.shard(ctx, to); err != nil {
		return nil, mongoerr.New(mongoerr.ShardNotFound, "Could not find shard %s", to)
	}
	m := rt.coll.m
	var c *shard.Chunk
	if find, ok := req.body.Lookup("find").DocumentOK(); ok {
		key, err := m.Pattern.Extract(find)
		if err != nil {
			return nil, err
		}
		if c, err = m.ChunkFor(key); err != nil {
			return nil, err
		}
	} else {
		min, max, err := boundsArg(req)
		if err != nil || min == nil {
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s needs find, bounds or min", req.name)
		}
		i, err := chunkIndex(m, min, max)
		if err != nil {
			return nil, err
		}
		c = &m.Chunks[i]
	}
	if c.Shard == to {
		return okReply("millis", int32(0)), nil
	}
	cmd := bson.D{{Key: "_shardsvrMoveRange", Value: ns}, {Key: "toShard", Value: to}, {Key: "min", Value: bson.Raw(c.Min)},
		{Key: "max", Value: bson.Raw(c.Max)}, {Key: "waitForDelete", Value: req.body.Lookup("_waitForDelete").Type == bsoncore.TypeBoolean},
		{Key: "epoch", Value: m.Epoch}, {Key: "collectionTimestamp", Value: bson.Timestamp{T: rt.coll.coll.Timestamp.T(), I: rt.coll.coll.Timestamp.I()}},
		{Key: "fromShard", Value: c.Shard}, {Key: "writeConcern", Value: majority}} // whole chunks: no maxChunkSizeBytes (the shard's donor needs min and max)
	if _, err := r.toShard(ctx, c.Shard, &routing{db: &dbInfo{name: "admin"}}, marshal(cmd)); err != nil {
		return nil, err
	}
	r.cache.invalidate(ns)
	return okReply(), nil
}

func cmdShardZone(add bool) handler {
	return func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
		name := req.str(req.name)
		zone := req.str("zone")
		if zone == "" {
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s needs a zone", req.name)
		}
		if _, err := r.cache.shard(ctx, name); err != nil {
			return nil, err
		}
		op := "$addToSet"
		if !add {
			op = "$pull"
			ranges, err := r.configFind(ctx, "tags", bson.D{{Key: "tag", Value: zone}}, nil)
			if err != nil {
				return nil, err
			}
			holders, err := r.configFind(ctx, "shards", bson.D{{Key: "tags", Value: zone}}, nil)
			if err != nil {
				return nil, err
			}
			if len(ranges) > 0 && len(holders) == 1 {
				return nil, mongoerr.New(mongoerr.IllegalOperation, "zone %s is still in use by a range; remove the range first", zone)
			}
		}
		if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "shards"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: name}}}, {Key: "u", Value: bson.D{{Key: op, Value: bson.D{{Key: "tags", Value: zone}}}}}}}}}); err != nil {
			return nil, err
		}
		return okReply(), nil
	}
}

func cmdUpdateZoneKeyRange(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns := req.str("updateZoneKeyRange")
	min, max, err := boundsArg(req)
	if err != nil || min == nil || max == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "updateZoneKeyRange needs min and max")
	}
	rt, release, err := r.shardedRouting(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	p := rt.coll.m.Pattern
	if err := checkKeyShape(p, min); err != nil {
		return nil, err
	}
	if err := checkKeyShape(p, max); err != nil {
		return nil, err
	}
	lo, _ := p.Encode(min)
	hi, _ := p.Encode(max)
	if bytes.Compare(lo, hi) >= 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "min: %s should be less than max: %s", min, max)
	}
	zoneV, _ := req.arg("zone")
	if zoneV.Type == bsoncore.TypeNull {
		if err := r.configDelete(ctx, "tags", bson.D{{Key: "ns", Value: ns}, {Key: "min", Value: bson.Raw(min)}, {Key: "max", Value: bson.Raw(max)}}); err != nil {
			return nil, err
		}
		return okReply(), nil
	}
	zone, ok := zoneV.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "zone must be a string or null")
	}
	holders, err := r.configFind(ctx, "shards", bson.D{{Key: "tags", Value: zone}}, nil)
	if err != nil {
		return nil, err
	}
	if len(holders) == 0 {
		return nil, mongoerr.New(mongoerr.ZoneNotFound, "zone %s does not exist", zone)
	}
	existing, err := r.configFind(ctx, "tags", bson.D{{Key: "ns", Value: ns}}, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range existing {
		tmin, _ := t.Lookup("min").DocumentOK()
		tmax, _ := t.Lookup("max").DocumentOK()
		a, _ := p.Encode(tmin)
		b, _ := p.Encode(tmax)
		if bytes.Equal(a, lo) && bytes.Equal(b, hi) {
			if tz, _ := t.Lookup("tag").StringValueOK(); tz == zone {
				return okReply(), nil
			}
		}
		if bytes.Compare(lo, b) < 0 && bytes.Compare(a, hi) < 0 {
			return nil, mongoerr.New(mongoerr.RangeOverlapConflict, "zone range: [%s, %s) on %s is overlapping with existing: [%s, %s)", min, max, ns, tmin, tmax)
		}
	}
	doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "ns", Value: ns}, {Key: "min", Value: bson.Raw(min)}, {Key: "max", Value: bson.Raw(max)}, {Key: "tag", Value: zone}}
	if err := r.configInsert(ctx, "tags", marshal(doc)); err != nil {
		return nil, err
	}
	return okReply(), nil
}

func cmdBalancerMode(mode string) handler {
	return func(ctx context.Context, r *Router, _ *request) (bsoncore.Document, error) {
		if err := r.configUpsert(ctx, "settings", bson.D{{Key: "_id", Value: "balancer"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "mode", Value: mode}, {Key: "stopped", Value: mode == "off"}}}}); err != nil {
			return nil, err
		}
		return okReply(), nil
	}
}

func cmdBalancerStatus(ctx context.Context, r *Router, _ *request) (bsoncore.Document, error) {
	st, err := r.configCmd(ctx, bson.D{{Key: "_configsvrBalancerStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil {
		return nil, err
	}
	mode, _ := st.Lookup("mode").StringValueOK()
	inRound, _ := st.Lookup("inBalancerRound").BooleanOK()
	rounds, _ := st.Lookup("numBalancerRounds").AsInt64OK()
	return okReply("mode", mode, "inBalancerRound", inRound, "numBalancerRounds", rounds), nil
}

func cmdRemoveShard(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	id := req.str("removeShard")
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	var target *shardInfo
	for _, s := range shards {
		if s.id == id {
			target = s
		}
	}
	if target == nil {
		return nil, mongoerr.New(mongoerr.ShardNotFound, "Shard %s not found", id)
	}
	if len(shards) == 1 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Operation not allowed because it would remove the last shard")
	}
	dbs, err := r.configFind(ctx, "databases", bson.D{{Key: "primary", Value: id}}, nil)
	if err != nil {
		return nil, err
	}
	dbsToMove := bson.A{}
	for _, d := range dbs {
		n, _ := d.Lookup("_id").StringValueOK()
		dbsToMove = append(dbsToMove, n)
	}
	note := "you need to call movePrimary for these databases (Cairn's router has no movePrimary yet) and let the balancer move the chunks"
	if !target.draining {
		if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "shards"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "draining", Value: true}}}}}}}}}); err != nil {
			return nil, err
		}
		_ = r.cache.loadShards(ctx)
		return okReply("msg", "draining started successfully", "state", "started", "shard", id, "note", note, "dbsToMove", dbsToMove), nil
	}
	chunks, err := r.configFind(ctx, "chunks", bson.D{{Key: "shard", Value: id}}, nil)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 0 && len(dbs) == 0 {
		if err := r.configDelete(ctx, "shards", bson.D{{Key: "_id", Value: id}}); err != nil {
			return nil, err
		}
		_ = r.cache.loadShards(ctx)
		return okReply("msg", "removeshard completed successfully", "state", "completed", "shard", id), nil
	}
	return okReply("msg", "draining ongoing", "state", "ongoing", "remaining",
		bson.D{{Key: "chunks", Value: int64(len(chunks))}, {Key: "dbs", Value: int64(len(dbs))}, {Key: "jumboChunks", Value: int64(0)}},
		"note", note, "dbsToMove", dbsToMove), nil
}

// cmdRefine extends a collection's shard key with more fields: every chunk
// bound gets MinKey for them (MaxKey for the global maximum), the
// collection a new epoch and timestamp (its routing table's next
// incarnation), its UUID and chunk versions unchanged.
func cmdRefine(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns := req.str("refineCollectionShardKey")
	key, ok := req.body.Lookup("key").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'refineCollectionShardKey.key' is missing but a required field")
	}
	p, err := shard.ParsePattern(key)
	if err != nil {
		return nil, err
	}
	rt, release, err := r.shardedRouting(ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	old := rt.coll.m.Pattern
	if len(p.Fields) <= len(old.Fields) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "refineCollectionShardKey: the new key %s must extend the current key %s with more fields", key, old)
	}
	for i, f := range old.Fields {
		if p.Fields[i] != f {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "refineCollectionShardKey: the new key %s must have the current key %s as its prefix", key, old)
		}
	}
	for _, f := range p.Fields[len(old.Fields):] {
		if f.Hashed {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "refineCollectionShardKey: a refined key cannot add a hashed field")
		}
	}
	_, coll, _ := splitNS(ns)
	owners := withPrimary(rt, rt.allShards())
	for _, o := range owners {
		specs, _, err := r.shardIndexes(ctx, rt, o, coll)
		if err != nil {
			return nil, err
		}
		found := false
		for _, s := range specs {
			k, _ := s.Lookup("key").DocumentOK()
			found = found || indexSupports(k, p)
		}
		if !found {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Please create an index that starts with the proposed shard key before refining the shard key of %s (none on shard %s)", ns, o)
		}
	}
	extend := func(d bsoncore.Document, t bsoncore.Type) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		els, _ := d.Elements()
		for _, el := range els {
			b.AppendValue(el.Key(), el.Value())
		}
		for _, f := range p.Fields[len(old.Fields):] {
			b.AppendValue(f.Path, bsoncore.Value{Type: t})
		}
		return b.Build()
	}
	maxEnc, _ := old.Encode(old.MaxKey())
	newColl := rt.coll.coll
	newColl.Key, newColl.Epoch, newColl.Timestamp, newColl.Updated = key, bson.NewObjectID(), nowTS(), time.Now()
	docs := rt.coll.m.ChunkDocs(newColl.UUID)
	next := make([]bsoncore.Document, len(docs))
	for i, c := range rt.coll.m.Chunks {
		maxT := bsoncore.TypeMinKey
		if enc, _ := old.Encode(c.Max); bytes.Equal(enc, maxEnc) {
			maxT = bsoncore.TypeMaxKey
		}
		b := bsoncore.NewDocumentBuilder()
		els, _ := docs[i].Elements()
		for _, el := range els {
			switch el.Key() {
			case "min":
				b.AppendDocument("min", extend(c.Min, bsoncore.TypeMinKey))
			case "max":
				b.AppendDocument("max", extend(c.Max, maxT))
			default:
				b.AppendValue(el.Key(), el.Value())
			}
		}
		next[i] = b.Build()
	}
	if _, err := shard.MapFromConfig(newColl, next); err != nil {
		return nil, fmt.Errorf("router: refined chunks do not tile: %w", err)
	}
	// The shards' critical section, as shardCollection's: a write carrying
	// the old epoch waits, then is refused.
	db, coll, err := splitNS(ns)
	if err != nil {
		return nil, err
	}
	reason := bson.D{{Key: "command", Value: "refineCollectionShardKey"}, {Key: "ns", Value: ns}, {Key: "epoch", Value: newColl.Epoch}}
	blocked, err := r.blockShards(ctx, db, coll, owners, reason)
	defer r.unblockShards(ctx, db, coll, blocked, reason)
	if err != nil {
		return nil, err
	}
	for i, d := range next {
		if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "chunks"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: rt.coll.m.Chunks[i].ID}}}, {Key: "u", Value: bson.Raw(d)}}}}}); err != nil {
			return nil, err
		}
	}
	if err := r.configWrite(ctx, bson.D{{Key: "update", Value: "collections"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: ns}}}, {Key: "u", Value: bson.Raw(newColl.Doc())}}}}}); err != nil {
		return nil, err
	}
	r.cache.invalidate(ns)
	if err := r.flushShards(ctx, ns, owners); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// blockShards begins a DDL critical section of db.coll on each of the
// shards ids (_shardsvrParticipantBlock, blockType Writes) and returns
// those that began it, for unblockShards, also when one failed.
func (r *Router) blockShards(ctx context.Context, db, coll string, ids []string, reason bson.D) ([]string, error) {
	var blocked []string
	for _, id := range ids {
		if err := r.participantBlock(ctx, db, coll, id, "Writes", reason); err != nil {
			return blocked, fmt.Errorf("router: shard %s did not block writes to %s.%s: %w", id, db, coll, err)
		}
		blocked = append(blocked, id)
	}
	return blocked, nil
}

// unblockShards ends the critical section blockShards began; each shard
// reloads the table first. A shard that does not answer ends it on its own
// later (shardsvr's ddlBlockMax).
func (r *Router) unblockShards(ctx context.Context, db, coll string, ids []string, reason bson.D) {
	for _, id := range ids {
		_ = r.participantBlock(context.WithoutCancel(ctx), db, coll, id, "Unblock", reason)
	}
}

func (r *Router) participantBlock(ctx context.Context, db, coll, id, blockType string, reason bson.D) error {
	sh, err := r.cache.shard(ctx, id)
	if err != nil {
		return err
	}
	cmd := marshal(bson.D{{Key: "_shardsvrParticipantBlock", Value: db + "." + coll}, {Key: "blockType", Value: blockType}, {Key: "reason", Value: reason},
		{Key: "$db", Value: "admin"}})
	_, err = memberclient.Check(sh.set.Run(ctx, cmd))
	return err
}

// flushShards has each of the shards ids reload ns's routing table from
// the config servers (_flushRoutingTableCacheUpdates) after shardCollection
// or refineCollectionShardKey changed it: a shard judges a command's
// shardVersion by its cached table, so until it reloads, another router's
// version from before the change (UNSHARDED, the old epoch) would still be
// admitted there.
func (r *Router) flushShards(ctx context.Context, ns string, ids []string) error {
	cmd := bsoncore.NewDocumentBuilder().AppendString("_flushRoutingTableCacheUpdates", ns).AppendBoolean("syncFromConfig", true).AppendString("$db", "admin").Build()
	for _, id := range ids {
		sh, err := r.cache.shard(ctx, id)
		if err != nil {
			return err
		}
		if _, err := memberclient.Check(sh.set.Run(ctx, cmd)); err != nil {
			return fmt.Errorf("router: shard %s did not reload the routing table of %s: %w", id, ns, err)
		}
	}
	return nil
}
