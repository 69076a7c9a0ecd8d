package router

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// The router's cached view of the config database: shards, databases and
// sharded collections. Every entry is a copy of what the config servers
// hold; flushRouterConfig or a StaleConfig answer drops entries, and the
// next command reads them again.

// shardInfo is a config.shards entry.
type shardInfo struct {
	id, host string
	draining bool
	set      *memberclient.Set
	// unversioned marks the config servers, reached as a shard for the
	// config and admin databases: commands go to them without versions.
	unversioned bool
}

type dbInfo struct {
	name, primary string
	version       shard.DatabaseVersion
	versionDoc    bsoncore.Document // version's wire form, sent with every command
}

// collInfo is a collection's routing: m is nil for an unsharded one.
type collInfo struct {
	coll shard.Collection
	m    *shard.Map
	// versions are each shard's shardVersion in its wire form, made on
	// first use (the routing is replaced, not changed, when it moves on).
	versions sync.Map // shard id → bsoncore.Document
}

// versionDoc is the shardVersion of a command for shard id.
func (ci *collInfo) versionDoc(id string) bsoncore.Document {
	if d, ok := ci.versions.Load(id); ok {
		return d.(bsoncore.Document)
	}
	d := ci.m.ShardVersionFor(id, ci.coll.Timestamp).Doc()
	ci.versions.Store(id, d)
	return d
}

type cache struct {
	r      *Router
	mu     sync.Mutex
	shards map[string]*shardInfo
	dbs    map[string]*dbInfo
	colls  map[string]*collInfo
}

func newCache(r *Router) *cache {
	return &cache{r: r, shards: map[string]*shardInfo{}, dbs: map[string]*dbInfo{}, colls: map[string]*collInfo{}}
}

func (c *cache) closeShards() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		s.set.Close()
	}
}

// flush drops every cached database and collection (flushRouterConfig).
func (c *cache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dbs = map[string]*dbInfo{}
	c.colls = map[string]*collInfo{}
}

func (c *cache) invalidate(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.colls, ns)
	db, _, _ := strings.Cut(ns, ".")
	delete(c.dbs, db)
}

// --- the config servers ---

var majority = bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 60000}}

func marshal(v any) bsoncore.Document {
	b, err := bson.Marshal(v)
	if err != nil {
		panic(fmt.Errorf("router: marshalling a command the router built: %w", err))
	}
	return b
}

// configCmd runs cmd on the config servers' primary (on the config
// database unless cmd names $db).
func (r *Router) configCmd(ctx context.Context, cmd bson.D) (bsoncore.Document, error) {
	hasDB := false
	for _, e := range cmd {
		hasDB = hasDB || e.Key == "$db"
	}
	if !hasDB {
		cmd = append(cmd, bson.E{Key: "$db", Value: "config"})
	}
	reply, err := memberclient.Check(r.config.Run(ctx, marshal(cmd)))
	if err != nil {
		return nil, err
	}
	if we, err := reply.LookupErr("writeErrors"); err == nil {
		vals, _ := we.Array().Values()
		if len(vals) > 0 {
			return nil, memberclient.Err(writeErrorReply(vals[0].Document()))
		}
	}
	if wce, err := reply.LookupErr("writeConcernError"); err == nil {
		return nil, memberclient.Err(writeErrorReply(wce.Document()))
	}
	return reply, nil
}

// writeErrorReply turns a writeError {code, errmsg} into an error reply.
func writeErrorReply(we bsoncore.Document) bsoncore.Document {
	code, _ := we.Lookup("code").AsInt32OK()
	msg, _ := we.Lookup("errmsg").StringValueOK()
	return marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: msg}, {Key: "code", Value: code}, {Key: "codeName", Value: mongoerr.Code(code).Name()}})
}

// configFind returns every document of config.<coll> matching filter,
// sorted by sort (nil: natural order).
func (r *Router) configFind(ctx context.Context, coll string, filter, sortBy any) ([]bsoncore.Document, error) {
	return r.configFindIn(ctx, "config", coll, filter, sortBy)
}

// configFindIn is configFind in database db of the config servers (admin:
// the cluster's users and roles).
func (r *Router) configFindIn(ctx context.Context, db, coll string, filter, sortBy any) ([]bsoncore.Document, error) {
	if filter == nil {
		filter = bson.D{}
	}
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 100000}}
	if sortBy != nil {
		cmd = append(cmd, bson.E{Key: "sort", Value: sortBy})
	}
	cmd = append(cmd, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}}, bson.E{Key: "$db", Value: db})
	reply, err := r.configCmd(ctx, cmd)
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for {
		cur := reply.Lookup("cursor").Document()
		batch, ok := cur.Lookup("firstBatch").ArrayOK()
		if !ok {
			batch = cur.Lookup("nextBatch").Array()
		}
		vals, _ := batch.Values()
		for _, v := range vals {
			out = append(out, v.Document())
		}
		id, _ := cur.Lookup("id").AsInt64OK()
		if id == 0 {
			return out, nil
		}
		if reply, err = r.configCmd(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "$db", Value: db}}); err != nil {
			return nil, err
		}
	}
}

func (r *Router) configWrite(ctx context.Context, cmd bson.D) error {
	_, err := r.configCmd(ctx, append(cmd, bson.E{Key: "writeConcern", Value: majority}))
	return err
}

func (r *Router) configUpsert(ctx context.Context, coll string, q, u any) error {
	return r.configWrite(ctx, bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: q}, {Key: "u", Value: u}, {Key: "upsert", Value: true}}}}})
}

func (r *Router) configInsert(ctx context.Context, coll string, docs ...bsoncore.Document) error {
	arr := make(bson.A, len(docs))
	for i, d := range docs {
		arr[i] = bson.Raw(d)
	}
	for len(arr) > 0 {
		n := min(len(arr), 10000)
		if err := r.configWrite(ctx, bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: arr[:n]}}); err != nil {
			return err
		}
		arr = arr[n:]
	}
	return nil
}

func (r *Router) configDelete(ctx context.Context, coll string, q any) error {
	return r.configWrite(ctx, bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: 0}}}}})
}

// clusterID reads config.version's clusterId, creating it on first use
// (addShard). With it the cluster's settings record that it has no
// auto-merger, config.settings {_id: "automerge", enabled: false}, which
// mongosh's sh.isAutoMergerEnabled() and sh.status() read (MongoDB 7.0's
// default, no document, means enabled; writes of it are refused,
// refuseAutoMerger).
func (r *Router) clusterID(ctx context.Context) (bson.ObjectID, error) {
	if err := r.configUpsert(ctx, "version", bson.D{{Key: "_id", Value: 1}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "clusterId", Value: bson.NewObjectID()}}}}); err != nil {
		return bson.ObjectID{}, err
	}
	if err := r.configUpsert(ctx, "settings", bson.D{{Key: "_id", Value: "automerge"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "enabled", Value: false}}}}); err != nil {
		return bson.ObjectID{}, err
	}
	docs, err := r.configFind(ctx, "version", bson.D{{Key: "_id", Value: 1}}, nil)
	if err != nil || len(docs) == 0 {
		return bson.ObjectID{}, fmt.Errorf("router: reading config.version: %v", err)
	}
	id, _ := docs[0].Lookup("clusterId").ObjectIDOK()
	return id, nil
}

// --- shards ---

// loadShards reads config.shards into the cache.
func (c *cache) loadShards(ctx context.Context) error {
	docs, err := c.r.configFind(ctx, "shards", nil, bson.D{{Key: "_id", Value: 1}})
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, d := range docs {
		id, _ := d.Lookup("_id").StringValueOK()
		hostStr, _ := d.Lookup("host").StringValueOK()
		draining, _ := d.Lookup("draining").BooleanOK()
		seen[id] = true
		if s, ok := c.shards[id]; ok && s.host == hostStr {
			s.draining = draining
			continue
		}
		name, hosts, err := memberclient.ParseConnString(hostStr)
		if err != nil {
			return err
		}
		c.shards[id] = &shardInfo{id: id, host: hostStr, draining: draining, set: c.r.members.Set(name, hosts)}
	}
	for id, s := range c.shards {
		if !seen[id] {
			s.set.Close()
			delete(c.shards, id)
		}
	}
	return nil
}

// configShard is the id under which the router reaches the config servers
// for the config and admin databases.
const configShard = "config"

// shard returns shard id, reading config.shards when it is not cached.
func (c *cache) shard(ctx context.Context, id string) (*shardInfo, error) {
	if id == configShard {
		return &shardInfo{id: configShard, host: c.r.config.ConnString(), set: c.r.config, unversioned: true}, nil
	}
	c.mu.Lock()
	s, ok := c.shards[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	if err := c.loadShards(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.shards[id]; ok {
		return s, nil
	}
	return nil, mongoerr.New(mongoerr.ShardNotFound, "Shard %s not found", id)
}

// shardIDs lists the shards, in _id order (fresh from the config servers).
func (c *cache) shardIDs(ctx context.Context) ([]*shardInfo, error) {
	if err := c.loadShards(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*shardInfo, 0, len(c.shards))
	for _, s := range c.shards {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// --- databases ---

func parseDB(d bsoncore.Document) (*dbInfo, error) {
	var db dbInfo
	db.name, _ = d.Lookup("_id").StringValueOK()
	db.primary, _ = d.Lookup("primary").StringValueOK()
	v, err := shard.ParseDatabaseVersion(d.Lookup("version"))
	if err != nil {
		return nil, err
	}
	db.version, db.versionDoc = v, v.Doc()
	return &db, nil
}

// db returns database name's entry; create makes it (as a write or
// shardCollection implicitly does), on the shard holding the fewest
// databases.
func (c *cache) db(ctx context.Context, name string, create bool) (*dbInfo, error) {
	c.mu.Lock()
	d, ok := c.dbs[name]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	switch name {
	case "config", "admin":
		// They live on the config servers, as mongos routes them
		// (sh.status() reads config.*): the pseudo-shard configShard.
		return &dbInfo{name: name, primary: configShard}, nil
	case "":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "empty database name")
	}
	docs, err := c.r.configFind(ctx, "databases", bson.D{{Key: "_id", Value: name}}, nil)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		if !create {
			return nil, nil
		}
		if err := c.createDB(ctx, name, ""); err != nil {
			return nil, err
		}
		if docs, err = c.r.configFind(ctx, "databases", bson.D{{Key: "_id", Value: name}}, nil); err != nil {
			return nil, err
		}
		if len(docs) == 0 {
			return nil, fmt.Errorf("router: database %s vanished after its creation", name)
		}
	}
	d, err = parseDB(docs[0])
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.dbs[name] = d
	c.mu.Unlock()
	return d, nil
}

// createDB records database name on primary ("" picks the shard with the
// fewest databases). Two routers creating it at once both upsert by _id,
// and the first write wins.
func (c *cache) createDB(ctx context.Context, name, primary string) error {
	shards, err := c.shardIDs(ctx)
	if err != nil {
		return err
	}
	if len(shards) == 0 {
		return mongoerr.New(mongoerr.ShardNotFound, "Database %s could not be created: there are no shards; add one with addShard", name)
	}
	existing, err := c.r.configFind(ctx, "databases", bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^(?i)" + regexQuote(name) + "$"}}}}, nil)
	if err != nil {
		return err
	}
	for _, d := range existing {
		if other, _ := d.Lookup("_id").StringValueOK(); other != name {
			return mongoerr.New(mongoerr.DatabaseDifferCase, "db already exists with different case already have: [%s] trying to create [%s]", other, name)
		}
	}
	if primary == "" {
		count := map[string]int{}
		all, err := c.r.configFind(ctx, "databases", nil, nil)
		if err != nil {
			return err
		}
		for _, d := range all {
			p, _ := d.Lookup("primary").StringValueOK()
			count[p]++
		}
		best := ""
		for _, s := range shards {
			if s.draining {
				continue
			}
			if best == "" || count[s.id] < count[best] {
				best = s.id
			}
		}
		if best == "" {
			return mongoerr.New(mongoerr.ShardNotFound, "every shard is draining; no shard can take database %s", name)
		}
		primary = best
	}
	v := shard.DatabaseVersion{UUID: newUUID(), Timestamp: nowTS(), LastMod: 1}
	return c.r.configUpsert(ctx, "databases", bson.D{{Key: "_id", Value: name}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "primary", Value: primary}, {Key: "version", Value: bson.Raw(v.Doc())}}}})
}

// newUUID is a random (version 4) UUID: a database's or a sharded
// collection's incarnation.
func newUUID() [16]byte {
	var uuid [16]byte
	_, _ = rand.Read(uuid[:])
	uuid[6] = uuid[6]&0x0f | 0x40
	uuid[8] = uuid[8]&0x3f | 0x80
	return uuid
}

func regexQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// nowTS is a cluster-time-shaped timestamp of the router's wall clock: the
// config documents' timestamps (collection and database incarnations).
func nowTS() hlc.Timestamp {
	tsMu.Lock()
	defer tsMu.Unlock()
	s := uint32(time.Now().Unix())
	if s > lastTS.T() {
		lastTS = hlc.New(s, 1)
	} else {
		lastTS = hlc.New(lastTS.T(), lastTS.I()+1)
	}
	return lastTS
}

var (
	tsMu   sync.Mutex
	lastTS hlc.Timestamp
)

// --- collections ---

// coll returns the routing of ns: its map when sharded, nil m otherwise.
func (c *cache) coll(ctx context.Context, ns string) (*collInfo, error) {
	c.mu.Lock()
	ci, ok := c.colls[ns]
	c.mu.Unlock()
	if ok {
		return ci, nil
	}
	// A chunk change is several config writes: a reader between them can
	// see chunks that overlap or leave a gap, which MapFromConfig refuses;
	// the change completes in a moment, so read again.
	ci, err := c.r.loadColl(ctx, ns)
	for try := 0; err != nil && try < 40 && ctx.Err() == nil; try++ {
		if _, isReply := err.(*memberclient.ReplyError); isReply {
			break
		}
		time.Sleep(25 * time.Millisecond)
		ci, err = c.r.loadColl(ctx, ns)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.colls[ns] = ci
	c.mu.Unlock()
	return ci, nil
}

// loadColl reads ns's config.collections entry and its chunks.
func (r *Router) loadColl(ctx context.Context, ns string) (*collInfo, error) {
	docs, err := r.configFind(ctx, "collections", bson.D{{Key: "_id", Value: ns}}, nil)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return &collInfo{}, nil
	}
	if dropped, _ := docs[0].Lookup("dropped").BooleanOK(); dropped {
		return &collInfo{}, nil
	}
	coll, err := shard.ParseCollection(docs[0])
	if err != nil {
		return nil, err
	}
	chunks, err := r.configFind(ctx, "chunks", bson.D{{Key: "uuid", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: coll.UUID[:]}}}, nil)
	if err != nil {
		return nil, err
	}
	m, err := shard.MapFromConfig(coll, chunks)
	if err != nil {
		return nil, err
	}
	return &collInfo{coll: coll, m: m}, nil
}
