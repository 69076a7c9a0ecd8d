package router

import (
	"bytes"
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// concatSource reads its sources one after another.
type concatSource struct {
	srcs []agg.Source
	i    int
}

func (c *concatSource) Next() (bsoncore.Document, error) {
	for c.i < len(c.srcs) {
		d, err := c.srcs[c.i].Next()
		if err != nil || d != nil {
			return d, err
		}
		c.i++
	}
	return nil, nil
}

func (c *concatSource) Close() error {
	for _, s := range c.srcs {
		_ = s.Close()
	}
	return nil
}

func docArg(req *request, name string) bsoncore.Document {
	v, _ := req.arg(name)
	d, _ := v.DocumentOK()
	return d
}

func intArg(req *request, name string) int64 {
	v, _ := req.arg(name)
	n, _ := v.AsInt64OK()
	return n
}

// streams turns the shards' cursor replies into one source: merge-sorted
// by sortKey when given (strings compared by coll, the command's
// collation, as the shards sorted them), concatenated otherwise.
func (r *Router) streams(ctxp *context.Context, shards []string, rt *routing, replies []bsoncore.Document, sortKey bsoncore.Document, coll *collation.Collator) (agg.Source, error) {
	srcs := make([]agg.Source, len(replies))
	for i, reply := range replies {
		s, err := newShardStream(r, ctxp, shards[i], rt, reply)
		if err != nil {
			return nil, err
		}
		srcs[i] = s
	}
	if len(sortKey) > 5 && len(srcs) > 1 {
		return agg.MergeSortedWith(srcs, sortKey, coll) // the shards sorted under the command's collation
	}
	return &concatSource{srcs: srcs}, nil
}

// exhausted reports whether a shard's cursor reply holds the whole answer
// (cursor id 0): the router then passes it on as it came.
func exhausted(reply bsoncore.Document) bool {
	id, ok := reply.Lookup("cursor", "id").AsInt64OK()
	return ok && id == 0
}

var (
	pagingFields        = map[string]bool{"skip": true, "limit": true, "batchSize": true, "singleBatch": true}
	pagingAndProjection = map[string]bool{"skip": true, "limit": true, "batchSize": true, "singleBatch": true, "projection": true}
)

// projectableAtRouter reports whether a projection needs nothing but the
// document (no positional "a.$", $elemMatch or $meta, which need the
// shard's match or scores).
func projectableAtRouter(proj bsoncore.Document) bool {
	els, _ := proj.Elements()
	for _, el := range els {
		if strings.Contains(el.Key(), "$") {
			return false
		}
		if d, ok := el.Value().DocumentOK(); ok {
			if first, err := d.IndexErr(0); err == nil && (first.Key() == "$elemMatch" || first.Key() == "$meta") {
				return false
			}
		}
	}
	return true
}

// projectSource applies a find projection to merged documents.
type projectSource struct {
	src agg.Source
	p   *query.Projection
	buf []byte
}

func (s *projectSource) Next() (bsoncore.Document, error) {
	d, err := s.src.Next()
	if err != nil || d == nil {
		return d, err
	}
	s.buf, err = s.p.Apply(s.buf[:0], d, -1)
	return s.buf, err
}

func (s *projectSource) Close() error { return s.src.Close() }

func cmdFind(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	filter, sortKey := docArg(req, "filter"), docArg(req, "sort")
	skip, limit, batchSize := intArg(req, "skip"), intArg(req, "limit"), intArg(req, "batchSize")
	if limit < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "LIMIT must be non-negative")
	}
	sb, _ := req.arg("singleBatch")
	single, _ := sb.BooleanOK()
	var out bsoncore.Document
	err := r.retry(ctx, req.ns(), func() error {
		rt, shards, err := r.routeTargets(ctx, req.db, req.coll(), filter, docArg(req, "collation"))
		if err != nil || rt.db == nil {
			out = cursorReply(0, req.ns(), "firstBatch", nil)
			return err
		}
		one := len(shards) == 1
		// A projection may drop the fields the shards' streams are
		// merged by: then the shards send whole documents and the router
		// projects after merging.
		var routerProj *query.Projection
		skipFields := pagingFields
		if proj := docArg(req, "projection"); !one && len(sortKey) > 5 && len(proj) > 5 && projectableAtRouter(proj) {
			if routerProj, err = query.ParseProjection(proj, nil); err != nil {
				return err
			}
			skipFields = pagingAndProjection
		}
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document {
			if one {
				return req.body // toShardSeq drops the client-only fields
			}
			return rewrite(req.body, skipFields, func(b *bsoncore.DocumentBuilder) {
				if limit > 0 {
					b.AppendInt64("limit", skip+limit)
				}
				if batchSize > 0 {
					b.AppendInt64("batchSize", batchSize)
				}
			})
		})
		if err != nil {
			return err
		}
		if one && exhausted(replies[0]) {
			out = replies[0] // the shard's whole answer: nothing to merge or keep
			return nil
		}
		ctxp := &ctx
		coll, err := rt.collator(req)
		if err != nil {
			return err
		}
		src, err := r.streams(ctxp, shards, rt, replies, sortKey, coll)
		if err != nil {
			return err
		}
		if routerProj != nil {
			src = &projectSource{src: src, p: routerProj}
		}
		rskip, rlimit := skip, limit
		if one {
			rskip, rlimit = 0, 0
		}
		out, err = r.openCursor(ctxp, req, req.ns(), src, rskip, rlimit, batchSize, single)
		return err
	})
	return out, err
}

func cmdCount(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	query := docArg(req, "query")
	skip, limit := intArg(req, "skip"), intArg(req, "limit")
	if limit < 0 {
		limit = -limit
	}
	var n int64
	err := r.retry(ctx, req.ns(), func() error {
		n = 0
		rt, shards, err := r.routeTargets(ctx, req.db, req.coll(), query, docArg(req, "collation"))
		if err != nil || rt.db == nil {
			return err
		}
		one := len(shards) == 1
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document {
			if one {
				return req.body // toShardSeq drops the client-only fields
			}
			return rewrite(req.body, map[string]bool{"skip": true, "limit": true}, func(b *bsoncore.DocumentBuilder) {
				if limit > 0 {
					b.AppendInt64("limit", skip+limit)
				}
			})
		})
		if err != nil {
			return err
		}
		for _, rep := range replies {
			c, _ := rep.Lookup("n").AsInt64OK()
			n += c
		}
		if !one {
			n = max(0, n-skip)
			if limit > 0 {
				n = min(n, limit)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return marshal(bson.D{{Key: "n", Value: n}, {Key: "ok", Value: 1.0}}), nil
}

func cmdDistinct(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	query := docArg(req, "query")
	var values []bsoncore.Value
	err := r.retry(ctx, req.ns(), func() error {
		values = nil
		rt, shards, err := r.routeTargets(ctx, req.db, req.coll(), query, docArg(req, "collation"))
		if err != nil || rt.db == nil {
			return err
		}
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return req.body })
		if err != nil {
			return err
		}
		coll, err := rt.collator(req) // values equal under it are one ("a" from one shard, "A" from another)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, rep := range replies {
			arr, _ := rep.Lookup("values").ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				var k string
				if coll != nil {
					k = string(keystring.AppendCollated(nil, v, coll))
				} else {
					k = string(keystring.Append(nil, v))
				}
				if !seen[k] {
					seen[k] = true
					values = append(values, v)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range values {
		arr.AppendValue(v)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("values", arr.Build()).AppendDouble("ok", 1).Build(), nil
}

// routerCatalog reads foreign collections for the router's half of a
// pipeline ($lookup, $unionWith): every document, from the shards that
// own them.
type routerCatalog struct {
	r    *Router
	ctxp *context.Context
}

func (c routerCatalog) Scan(ctx context.Context, db, coll string) (agg.Source, error) {
	rt, err := c.r.route(ctx, db, coll, false)
	if err != nil {
		return nil, err
	}
	if rt.db == nil {
		return agg.SliceSource(nil), nil
	}
	shards := rt.allShards()
	body := bsoncore.NewDocumentBuilder().AppendString("find", coll).Build()
	replies, err := c.r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return body })
	if err != nil {
		return nil, err
	}
	return c.r.streams(c.ctxp, shards, rt, replies, nil, nil)
}

func pipelineArg(req *request) ([]bsoncore.Document, error) {
	return req.docs("pipeline")
}

func cmdAggregate(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	if pipeline, err := pipelineArg(req); err == nil && len(pipeline) > 0 && req.db == "admin" {
		if _, err := pipeline[0].LookupErr("$shardedDataDistribution"); err == nil {
			return r.shardedDataDistribution(ctx, req, pipeline[1:])
		}
	}
	if _, ok := req.body.Lookup("aggregate").StringValueOK(); !ok {
		return r.collectionless(ctx, req) // cmd_collectionless.go
	}
	if ex, _ := req.body.Lookup("explain").BooleanOK(); ex {
		inner := rewrite(req.body, map[string]bool{"explain": true}, nil)
		return r.explain(ctx, req, inner, "queryPlanner")
	}
	pipeline, err := pipelineArg(req)
	if err != nil {
		return nil, err
	}
	var filter bsoncore.Document
	if len(pipeline) > 0 {
		filter, _ = pipeline[0].Lookup("$match").DocumentOK()
	}
	cursorOpt := docArg(req, "cursor")
	batchSize, _ := cursorOpt.Lookup("batchSize").AsInt64OK()
	allowDisk, _ := req.body.Lookup("allowDiskUse").BooleanOK()
	var out bsoncore.Document
	err = r.retry(ctx, req.ns(), func() error {
		rt, shards, err := r.routeTargets(ctx, req.db, req.coll(), filter, docArg(req, "collation"))
		if err != nil || rt.db == nil {
			out = cursorReply(0, req.ns(), "firstBatch", nil)
			return err
		}
		ctxp := &ctx
		if isCollStats(pipeline) && rt.db.primary != configShard {
			return r.collStatsPerShard(ctxp, req, rt, pipeline, allowDisk, batchSize, &out)
		}
		if len(shards) == 1 && passesThrough(rt, pipeline) {
			replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return req.body })
			if err != nil {
				return err
			}
			if exhausted(replies[0]) {
				out = replies[0]
				return nil
			}
			src, err := r.streams(ctxp, shards, rt, replies, nil, nil)
			if err != nil {
				return err
			}
			out, err = r.openCursor(ctxp, req, req.ns(), src, 0, 0, batchSize, false)
			return err
		}
		coll, err := rt.collator(req)
		if err != nil {
			return err
		}
		opts := agg.Options{AllowDiskUse: allowDisk, DB: req.db, Catalog: routerCatalog{r, ctxp}, Collation: coll}
		if _, err := agg.Parse(pipeline, opts); err != nil {
			return err // the router's refusal, before any shard runs anything
		}
		sp, err := agg.Split(pipeline)
		if err != nil {
			return err
		}
		shardPart, mergePart := sp.Shards, sp.Merge
		arr := bsoncore.NewArrayBuilder()
		for _, st := range shardPart {
			arr.AppendDocument(st)
		}
		body := rewrite(req.body, map[string]bool{"pipeline": true, "cursor": true, "needsMerge": true}, func(b *bsoncore.DocumentBuilder) {
			b.AppendArray("pipeline", arr.Build()).AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build())
			if sp.NeedsMerge {
				b.AppendBoolean("needsMerge", true) // the shards' $group emits partial states
			}
		})
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return body })
		if err != nil {
			return err
		}
		src, err := r.streams(ctxp, shards, rt, replies, sp.SortKey, opts.Collation)
		if err != nil {
			return err
		}
		if len(mergePart) > 0 {
			p, err := agg.Parse(mergePart, opts)
			if err == nil && p.Output() != nil {
				err = mongoerr.New(mongoerr.InvalidOptions, "%s from a collection spread over several shards is not supported by Cairn's router yet", p.Output().Stage)
			}
			if err != nil {
				_ = src.Close()
				return err
			}
			if src, err = p.Run(ctx, src); err != nil {
				return err
			}
		}
		out, err = r.openCursor(ctxp, req, req.ns(), src, 0, 0, batchSize, false)
		return err
	})
	return out, err
}

// shardedDataDistribution answers MongoDB 7.0's $shardedDataDistribution
// (sh.status() shows it): per sharded collection, per shard owning chunks,
// its documents and their bytes by the shard's $collStats. Orphans are
// counted as none: the range deleter is the shard side's.
func (r *Router) shardedDataDistribution(ctx context.Context, req *request, rest []bsoncore.Document) (bsoncore.Document, error) {
	colls, err := r.configFind(ctx, "collections", nil, bson.D{{Key: "_id", Value: 1}})
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for _, c := range colls {
		ns, _ := c.Lookup("_id").StringValueOK()
		db, coll, err := splitNS(ns)
		if err != nil {
			continue
		}
		rt, err := r.route(ctx, db, coll, false)
		if err != nil || !rt.sharded() {
			continue
		}
		body := marshal(bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}}}, {Key: "cursor", Value: bson.D{}}})
		shards := rt.allShards()
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return body })
		if err != nil {
			return nil, err
		}
		arr := bsoncore.NewArrayBuilder()
		for i, rep := range replies {
			var count, size int64
			for _, d := range arrayDocs(rep.Lookup("cursor", "firstBatch")) {
				st, _ := d.Lookup("storageStats").DocumentOK()
				count, _ = st.Lookup("count").AsInt64OK()
				size, _ = st.Lookup("size").AsInt64OK()
			}
			arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("shardName", shards[i]).AppendInt64("numOrphanedDocs", 0).
				AppendInt64("numOwnedDocuments", count).AppendInt64("ownedSizeBytes", size).AppendInt64("orphanedSizeBytes", 0).Build())
		}
		out = append(out, bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendArray("shards", arr.Build()).Build())
	}
	var src agg.Source = agg.SliceSource(out)
	if len(rest) > 0 {
		p, err := agg.Parse(rest, agg.Options{DB: "admin"})
		if err != nil {
			return nil, err
		}
		if src, err = p.Run(ctx, src); err != nil {
			return nil, err
		}
	}
	batchSize, _ := docArg(req, "cursor").Lookup("batchSize").AsInt64OK()
	return r.openCursor(&ctx, req, "admin.$cmd.aggregate", src, 0, 0, batchSize, false)
}

// passesThrough reports whether a pipeline reaching one shard can run
// there whole: it reads no other collection (the shard may not hold it;
// the router's half reads it from its owners), and it writes one ($out,
// $merge) only from an unsharded collection, on its database's primary.
func passesThrough(rt *routing, pipeline []bsoncore.Document) bool {
	for _, st := range pipeline {
		for _, name := range []string{"$lookup", "$unionWith", "$graphLookup"} {
			if bytes.Contains(st, []byte(name)) {
				return false
			}
		}
		if rt.sharded() && (bytes.Contains(st, []byte("$out")) || bytes.Contains(st, []byte("$merge"))) {
			return false
		}
	}
	return true
}

func isCollStats(pipeline []bsoncore.Document) bool {
	if len(pipeline) == 0 {
		return false
	}
	_, err := pipeline[0].LookupErr("$collStats")
	return err == nil
}

// collStatsPerShard is mongos's $collStats: the stage runs on every shard
// owning a chunk of the collection (an unsharded one: its primary), and
// each shard's document names it (ns, shard, then host, localTime and the
// statistics as the shard answers them; getShardDistribution reads one
// document per shard). The rest of the pipeline runs at the router over
// those documents, so that it sees their shard fields.
func (r *Router) collStatsPerShard(ctxp *context.Context, req *request, rt *routing, pipeline []bsoncore.Document, allowDisk bool, batchSize int64, out *bsoncore.Document) error {
	var src agg.Source
	var p *agg.Pipeline
	if len(pipeline) > 1 {
		coll, err := rt.collator(req)
		if err != nil {
			return err
		}
		p, err = agg.Parse(pipeline[1:], agg.Options{AllowDiskUse: allowDisk, DB: req.db, Catalog: routerCatalog{r, ctxp}, Collation: coll})
		if err != nil {
			return err
		}
		if p.Output() != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "%s after $collStats is not supported by Cairn's router yet", p.Output().Stage)
		}
	}
	shards := rt.allShards()
	first := bsoncore.NewArrayBuilder().AppendDocument(pipeline[0]).Build()
	body := rewrite(req.body, map[string]bool{"pipeline": true, "cursor": true}, func(b *bsoncore.DocumentBuilder) {
		b.AppendArray("pipeline", first).AppendDocument("cursor", bsoncore.NewDocumentBuilder().Build())
	})
	replies, err := r.scatter(*ctxp, shards, rt, func(string) bsoncore.Document { return body })
	if err != nil {
		return err
	}
	var docs []bsoncore.Document
	for i, rep := range replies {
		s, err := newShardStream(r, ctxp, shards[i], rt, rep)
		if err != nil {
			return err
		}
		all, err := agg.ReadAll(s)
		if err != nil {
			return err
		}
		for _, d := range all {
			docs = append(docs, withShard(d, shards[i], false))
		}
	}
	src = agg.SliceSource(docs)
	if p != nil {
		if src, err = p.Run(*ctxp, src); err != nil {
			return err
		}
	}
	*out, err = r.openCursor(ctxp, req, req.ns(), src, 0, 0, batchSize, false)
	return err
}

// filterOf is the filter a command targets by.
func filterOf(inner bsoncore.Document) bsoncore.Document {
	name := inner.Index(0).Key()
	switch name {
	case "find":
		d, _ := inner.Lookup("filter").DocumentOK()
		return d
	case "count", "distinct":
		d, _ := inner.Lookup("query").DocumentOK()
		return d
	case "aggregate":
		arr, _ := inner.Lookup("pipeline").ArrayOK()
		if first, err := arr.IndexErr(0); err == nil {
			if st, ok := first.DocumentOK(); ok {
				d, _ := st.Lookup("$match").DocumentOK()
				return d
			}
		}
	case "findAndModify", "findandmodify":
		d, _ := inner.Lookup("query").DocumentOK()
		return d
	case "update", "delete":
		arr, _ := inner.Lookup(map[string]string{"update": "updates", "delete": "deletes"}[name]).ArrayOK()
		if first, err := arr.IndexErr(0); err == nil {
			if st, ok := first.DocumentOK(); ok {
				d, _ := st.Lookup("q").DocumentOK()
				return d
			}
		}
	}
	return nil
}

func cmdExplain(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	inner, ok := req.body.Lookup("explain").DocumentOK()
	if !ok || len(inner) <= 5 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	verbosity := req.str("verbosity")
	if verbosity == "" {
		verbosity = "allPlansExecution"
	}
	return r.explain(ctx, req, inner, verbosity)
}

// explain asks each targeted shard to explain inner and answers in
// mongos's shape: SINGLE_SHARD for one shard, SHARD_MERGE (or
// SHARD_MERGE_SORT) for several, each shard's plan under shards.
func (r *Router) explain(ctx context.Context, req *request, inner bsoncore.Document, verbosity string) (bsoncore.Document, error) {
	coll, _ := inner.Index(0).Value().StringValueOK()
	ns := req.db + "." + coll
	var out bsoncore.Document
	err := r.retry(ctx, ns, func() error {
		rt, shards, err := r.routeTargets(ctx, req.db, coll, filterOf(inner), collationOf(inner))
		if err != nil {
			return err
		}
		if rt.db == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "database %s not found", req.db)
		}
		innerFwd := rewrite(inner, nil, nil)
		replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document {
			return bsoncore.NewDocumentBuilder().AppendDocument("explain", innerFwd).AppendString("verbosity", verbosity).Build()
		})
		if err != nil {
			return err
		}
		stage := "SINGLE_SHARD"
		if len(shards) > 1 {
			stage = "SHARD_MERGE"
			if s, ok := inner.Lookup("sort").DocumentOK(); ok && len(s) > 5 && inner.Index(0).Key() == "find" {
				stage = "SHARD_MERGE_SORT"
			}
		}
		planShards, execShards := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
		var nRet, keys, docs, millis int64
		hasExec := false
		for i, rep := range replies {
			sh, _ := r.cache.shard(ctx, shards[i])
			qp, ok := rep.Lookup("queryPlanner").DocumentOK()
			entry := bsoncore.NewDocumentBuilder().AppendString("shardName", shards[i]).AppendString("connectionString", sh.host)
			if si, ok := rep.Lookup("serverInfo").DocumentOK(); ok {
				entry.AppendDocument("serverInfo", si)
			}
			src := qp
			if !ok {
				src = rep
			}
			els, _ := src.Elements()
			for _, el := range els {
				switch el.Key() {
				case "ok", "serverInfo", "executionStats", "$clusterTime", "operationTime", "command", "serverParameters":
					continue
				}
				entry.AppendValue(el.Key(), el.Value())
			}
			planShards.AppendDocument(entry.Build())
			if es, ok := rep.Lookup("executionStats").DocumentOK(); ok {
				hasExec = true
				n, _ := es.Lookup("nReturned").AsInt64OK()
				k, _ := es.Lookup("totalKeysExamined").AsInt64OK()
				d, _ := es.Lookup("totalDocsExamined").AsInt64OK()
				ms, _ := es.Lookup("executionTimeMillis").AsInt64OK()
				nRet, keys, docs, millis = nRet+n, keys+k, docs+d, max(millis, ms)
				e := bsoncore.NewDocumentBuilder().AppendString("shardName", shards[i]).AppendBoolean("executionSuccess", true)
				els, _ := es.Elements()
				for _, el := range els {
					e.AppendValue(el.Key(), el.Value())
				}
				execShards.AppendDocument(e.Build())
			}
		}
		winning := bsoncore.NewDocumentBuilder().AppendString("stage", stage).AppendArray("shards", planShards.Build()).Build()
		qp := bsoncore.NewDocumentBuilder().AppendInt32("mongosPlannerVersion", 1).AppendDocument("winningPlan", winning).Build()
		b := bsoncore.NewDocumentBuilder().AppendDocument("queryPlanner", qp)
		if hasExec {
			stages := bsoncore.NewDocumentBuilder().AppendString("stage", stage).AppendInt64("nReturned", nRet).
				AppendInt64("executionTimeMillis", millis).AppendInt64("totalKeysExamined", keys).AppendInt64("totalDocsExamined", docs).
				AppendArray("shards", execShards.Build()).Build()
			b.AppendDocument("executionStats", bsoncore.NewDocumentBuilder().AppendBoolean("executionSuccess", true).
				AppendInt64("nReturned", nRet).AppendInt64("executionTimeMillis", millis).AppendInt64("totalKeysExamined", keys).
				AppendInt64("totalDocsExamined", docs).AppendDocument("executionStages", stages).Build())
		}
		out = b.AppendDocument("serverInfo", serverInfo()).AppendDouble("ok", 1).Build()
		return nil
	})
	return out, err
}

// collator is the collation a command's results are merged by: its own,
// or the sharded collection's default (nil: simple).
func (rt *routing) collator(req *request) (*collation.Collator, error) {
	d := rt.collation(docArg(req, "collation"))
	if d == nil {
		return nil, nil
	}
	return collation.Parse(d)
}

// collationOf is an explained command's collation (nil: none).
func collationOf(inner bsoncore.Document) bsoncore.Document {
	d, _ := inner.Lookup("collation").DocumentOK()
	return d
}
