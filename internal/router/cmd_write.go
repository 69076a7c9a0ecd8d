package router

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// writeResult gathers a write command's per-shard answers into one reply,
// with writeErrors' indexes back in the client's numbering. It lasts
// across the retries of a stale routing: done records the statements
// (and, for a statement sent to several shards, the shards) that have
// answered, which a retry does not send again.
type writeResult struct {
	n, nModified int64
	upserted     []bsoncore.Document
	generated    []bsoncore.Document // insert's generatedIds
	errors       []bsoncore.Document
	wce          bsoncore.Document
	done         map[int]map[string]bool // statement → shards that answered it
}

// answered reports whether shard answered statement i.
func (w *writeResult) answered(i int, shard string) bool { return w.done[i][shard] }

// settled reports whether any shard answered statement i (or the router
// did).
func (w *writeResult) settled(i int) bool { return len(w.done[i]) > 0 }

func (w *writeResult) mark(i int, shard string) {
	if w.done == nil {
		w.done = map[int]map[string]bool{}
	}
	if w.done[i] == nil {
		w.done[i] = map[string]bool{}
	}
	w.done[i][shard] = true
}

// add records a shard's reply to batch b. Statements the shard answered
// with a stale shard or database version (mongod's per-statement
// StaleConfig) are not recorded and not marked: it returns whether there
// was one, and the caller retries them after a refresh. An ordered batch
// ran nothing after its first stale statement.
func (w *writeResult) add(reply bsoncore.Document, b batch, ordered bool) (stale bool) {
	index := b.index
	firstStale := len(index)
	for _, e := range arrayDocs(reply.Lookup("writeErrors")) {
		i, _ := e.Lookup("index").AsInt64OK()
		if code, _ := e.Lookup("code").AsInt64OK(); staleCode(int32(code)) && int(i) < firstStale {
			firstStale = int(i)
		}
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	m, _ := reply.Lookup("nModified").AsInt64OK()
	w.n += n
	w.nModified += m
	for _, u := range arrayDocs(reply.Lookup("upserted")) {
		i, _ := u.Lookup("index").AsInt64OK()
		w.upserted = append(w.upserted, withIndex(u, index[i]))
	}
	for _, g := range arrayDocs(reply.Lookup("generatedIds")) {
		i, _ := g.Lookup("index").AsInt64OK()
		w.generated = append(w.generated, withIndex(g, index[i]))
	}
	for _, e := range arrayDocs(reply.Lookup("writeErrors")) {
		i, _ := e.Lookup("index").AsInt64OK()
		if code, _ := e.Lookup("code").AsInt64OK(); staleCode(int32(code)) {
			continue
		}
		w.errors = append(w.errors, withIndex(e, index[i]))
	}
	if wce, ok := reply.Lookup("writeConcernError").DocumentOK(); ok {
		w.wce = wce
	}
	for k, i := range index {
		if k < firstStale || !ordered && !staleAt(reply, k) {
			w.mark(i, b.shard)
		}
	}
	return firstStale < len(index)
}

// staleAt reports whether a reply's write error of batch position k is a
// stale version.
func staleAt(reply bsoncore.Document, k int) bool {
	for _, e := range arrayDocs(reply.Lookup("writeErrors")) {
		i, _ := e.Lookup("index").AsInt64OK()
		code, _ := e.Lookup("code").AsInt64OK()
		if int(i) == k && staleCode(int32(code)) {
			return true
		}
	}
	return false
}

func (w *writeResult) fail(i int, err error) {
	w.mark(i, "")
	var code int32
	var msg string
	if re, ok := err.(*memberclient.ReplyError); ok {
		code = int32(re.Code())
		msg, _ = re.Reply.Lookup("errmsg").StringValueOK()
	} else {
		code, msg = int32(mongoerr.CodeOf(err)), err.Error()
		if e, ok := mongoerr.As(err); ok {
			msg = e.Msg
		}
	}
	w.errors = append(w.errors, bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i)).AppendInt32("code", code).
		AppendString("codeName", mongoerr.Code(code).Name()).AppendString("errmsg", msg).Build())
}

func withIndex(d bsoncore.Document, i int) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i))
	els, _ := d.Elements()
	for _, el := range els {
		if el.Key() != "index" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

func (w *writeResult) reply(withModified bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("n", int32(w.n))
	if withModified {
		b.AppendInt32("nModified", int32(w.nModified))
	}
	if len(w.upserted) > 0 {
		arr := bsoncore.NewArrayBuilder()
		for _, u := range w.upserted {
			arr.AppendDocument(u)
		}
		b.AppendArray("upserted", arr.Build())
	}
	if len(w.generated) > 0 {
		sort.Slice(w.generated, func(i, j int) bool {
			a, _ := w.generated[i].Lookup("index").AsInt64OK()
			b, _ := w.generated[j].Lookup("index").AsInt64OK()
			return a < b
		})
		arr := bsoncore.NewArrayBuilder()
		for _, g := range w.generated {
			arr.AppendDocument(g)
		}
		b.AppendArray("generatedIds", arr.Build())
	}
	if len(w.errors) > 0 {
		arr := bsoncore.NewArrayBuilder()
		for _, e := range w.errors {
			arr.AppendDocument(e)
		}
		b.AppendArray("writeErrors", arr.Build())
	}
	if w.wce != nil {
		b.AppendDocument("writeConcernError", w.wce)
	}
	return b.AppendDouble("ok", 1).Build()
}

// batch is the statements of one write command going to one shard, with
// their indexes in the client's command.
type batch struct {
	shard string
	docs  []bsoncore.Document
	index []int
}

// sendBatches sends each batch as cmdName with its statements under field.
// Ordered: one after another, stopping at the first error; unordered: all
// at once. Every answer is recorded (res.add) before a stale one — the
// shard's StaleConfig for the whole command or for statements — is
// returned as *errStale: the retry sends only what has not answered, so
// nothing runs twice.
func (r *Router) sendBatches(ctx context.Context, req *request, rt *routing, field string, batches []batch, ordered bool, res *writeResult) error {
	// The statements travel as a document sequence, as drivers send them:
	// a batch may hold up to 48 MB, more than a command body may.
	body := rewrite(req.body, map[string]bool{field: true}, nil)
	bodyOf := func(b batch) bsoncore.Document { return body }
	if op := sessionOf(ctx); op != nil && op.retryable && rt.db != nil && rt.db.primary != configShard {
		// Each statement is recorded on its shard under its position in
		// the client's batch (stmtIds), so a retry routed differently
		// finds it. (The config servers get the whole batch, and take
		// no stmtIds: those come with shardVersion.)
		bodyOf = func(b batch) bsoncore.Document {
			idx, dst := copyFields(make([]byte, 0, len(body)+16+8*len(b.index)), body, nil)
			dst = appendStmtIDs(dst, b.index)
			dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
			return dst
		}
	}
	if ordered {
		for _, b := range batches {
			reply, err := r.toShardSeq(ctx, b.shard, rt, bodyOf(b), &memberclient.Sequence{ID: field, Docs: b.docs})
			if err != nil {
				return err
			}
			before := len(res.errors)
			if res.add(reply, b, true) {
				return &errStale{errStaleStatements}
			}
			if len(res.errors) > before {
				return nil
			}
		}
		return nil
	}
	replies := make([]bsoncore.Document, len(batches))
	errs := make([]error, len(batches))
	if len(batches) == 1 { // a targeted statement: no goroutine to wait for
		replies[0], errs[0] = r.toShardSeq(ctx, batches[0].shard, rt, bodyOf(batches[0]), &memberclient.Sequence{ID: field, Docs: batches[0].docs})
		if errs[0] == nil && res.add(replies[0], batches[0], false) {
			errs[0] = &errStale{errStaleStatements}
		}
		return errs[0]
	}
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = r.toShardSeq(ctx, b.shard, rt, bodyOf(b), &memberclient.Sequence{ID: field, Docs: b.docs})
		}()
	}
	wg.Wait()
	for i, reply := range replies {
		if errs[i] == nil && res.add(reply, batches[i], false) {
			errs[i] = &errStale{errStaleStatements}
		}
	}
	return firstError(errs)
}

// errStaleStatements is the cause of a retry for statements a shard
// answered with a stale version.
var errStaleStatements = mongoerr.New(mongoerr.StaleConfig, "a shard answered statements of the write with a stale shard version")

func orderedArg(req *request) bool {
	v, _ := req.arg("ordered")
	o, ok := v.BooleanOK()
	return !ok || o
}

// keyNeedsID reports whether a document's shard key reads its _id: then
// the router gives a document without one an ObjectId before routing it.
// Otherwise the shard makes the id, by the collection's idGenerator
// (sequential ids carry the shard's documentIdUniquePrefix, unique in the
// cluster), and the reply's generatedIds say which.
func keyNeedsID(rt *routing) bool {
	if !rt.sharded() {
		return false
	}
	for _, f := range rt.coll.m.Pattern.Fields {
		if pathsMeet(f.Path, "_id") {
			return true
		}
	}
	return false
}

// withID returns doc with an _id first: a router-made ObjectId when it
// has none.
func withID(doc bsoncore.Document) bsoncore.Document {
	if _, err := doc.LookupErr("_id"); err == nil {
		return doc
	}
	oid := bson.NewObjectID()
	b := bsoncore.NewDocumentBuilder().AppendObjectID("_id", oid)
	els, _ := doc.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

func cmdInsert(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	docs, err := req.docs("documents")
	if err != nil {
		return nil, err
	}
	ordered := orderedArg(req)
	var res writeResult
	err = r.retry(ctx, req.ns(), func() error {
		rt, err := r.route(ctx, req.db, req.coll(), true)
		if err != nil {
			return err
		}
		var batches []batch
		byShard := map[string]int{}
		needsID := keyNeedsID(rt)
		failAt := -1
		for i, d := range docs {
			if res.done[i] != nil {
				continue // answered before a stale routing's retry
			}
			if needsID {
				d = withID(d)
				docs[i] = d // a retry after StaleConfig keeps the id
			}
			s := rt.db.primary
			if rt.sharded() {
				if s, err = rt.coll.m.ShardFor(d); err != nil {
					if ordered {
						failAt = i
						break
					}
					res.fail(i, err)
					continue
				}
			}
			j, ok := byShard[s]
			if ordered && (len(batches) == 0 || batches[len(batches)-1].shard != s) || !ordered && !ok {
				batches = append(batches, batch{shard: s})
				j = len(batches) - 1
				byShard[s] = j
			} else if ordered {
				j = len(batches) - 1
			}
			batches[j].docs = append(batches[j].docs, d)
			batches[j].index = append(batches[j].index, i)
		}
		if err := r.sendBatches(ctx, req, rt, "documents", batches, ordered, &res); err != nil {
			return err
		}
		if failAt >= 0 && len(res.errors) == 0 {
			// the document whose shard key could not be read, after
			// every earlier one went in
			res.fail(failAt, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res.reply(false), nil
}

// targetStatement finds the shards a single update or delete statement
// goes to, under MongoDB 7.0's rules for a sharded collection without its
// two-phase "without shard key" protocol: a multi statement goes to every
// shard its filter targets; a single one needs one target by its shard
// key, or an equality on _id (then the router finds which of the targeted
// shards owns the document, ownerOf, and writes there).
func targetStatement(rt *routing, stmt bsoncore.Document, kind string) ([]string, error) {
	q, _ := stmt.Lookup("q").DocumentOK()
	collation, _ := stmt.Lookup("collation").DocumentOK()
	shards, exact, err := rt.targetsUnder(q, collation)
	if err != nil || !rt.sharded() {
		return shards, err
	}
	if kind == "update" {
		u := stmt.Lookup("u")
		if repl, ok := u.DocumentOK(); ok && !isOperatorDoc(repl) {
			// A replacement goes where its own shard key lives; if the
			// filter cannot reach that shard, the document would move.
			owner, err := rt.coll.m.ShardFor(repl)
			if err != nil {
				return nil, err
			}
			for _, s := range shards {
				if s == owner {
					return []string{owner}, nil
				}
			}
			return nil, errMovesDocument(rt)
		}
		if touchesShardKey(rt.coll.m.Pattern, u) {
			return nil, errMovesDocument(rt)
		}
	}
	multi := isMulti(stmt, kind)
	upsert, _ := stmt.Lookup("upsert").BooleanOK()
	if multi || len(shards) == 1 && (exact || !upsert) {
		return shards, nil
	}
	if !upsert && hasIDEquality(q) {
		return shards, nil
	}
	if kind == "delete" {
		return nil, mongoerr.New(mongoerr.ShardKeyNotFound, "A single delete on a sharded collection must contain an exact match on _id (and have the collection default collation) or contain the shard key (and have the simple collation). Delete request: %s, shard key pattern: %s (Cairn's router does not implement 7.0's deleteOne without shard key)", stmt, rt.coll.m.Pattern)
	}
	if upsert {
		return nil, mongoerr.New(mongoerr.ShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key: an upsert on a sharded collection must name the full shard key (%s) by equality", rt.coll.m.Pattern)
	}
	return nil, mongoerr.New(mongoerr.InvalidOptions, "A {multi:false} update on a sharded collection must contain an exact match on _id (and have the collection default collation) or target a single shard (and have the simple collation), but this update targeted %d shards. Update request: %s, shard key pattern: %s (Cairn's router does not implement 7.0's updateOne without shard key)", len(shards), stmt, rt.coll.m.Pattern)
}

func errMovesDocument(rt *routing) error {
	return mongoerr.New(mongoerr.IllegalOperation, "this update may change the shard key (%s) of a document: Cairn's router does not yet move a document to the shard owning its new key (MongoDB 7.0 does so in a retryable write or a transaction)", rt.coll.m.Pattern)
}

func isOperatorDoc(d bsoncore.Document) bool {
	el, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}

// pathsMeet reports whether two dotted paths are equal or one holds the
// other.
func pathsMeet(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// touchesShardKey reports whether an update (operators or a pipeline)
// may write a shard key field; unknown pipeline stages count as touching.
func touchesShardKey(p *shard.Pattern, u bsoncore.Value) bool {
	meets := func(path string) bool {
		for _, f := range p.Fields {
			if pathsMeet(path, f.Path) {
				return true
			}
		}
		return false
	}
	if d, ok := u.DocumentOK(); ok {
		ops, _ := d.Elements()
		for _, op := range ops {
			args, ok := op.Value().DocumentOK()
			if !ok {
				return true
			}
			fields, _ := args.Elements()
			for _, f := range fields {
				if meets(f.Key()) {
					return true
				}
				if op.Key() == "$rename" {
					if to, ok := f.Value().StringValueOK(); !ok || meets(to) {
						return true
					}
				}
			}
		}
		return false
	}
	arr, ok := u.ArrayOK()
	if !ok {
		return true
	}
	stages, _ := arr.Values()
	for _, sv := range stages {
		st, ok := sv.DocumentOK()
		if !ok {
			return true
		}
		el, err := st.IndexErr(0)
		if err != nil {
			return true
		}
		switch el.Key() {
		case "$set", "$addFields":
			fields, _ := el.Value().Document().Elements()
			for _, f := range fields {
				if meets(f.Key()) {
					return true
				}
			}
		case "$unset":
			if s, ok := el.Value().StringValueOK(); ok {
				if meets(s) {
					return true
				}
				continue
			}
			vals, _ := el.Value().Array().Values()
			for _, v := range vals {
				if s, _ := v.StringValueOK(); meets(s) {
					return true
				}
			}
		default:
			return true
		}
	}
	return false
}

func hasIDEquality(q bsoncore.Document) bool {
	v, err := q.LookupErr("_id")
	if err != nil {
		return false
	}
	if d, ok := v.DocumentOK(); ok {
		if el, err := d.IndexErr(0); err == nil && len(el.Key()) > 0 && el.Key()[0] == '$' {
			return el.Key() == "$eq"
		}
	}
	return true
}

// isMulti reports whether an update or delete statement may change
// several documents.
func isMulti(stmt bsoncore.Document, kind string) bool {
	if kind == "delete" {
		limit, _ := stmt.Lookup("limit").AsInt64OK()
		return limit == 0
	}
	multi, _ := stmt.Lookup("multi").BooleanOK()
	return multi
}

// ownerOf is the first phase of a single-document write whose filter q has
// an equality on _id but not the shard key (MongoDB 7.0's write without
// shard key): the shard among shards that owns a document q matches, read
// with each shard's version (so a migration's copy, an orphan, is not
// seen); "" when none does. The write then goes to that shard alone, with
// the same version: if the document's chunk moved in between, the shard
// answers StaleConfig and both phases run again on the new map. Sending
// the write to every shard instead would change the document twice while
// a migration holds a copy, or, once a shard had answered "no document"
// before the commit and was not asked again after it, not at all.
func (r *Router) ownerOf(ctx context.Context, rt *routing, coll string, q, collation bsoncore.Document, shards []string) (string, error) {
	b := bsoncore.NewDocumentBuilder().AppendString("find", coll).AppendDocument("filter", q).
		AppendDocument("projection", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendInt64("limit", 1).AppendBoolean("singleBatch", true)
	if collation != nil {
		b.AppendDocument("collation", collation)
	}
	cmd := b.Build()
	replies, err := r.scatter(ctx, shards, rt, func(string) bsoncore.Document { return cmd })
	if err != nil {
		return "", err
	}
	for i, reply := range replies {
		if batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK(); ok {
			if vals, _ := batch.Values(); len(vals) > 0 {
				return shards[i], nil
			}
		}
	}
	return "", nil
}

func cmdUpdateOrDelete(kind, field string) handler {
	return func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
		stmts, err := req.docs(field)
		if err != nil {
			return nil, err
		}
		if kind == "update" && req.db == "config" {
			if err := refuseAutoMerger(req.coll(), stmts); err != nil {
				return nil, err
			}
		}
		ordered := orderedArg(req)
		var res writeResult
		err = r.retry(ctx, req.ns(), func() error {
			rt, err := r.route(ctx, req.db, req.coll(), kind == "update")
			if err != nil {
				return err
			}
			if rt.db == nil {
				return nil
			}
			for i, st := range stmts {
				if res.answered(i, "") {
					continue // refused before a stale routing's retry
				}
				shards, err := targetStatement(rt, st, kind)
				if err != nil {
					res.fail(i, err)
					if ordered {
						return nil
					}
					continue
				}
				if len(shards) > 1 && !isMulti(st, kind) {
					// One document by _id without the shard key: find
					// its owner first, then write there alone.
					if res.settled(i) {
						continue // answered before a stale routing's retry
					}
					q, _ := st.Lookup("q").DocumentOK()
					collation, _ := st.Lookup("collation").DocumentOK()
					owner, err := r.ownerOf(ctx, rt, req.coll(), q, collation, shards)
					if err != nil {
						return err
					}
					if owner == "" {
						res.mark(i, "") // nothing matches: n = 0
						continue
					}
					shards = []string{owner}
				}
				var batches []batch
				for _, s := range shards {
					// A shard that answered the statement before the
					// retry is not asked again: a multi-document write
					// would apply twice there.
					if !res.answered(i, s) {
						batches = append(batches, batch{shard: s, docs: []bsoncore.Document{st}, index: []int{i}})
					}
				}
				before := len(res.errors)
				if err := r.sendBatches(ctx, req, rt, field, batches, false, &res); err != nil {
					return err
				}
				if ordered && len(res.errors) > before {
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return res.reply(kind == "update"), nil
	}
}

// cmdFindAndModify sends findAndModify to the shard its shard key targets;
// one whose query has an equality on _id but not the shard key goes to the
// shard that owns the document (ownerOf), as 7.0's write without shard key.
// Upserts and replacements need the shard key.
func cmdFindAndModify(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	query := docArg(req, "query")
	var out bsoncore.Document
	err := r.retry(ctx, req.ns(), func() error {
		rt, err := r.route(ctx, req.db, req.coll(), true)
		if err != nil {
			return err
		}
		shards, _, err := rt.targetsUnder(query, docArg(req, "collation"))
		if err != nil {
			return err
		}
		if rt.sharded() && len(shards) != 1 {
			upsert, _ := req.body.Lookup("upsert").BooleanOK()
			u, uerr := req.body.LookupErr("update")
			repl, isDoc := u.DocumentOK()
			if len(shards) == 0 || upsert || !hasIDEquality(query) || isDoc && !isOperatorDoc(repl) {
				return mongoerr.New(mongoerr.ShardKeyNotFound, "Query for sharded findAndModify must contain the shard key (%s); Cairn's router implements 7.0's findAndModify without shard key only for an equality on _id, without upsert or a replacement", rt.coll.m.Pattern)
			}
			if uerr == nil && touchesShardKey(rt.coll.m.Pattern, u) {
				return errMovesDocument(rt)
			}
			owner, err := r.ownerOf(ctx, rt, req.coll(), query, docArg(req, "collation"), shards)
			if err != nil {
				return err
			}
			if owner == "" {
				owner = shards[0] // nothing matches: any shard answers so, in findAndModify's shape
			}
			out, err = r.toShard(ctx, owner, rt, req.body)
			return err
		}
		if rt.sharded() {
			if u, err := req.body.LookupErr("update"); err == nil {
				if repl, ok := u.DocumentOK(); ok && !isOperatorDoc(repl) {
					if owner, err := rt.coll.m.ShardFor(repl); err != nil || owner != shards[0] {
						return errMovesDocument(rt)
					}
				} else if touchesShardKey(rt.coll.m.Pattern, u) {
					return errMovesDocument(rt)
				}
			}
		}
		out, err = r.toShard(ctx, shards[0], rt, req.body)
		return err
	})
	return out, err
}

// refuseAutoMerger refuses an update of the auto-merger's settings
// (config.settings {_id: "automerge"}, config.collections'
// enableAutoMerge: mongosh's sh.startAutoMerger, stopAutoMerger,
// enableAutoMerger, disableAutoMerger): Cairn has no auto-merger, so a
// setting written would be one nothing honours.
func refuseAutoMerger(coll string, stmts []bsoncore.Document) error {
	for _, st := range stmts {
		q, _ := st.Lookup("q").DocumentOK()
		id, _ := q.Lookup("_id").StringValueOK()
		u := st.Lookup("u")
		if coll == "settings" && id == "automerge" || coll == "collections" && bytes.Contains(u.Data, []byte("enableAutoMerge")) {
			return mongoerr.New(mongoerr.InvalidOptions, "Cairn has no auto-merger (MongoDB 7.0's merging of a shard's contiguous chunks): its settings are refused rather than stored unhonoured; mergeChunks merges by hand")
		}
	}
	return nil
}
