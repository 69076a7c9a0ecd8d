package router

import (
	"bytes"
	"context"
	"sort"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// This file holds the router's collectionless aggregation, {aggregate: 1}
// (mongos's): $currentOp merges every shard's operations, each naming its
// shard; $listLocalSessions lists the router's own session table;
// $documents runs at the router (its $lookup and $unionWith read their
// collections from their owners, routerCatalog). Any other first stage is
// refused: a stage that needs a collection with MongoDB's InvalidNamespace,
// one MongoDB runs collectionless and the router does not
// ($changeStream over a database or the cluster, $listCatalog, …) with
// InvalidOptions naming it. The rest of the pipeline after the first
// stage runs at the router, over the first stage's documents.

// collectionlessStages are the first stages MongoDB 7.0 runs in
// {aggregate: 1} that the router does not.
var collectionlessStages = map[string]bool{
	"$changeStream": true, "$listCatalog": true, "$queryStats": true, "$querySettings": true,
	"$backupCursor": true, "$backupCursorExtend": true, "$listCachedAndActiveUsers": true,
}

// collectionless runs {aggregate: 1, pipeline}.
func (r *Router) collectionless(ctx context.Context, req *request) (bsoncore.Document, error) {
	if n, ok := req.body.Index(0).Value().AsInt64OK(); !ok || n != 1 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Invalid command format: the 'aggregate' field must specify a collection name or 1")
	}
	pipeline, err := pipelineArg(req)
	if err != nil {
		return nil, err
	}
	if ex, _ := req.body.Lookup("explain").BooleanOK(); ex {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cairn's router does not explain a collectionless aggregation yet")
	}
	if len(pipeline) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for an empty pipeline.")
	}
	first, err := pipeline[0].IndexErr(0)
	if err != nil {
		return nil, mongoerr.New(mongoerr.StageOneField, "A pipeline stage specification object must contain exactly one field.")
	}
	inTxn := sessionOf(ctx) != nil && sessionOf(ctx).txn != nil
	opts := agg.Options{DB: req.db, Catalog: routerCatalog{r, &ctx}}
	if allow, _ := req.body.Lookup("allowDiskUse").BooleanOK(); allow {
		opts.AllowDiskUse = true
	}
	if d := docArg(req, "collation"); d != nil {
		if opts.Collation, err = collation.Parse(d); err != nil {
			return nil, err
		}
	}
	if _, ok := req.arg("let"); ok {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "let in a collectionless aggregation is not supported by Cairn's router yet")
	}
	var docs []bsoncore.Document
	rest := pipeline[1:]
	switch name := first.Key(); {
	case name == "$documents":
		rest = pipeline // the whole pipeline runs here
	case name == "$currentOp":
		if inTxn {
			return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Operation not permitted in transaction :: caused by :: $currentOp")
		}
		if docs, err = r.currentOp(ctx, req, first.Value()); err != nil {
			return nil, err
		}
	case name == "$listLocalSessions":
		if inTxn {
			return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Operation not permitted in transaction :: caused by :: $listLocalSessions")
		}
		if docs, err = r.listLocalSessions(ctx, req, first.Value()); err != nil {
			return nil, err
		}
	case name == "$shardedDataDistribution": // cmdAggregate answers it on admin
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$shardedDataDistribution must be run against the 'admin' database with {aggregate: 1}")
	case collectionlessStages[name]:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "{aggregate: 1} with %s is not supported by Cairn's router yet", name)
	default:
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for '%s'; a collection is required.", name)
	}
	var src agg.Source = agg.SliceSource(docs)
	if len(rest) > 0 {
		p, err := agg.Parse(rest, opts)
		if err != nil {
			return nil, err
		}
		if p.Output() != nil {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "%s after a collectionless stage is not supported by Cairn's router yet", p.Output().Stage)
		}
		if len(docs) == 0 {
			src = nil // $documents makes the pipeline's input
		}
		if src, err = p.Run(ctx, src); err != nil {
			return nil, err
		}
	}
	batchSize, _ := docArg(req, "cursor").Lookup("batchSize").AsInt64OK()
	return r.openCursor(&ctx, req, req.db+".$cmd.aggregate", src, 0, 0, batchSize, false)
}

// currentOp is mongos's $currentOp: every shard's operations (its
// primary's, as each shard answers {aggregate: 1, pipeline: [{$currentOp}]}),
// each document naming its shard, with the opid as "<shard>:<opid>".
// localOps (the router's own operations) is refused: the router keeps no
// list of its operations.
func (r *Router) currentOp(ctx context.Context, req *request, spec bsoncore.Value) ([]bsoncore.Document, error) {
	if req.db != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", spec.Type)
	}
	if local, _ := d.Lookup("localOps").BooleanOK(); local {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "$currentOp with localOps: true (the router's own operations) is not supported by Cairn's router yet")
	}
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(shards))
	for i, s := range shards {
		ids[i] = s.id
	}
	body := marshal(bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.Raw(d)}}}}, {Key: "cursor", Value: bson.D{}}})
	replies, err := r.scatter(ctx, ids, nil, func(string) bsoncore.Document { return body })
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for i, rep := range replies {
		s, err := newShardStream(r, &ctx, ids[i], nil, rep)
		if err != nil {
			return nil, err
		}
		ops, err := agg.ReadAll(s)
		if err != nil {
			return nil, err
		}
		for _, op := range ops {
			out = append(out, withShard(op, ids[i], true))
		}
	}
	return out, nil
}

// withShard is a shard's document naming shard id, as mongos's: for
// $currentOp (currentOp true) shard first and the opid made
// "<shard>:<opid>"; for $collStats shard after ns.
func withShard(d bsoncore.Document, id string, currentOp bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := d.Elements()
	_, nsErr := d.LookupErr("ns")
	hasNS := nsErr == nil
	afterNS := hasNS && !currentOp
	if !afterNS {
		b.AppendString("shard", id)
	}
	for _, el := range els {
		switch k := el.Key(); {
		case k == "shard":
		case k == "opid" && currentOp:
			if n, ok := el.Value().AsInt64OK(); ok {
				b.AppendString("opid", id+":"+strconv.FormatInt(n, 10))
			} else {
				b.AppendValue(k, el.Value())
			}
		default:
			b.AppendValue(k, el.Value())
			if k == "ns" && afterNS {
				b.AppendString("shard", id)
			}
		}
	}
	return b.Build()
}

// listLocalSessions is $listLocalSessions {} | {allUsers: true} |
// {users: [{user, db}]}: the router's sessions (startSession's and those
// commands named), as {_id: {id, uid}, lastUse}, in id order. Under access
// control {} lists the caller's own, and another user's (or allUsers)
// needs listSessions on the cluster, as MongoDB's; without it {} lists
// every session.
func (r *Router) listLocalSessions(ctx context.Context, req *request, spec bsoncore.Value) ([]bsoncore.Document, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$listLocalSessions must take a nested object but found: %s", spec.Type)
	}
	allUsers := false
	var users [][32]byte
	hasUsers := false
	els, _ := d.Elements()
	for _, el := range els {
		v := el.Value()
		switch el.Key() {
		case "allUsers":
			b, ok := v.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$listSessions.allUsers' is the wrong type '%s', expected type 'bool'", v.Type)
			}
			allUsers = b
		case "users":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$listSessions.users' is the wrong type '%s', expected type 'array'", v.Type)
			}
			hasUsers = true
			vals, _ := arr.Values()
			for _, uv := range vals {
				ud, ok := uv.DocumentOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$listSessions.users' holds a %s, not a document", uv.Type)
				}
				name, ok1 := ud.Lookup("user").StringValueOK()
				db, ok2 := ud.Lookup("db").StringValueOK()
				if !ok1 || !ok2 {
					return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field '$listSessions.users.user' and '.db' are required strings")
				}
				users = append(users, session.UIDOfUser(db+"."+name))
			}
		default:
			return nil, mongoerr.New(mongoerr.UnknownField, "BSON field '$listSessions.%s' is an unknown field.", el.Key())
		}
	}
	if allUsers && hasUsers {
		return nil, mongoerr.New(mongoerr.BadValue, "$listLocalSessions: allUsers: true and users may not both be given")
	}
	self := uidOf(req.auth)
	if r.access.on {
		if req.auth == nil || req.auth.user == nil {
			return nil, mongoerr.New(mongoerr.Unauthorized, "Command aggregate requires authentication")
		}
		others := allUsers
		for _, u := range users {
			others = others || u != self
		}
		if others && !r.privileges(ctx, req.auth).AllowsAll(auth.Cluster, "listSessions") {
			return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized on admin to list the sessions of other users")
		}
		if !allUsers && !hasUsers {
			users = [][32]byte{self}
		}
	}
	want := func(uid [32]byte) bool {
		if allUsers || (!hasUsers && users == nil) {
			return true
		}
		for _, u := range users {
			if u == uid {
				return true
			}
		}
		return false
	}
	type rec struct {
		key  sessionKey
		last time.Time
	}
	var recs []rec
	r.sessions.mu.Lock()
	for k, s := range r.sessions.m {
		if want(k.uid) {
			recs = append(recs, rec{k, s.lastUse})
		}
	}
	r.sessions.mu.Unlock()
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i].key.id[:], recs[j].key.id[:]) < 0 })
	out := make([]bsoncore.Document, len(recs))
	for i, rc := range recs {
		out[i] = bsoncore.NewDocumentBuilder().AppendDocument("_id", rc.key.lsid()).AppendDateTime("lastUse", rc.last.UnixMilli()).Build()
	}
	return out, nil
}
