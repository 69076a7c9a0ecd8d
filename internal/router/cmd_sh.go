package router

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// This file holds the rest of mongosh's sh.* surface: balancerCollectionStatus
// (sh.balancerCollectionStatus), and the MongoDB 7.0 commands the router
// refuses by name rather than as unknown (notYet), each saying what is
// missing.

// defaultChunkSizeMB is MongoDB 7.0's default chunkSize (config.settings
// {_id: "chunksize"} overrides it), as the balancer uses it
// (shardsvr's defaultRangeSize).
const defaultChunkSizeMB = 128

// cmdBalancerCollectionStatus is balancerCollectionStatus: whether the
// balancer would move anything of the collection now — the plan of one
// round by the balancer's own policy (shard.Plan over each shard's chunk
// sizes, which the shards measure: _shardsvrChunkSizes) — as
// {chunkSize (MB), balancerCompliant, firstComplianceViolation}: "draining"
// when a chunk must leave a draining shard, else "chunksImbalance". Zones
// are not part of Cairn's balancer's plan, so no "zoneViolation" is
// reported (the balancer does not act on one either).
func cmdBalancerCollectionStatus(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns, ok := req.body.Index(0).Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'balancerCollectionStatus' is the wrong type '%s', expected type 'string'", req.body.Index(0).Value().Type)
	}
	db, coll, err := splitNS(ns)
	if err != nil {
		return nil, err
	}
	r.cache.invalidate(ns)
	rt, err := r.route(ctx, db, coll, false)
	if err != nil {
		return nil, err
	}
	if !rt.sharded() {
		return nil, mongoerr.New(mongoerr.NamespaceNotSharded, "Collection %s is not sharded.", ns)
	}
	chunkMB := int64(defaultChunkSizeMB)
	settings, err := r.configFind(ctx, "settings", bson.D{{Key: "_id", Value: "chunksize"}}, nil)
	if err != nil {
		return nil, err
	}
	if len(settings) > 0 {
		if mb, ok := settings[0].Lookup("value").AsInt64OK(); ok && mb > 0 {
			chunkMB = mb
		}
	}
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	m := rt.coll.m
	sizes := make([]int64, len(m.Chunks))
	loads := make([]shard.Load, 0, len(shards))
	for _, s := range shards {
		loads = append(loads, shard.Load{Shard: s.id, Draining: s.draining})
		var bounds bson.A
		var idx []int
		for i, c := range m.Chunks {
			if c.Shard == s.id {
				bounds = append(bounds, bson.D{{Key: "min", Value: bson.Raw(c.Min)}, {Key: "max", Value: bson.Raw(c.Max)}})
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		reply, err := r.toShard(ctx, s.id, nil, marshal(bson.D{{Key: "_shardsvrChunkSizes", Value: ns},
			{Key: "shardKeyPattern", Value: bson.Raw(m.Pattern.Doc)}, {Key: "chunks", Value: bounds}}))
		if err != nil {
			return nil, err
		}
		arr, _ := reply.Lookup("sizes").ArrayOK()
		vals, _ := arr.Values()
		for k, v := range vals {
			if k < len(idx) {
				sizes[idx[k]], _ = v.AsInt64OK()
				loads[len(loads)-1].Bytes += sizes[idx[k]]
			}
		}
	}
	kv := []any{"chunkSize", float64(chunkMB)}
	if plan := shard.Plan(m, sizes, loads, chunkMB<<20); len(plan) > 0 && !rt.coll.coll.NoBalance {
		why := "chunksImbalance"
		for _, l := range loads {
			if l.Shard == plan[0].From && l.Draining {
				why = "draining"
			}
		}
		kv = append(kv, "balancerCompliant", false, "firstComplianceViolation", why)
	} else {
		kv = append(kv, "balancerCompliant", true)
	}
	return okReply(kv...), nil
}

// notYet refuses a MongoDB 7.0 command the router does not run, saying
// what is missing (CommandNotSupported, rather than CommandNotFound's
// "no such command", which would say mongos has none).
func notYet(why string) handler {
	return func(_ context.Context, _ *Router, req *request) (bsoncore.Document, error) {
		return nil, mongoerr.New(mongoerr.CommandNotSupported, "%s is not supported by Cairn's router yet: %s", req.name, why)
	}
}

// notYetCommands are the refused commands and why.
var notYetCommands = map[string]string{
	"movePrimary": "moving a database's unsharded collections needs a database critical section and a cloner on the shards " +
		"(internal/router/doc.go describes the design); shard the collections and move their chunks instead",
	"reshardCollection":       "resharding is not implemented; refineCollectionShardKey extends a shard key",
	"commitReshardCollection": "resharding is not implemented",
	"abortReshardCollection":  "resharding is not implemented",
	"configureCollectionBalancing": "per-collection chunk sizes, defragmentation and the auto-merger are not implemented; " +
		"config.collections' noBalance (sh.disableBalancing) is honoured",
	"checkMetadataConsistency": "the config servers' metadata is checked as it is read (a routing table whose chunks " +
		"do not tile the key space is refused), not by this command",
}

// cmdSetAllowMigrations is setAllowMigrations {setAllowMigrations: ns,
// allowMigrations} (sh.enableMigrations, sh.disableMigrations): it writes
// config.collections' permitMigrations (false, or removed for true) under
// the collection's DDL lock, so a moveChunk through a router, which holds
// that lock while it runs, finishes before and is refused after; the
// balancer skips the collection, and the config servers commit no
// migration of it (shardsvr's commit.go), so one the balancer started
// before fails at its commit.
func cmdSetAllowMigrations(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	ns, ok := req.body.Index(0).Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'setAllowMigrations' is the wrong type '%s', expected type 'string'", req.body.Index(0).Value().Type)
	}
	v, ok := req.arg("allowMigrations")
	if !ok {
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'setAllowMigrations.allowMigrations' is missing but a required field")
	}
	allow, ok := v.BooleanOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'setAllowMigrations.allowMigrations' is the wrong type '%s', expected type 'bool'", v.Type)
	}
	_, release, err := r.shardedRouting(ctx, ns) // NamespaceNotSharded for an unsharded one, as mongos
	if err != nil {
		return nil, err
	}
	defer release()
	u := bson.D{{Key: "$set", Value: bson.D{{Key: "permitMigrations", Value: false}}}}
	if allow {
		u = bson.D{{Key: "$unset", Value: bson.D{{Key: "permitMigrations", Value: ""}}}}
	}
	err = r.configWrite(ctx, bson.D{{Key: "update", Value: "collections"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: ns}}}, {Key: "u", Value: u}}}}})
	r.cache.invalidate(ns)
	if err != nil {
		return nil, err
	}
	return okReply(), nil
}
