package router

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// withPrimary adds the database's primary shard to shards (it holds every
// collection's indexes and listings, sharded or not).
func withPrimary(rt *routing, shards []string) []string {
	for _, s := range shards {
		if s == rt.db.primary {
			return shards
		}
	}
	return append([]string{rt.db.primary}, shards...)
}

// toPrimary forwards the command to the database's primary shard.
func toPrimary(create bool) handler {
	return func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
		coll := req.coll()
		var out bsoncore.Document
		err := r.retry(ctx, req.db+"."+coll, func() error {
			rt, err := r.route(ctx, req.db, coll, create)
			if err != nil {
				return err
			}
			if rt.db == nil {
				return mongoerr.New(mongoerr.NamespaceNotFound, "database %s not found", req.db)
			}
			if out, err = r.toShard(ctx, rt.db.primary, rt, rewrite(req.body, nil, nil)); err != nil {
				return err
			}
			if _, ok := out.Lookup("cursor").DocumentOK(); ok && !exhausted(out) {
				// A listing longer than its first batch: the router keeps
				// the cursor, whose getMores come to it.
				ns, _ := out.Lookup("cursor", "ns").StringValueOK()
				ctxp := &ctx
				src, err := r.streams(ctxp, []string{rt.db.primary}, rt, []bsoncore.Document{out}, nil, nil)
				if err != nil {
					return err
				}
				out, err = r.openCursor(ctxp, req, ns, src, 0, 0, 0, false)
				return err
			}
			return nil
		})
		return out, err
	}
}

// toAll forwards the command to the primary and every shard owning a
// chunk of the collection, answering the primary's reply; NamespaceNotFound
// from a shard that never held the collection is no error.
func toAll(create bool) handler {
	return func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
		var out bsoncore.Document
		err := r.retry(ctx, req.ns(), func() error {
			rt, err := r.route(ctx, req.db, req.coll(), create)
			if err != nil {
				return err
			}
			if rt.db == nil {
				return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found")
			}
			out, err = r.allShardsReply(ctx, rt, rewrite(req.body, nil, nil))
			return err
		})
		return out, err
	}
}

func (r *Router) allShardsReply(ctx context.Context, rt *routing, body bsoncore.Document) (bsoncore.Document, error) {
	shards := withPrimary(rt, rt.allShards())
	var first bsoncore.Document
	for _, s := range shards {
		reply, err := r.toShard(ctx, s, rt, body)
		if err != nil && !(s != rt.db.primary && mongoerr.CodeOf(err) == mongoerr.NamespaceNotFound) {
			return nil, err
		}
		if s == rt.db.primary {
			first = reply
		}
	}
	return first, nil
}

func cmdCreateIndexes(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	specs, err := req.docs("indexes")
	if err != nil {
		return nil, err
	}
	var out bsoncore.Document
	err = r.retry(ctx, req.ns(), func() error {
		rt, err := r.route(ctx, req.db, req.coll(), true)
		if err != nil {
			return err
		}
		if rt.sharded() {
			for _, s := range specs {
				if u, _ := s.Lookup("unique").BooleanOK(); !u {
					continue
				}
				key, _ := s.Lookup("key").DocumentOK()
				if err := rt.coll.m.Pattern.AllowsUniqueIndex(key); err != nil {
					return err
				}
			}
		}
		out, err = r.allShardsReply(ctx, rt, rewrite(req.body, nil, nil))
		return err
	})
	return out, err
}

func cmdDrop(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	var out bsoncore.Document
	err := r.retry(ctx, req.ns(), func() error {
		rt, err := r.route(ctx, req.db, req.coll(), false)
		if err != nil {
			return err
		}
		if rt.db == nil {
			out = marshal(bson.D{{Key: "ok", Value: 1.0}})
			return nil
		}
		if out, err = r.allShardsReply(ctx, rt, rewrite(req.body, nil, nil)); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceNotFound {
			return err
		}
		if out == nil {
			out = marshal(bson.D{{Key: "ok", Value: 1.0}})
		}
		if rt.sharded() {
			if err := r.dropShardedMetadata(ctx, rt); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (r *Router) dropShardedMetadata(ctx context.Context, rt *routing) error {
	uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: rt.coll.coll.UUID[:]}
	if err := r.configDelete(ctx, "collections", bson.D{{Key: "_id", Value: rt.ns}}); err != nil {
		return err
	}
	if err := r.configDelete(ctx, "chunks", bson.D{{Key: "uuid", Value: uuid}}); err != nil {
		return err
	}
	if err := r.configDelete(ctx, "tags", bson.D{{Key: "ns", Value: rt.ns}}); err != nil {
		return err
	}
	r.cache.invalidate(rt.ns)
	return nil
}

func cmdDropDatabase(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	if req.db == "admin" || req.db == "config" {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Cannot drop '%s' database via mongos", req.db)
	}
	d, err := r.cache.db(ctx, req.db, false)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return marshal(bson.D{{Key: "ok", Value: 1.0}}), nil
	}
	colls, err := r.configFind(ctx, "collections", bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^" + regexQuote(req.db) + `\.`}}}}, nil)
	if err != nil {
		return nil, err
	}
	for _, c := range colls {
		ns, _ := c.Lookup("_id").StringValueOK()
		rt, err := r.route(ctx, req.db, ns[len(req.db)+1:], false)
		if err != nil {
			return nil, err
		}
		if rt.sharded() {
			if err := r.dropShardedMetadata(ctx, rt); err != nil {
				return nil, err
			}
		}
	}
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range shards {
		cmd := bsoncore.NewDocumentBuilder().AppendInt32("dropDatabase", 1).AppendString("$db", req.db).Build()
		if _, err := memberclient.Check(s.set.Run(ctx, cmd)); err != nil {
			return nil, err
		}
	}
	if err := r.configDelete(ctx, "databases", bson.D{{Key: "_id", Value: req.db}}); err != nil {
		return nil, err
	}
	r.cache.invalidate(req.db + ".")
	return marshal(bson.D{{Key: "dropped", Value: req.db}, {Key: "ok", Value: 1.0}}), nil
}

func cmdListDatabases(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	for _, s := range shards {
		cmd := rewrite(req.body, nil, func(b *bsoncore.DocumentBuilder) { b.AppendString("$db", "admin") })
		reply, err := memberclient.Check(s.set.Run(ctx, cmd))
		if err != nil {
			return nil, err
		}
		for _, d := range arrayDocs(reply.Lookup("databases")) {
			name, _ := d.Lookup("name").StringValueOK()
			if name == "admin" || name == "config" || name == "local" {
				continue
			}
			n, _ := d.Lookup("sizeOnDisk").AsInt64OK()
			sizes[name] += n
		}
	}
	names := make([]string, 0, len(sizes))
	var total int64
	for n, s := range sizes {
		names = append(names, n)
		total += s
	}
	sort.Strings(names)
	nameOnly, _ := req.body.Lookup("nameOnly").BooleanOK()
	dbs := bson.A{}
	for _, n := range names {
		if nameOnly {
			dbs = append(dbs, bson.D{{Key: "name", Value: n}})
		} else {
			dbs = append(dbs, bson.D{{Key: "name", Value: n}, {Key: "sizeOnDisk", Value: sizes[n]}, {Key: "empty", Value: sizes[n] == 0}})
		}
	}
	out := bson.D{{Key: "databases", Value: dbs}}
	if !nameOnly {
		out = append(out, bson.E{Key: "totalSize", Value: total})
	}
	return marshal(append(out, bson.E{Key: "ok", Value: 1.0})), nil
}
