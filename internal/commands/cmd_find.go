package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/query"
)

// findSpec is a parsed find: the selection exec runs, and how the reply
// batches its results.
type findSpec struct {
	exec.Selection
	batchSize   int64
	singleBatch bool
	// noCursorTimeout: find's cursor never expires when idle.
	noCursorTimeout bool
	// tailable and awaitData: a tailable cursor (tailable.go).
	tailable, awaitData bool
}

// newSelection parses a filter into a selection with no other options.
func newSelection(ns engine.Namespace, filter bsoncore.Document) (exec.Selection, error) {
	return exec.NewSelection(ns, filter, query.Options{})
}

// newSelectionWith is newSelection for a command with variables ($$NOW, let).
func newSelectionWith(ns engine.Namespace, filter bsoncore.Document, vars query.Options) (exec.Selection, error) {
	return exec.NewSelection(ns, filter, vars)
}

// owned copies a document out of the request buffer.
func owned(d bsoncore.Document) bsoncore.Document { return exec.Owned(d) }

// findFields are find's options, read in one pass over the command's
// fields (parseFind) instead of one lookup per option, most of them
// absent. A field's zero Value (Type 0) means absent; the first of a
// repeated field wins, as Arg's lookup does (Run refuses repeats before).
type findFields struct {
	filter, let, skip, limit, batchSize, singleBatch, allowDiskUse,
	noCursorTimeout, returnKey, showRecordID, projection, sort, collation,
	hint, min, max, tailable, awaitData, oplogReplay bsoncore.Value
}

// read fills f from req's fields.
func (f *findFields) read(req *Request) {
	elems := req.fields()
	if len(elems) > 0 {
		elems = elems[1:] // the command name
	}
	for i := range elems {
		fl := &elems[i]
		var dst *bsoncore.Value
		switch string(fl.key()) {
		case "filter":
			dst = &f.filter
		case "let":
			dst = &f.let
		case "skip":
			dst = &f.skip
		case "limit":
			dst = &f.limit
		case "batchSize":
			dst = &f.batchSize
		case "singleBatch":
			dst = &f.singleBatch
		case "allowDiskUse":
			dst = &f.allowDiskUse
		case "noCursorTimeout":
			dst = &f.noCursorTimeout
		case "returnKey":
			dst = &f.returnKey
		case "showRecordId":
			dst = &f.showRecordID
		case "projection":
			dst = &f.projection
		case "sort":
			dst = &f.sort
		case "collation":
			dst = &f.collation
		case "hint":
			dst = &f.hint
		case "min":
			dst = &f.min
		case "max":
			dst = &f.max
		case "tailable":
			dst = &f.tailable
		case "awaitData":
			dst = &f.awaitData
		case "oplogReplay":
			dst = &f.oplogReplay
		default:
			continue
		}
		if dst.Type == 0 {
			*dst = fl.value()
		}
	}
}

// parseFind reads a find (or the find explain explains). Its checks run in
// the order MongoDB's parser reports them, so that a command with two
// mistakes gets the same refusal.
func parseFind(s *Session, req *Request) (findSpec, error) {
	coll, err := req.Collection()
	if err != nil {
		return findSpec{}, err
	}
	var f findFields // on the stack: nothing below keeps it
	f.read(req)
	filter, err := req.documentOf("filter", f.filter)
	if err != nil {
		return findSpec{}, err
	}
	cv, err := varsOf(req, f.let)
	if err != nil {
		return findSpec{}, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	c, err := commandCollation(s, req, ns)
	if err != nil {
		return findSpec{}, err
	}
	sel, err := newSelectionWith(ns, filter, withCollation(cv.filterOptions(), c))
	sp := findSpec{Selection: sel}
	if err != nil {
		return sp, err
	}
	// skip, limit and batchSize are MongoDB's safeInt64: a fraction is
	// truncated (skip: 1.9 skips one).
	if sp.Skip, err = req.safeIntOf("skip", f.skip, 0); err != nil {
		return sp, err
	}
	if err := nonNegative("skip", sp.Skip); err != nil {
		return sp, err
	}
	if sp.Limit, err = req.safeIntOf("limit", f.limit, 0); err != nil {
		return sp, err
	}
	if err := nonNegative("limit", sp.Limit); err != nil {
		return sp, err // drivers turn a negative limit into singleBatch
	}
	sp.batchSize = DefaultFirstBatch
	if v := f.batchSize; v.Type != 0 && v.Type != bsoncore.TypeNull {
		if sp.batchSize, err = batchSizeOf("find.batchSize", v); err != nil {
			return sp, err // 0 is -1: an empty first batch and a live cursor
		}
	}
	if sp.singleBatch, err = req.boolOf("singleBatch", f.singleBatch, false); err != nil {
		return sp, err
	}
	if sp.AllowDiskUse, err = req.boolOf("allowDiskUse", f.allowDiskUse, false); err != nil {
		return sp, err
	}
	if sp.noCursorTimeout, err = req.boolOf("noCursorTimeout", f.noCursorTimeout, false); err != nil {
		return sp, err
	}
	if sp.ReturnKey, err = req.boolOf("returnKey", f.returnKey, false); err != nil {
		return sp, err
	}
	if sp.ShowRecordID, err = req.boolOf("showRecordId", f.showRecordID, false); err != nil {
		return sp, err
	}
	// oplogReplay asked MongoDB before 4.4 to seek an oplog read to its ts
	// bound; since 4.4 the server does so by itself and ignores the flag,
	// and Cairn's oplog reads seek alike (exec: engine.OplogStart), so the
	// flag is checked as a boolean and asks for nothing more.
	if _, err = req.boolOf("oplogReplay", f.oplogReplay, false); err != nil {
		return sp, err
	}
	if err := checkNatural(f.sort, f.hint); err != nil {
		return sp, err
	}
	if err := parseProjectionAndSort(req, &f, &sp.Selection); err != nil {
		return sp, err
	}
	if err := hintInto(f.hint, &sp.Selection); err != nil {
		return sp, err
	}
	if sp.Min, err = minMaxOf(req, "min", f.min); err != nil {
		return sp, err
	}
	if sp.Max, err = minMaxOf(req, "max", f.max); err != nil {
		return sp, err
	}
	if sp.tailable, sp.awaitData, err = checkTailable(s, req, &f, &sp); err != nil {
		return sp, err
	}
	if sp.Sort != nil { // only a sort reads the budget: a parameter read locks
		sp.SortMemory = sortMemory(s)
	}
	return sp, nil
}

// minMaxOf reads find's min or max: an owned copy, nil when absent or {}.
func minMaxOf(req *Request, name string, v bsoncore.Value) (bsoncore.Document, error) {
	d, err := req.documentOf(name, v)
	if err != nil || len(d) <= 5 {
		return nil, err
	}
	return owned(d), nil
}

// parseProjectionAndSort reads find's projection and sort into sel.
func parseProjectionAndSort(req *Request, f *findFields, sel *exec.Selection) error {
	proj, err := req.documentOf("projection", f.projection)
	if err != nil {
		return err
	}
	if err := sel.SetProjection(proj); err != nil {
		return err
	}
	sortSpec, err := req.documentOf("sort", f.sort)
	if err != nil {
		return err
	}
	if d, ok := naturalSort(sortSpec); ok {
		// {$natural: ±1} is no sort but the collection's natural order
		// (insertion order, for a capped collection): a collection scan.
		sel.Hint = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendInt32("$natural", int32(d)).Build()}
		return nil
	}
	return sel.SetSort(sortSpec)
}

// parseHint reads the command's hint into sel.
func parseHint(req *Request, sel *exec.Selection) error {
	return hintInto(req.arg("hint"), sel)
}

// hintInto reads a hint field's value v (Type 0 when absent) into sel.
func hintInto(v bsoncore.Value, sel *exec.Selection) error {
	if v.Type == 0 {
		return nil
	}
	h, err := hintValue(v)
	sel.Hint = h
	return err
}

// hintValue reads a hint (find's, or a write statement's) for the planner,
// which resolves it against the indexes it sees (an unknown index is
// BadValue there). {} is no hint (Type 0).
func hintValue(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeString:
	case bsoncore.TypeEmbeddedDocument:
		if len(v.Data) <= 5 {
			return bsoncore.Value{}, nil // {}: no hint
		}
	default:
		return bsoncore.Value{}, mongoerr.New(mongoerr.FailedToParse, "hint must be either a string or nested object")
	}
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}, nil
}

func sortMemory(s *Session) int64 {
	if v, ok := s.Env.Params.Get("internalQueryMaxBlockingSortMemoryUsageBytes"); ok {
		if n, ok := v.(int64); ok {
			return n
		}
	}
	return query.DefaultSortMemory
}

func cmdFind(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, ok := s.collName(req.First())
	if ok && isView(s, req.DB, name) {
		if err := refuseAsOfView(req); err != nil {
			return nil, err
		}
		return findOnView(ctx, s, req, name, dst)
	}
	if id, hasRC, express := expressID(req); express && ok {
		if reply, handled, err := findExpress(ctx, s, req, name, id, hasRC, dst); handled { // express.go
			return reply, err
		}
	}
	sp, err := parseFind(s, req)
	if err != nil {
		return nil, err
	}
	s.Env.Ops.Query.Add(1)
	if sp.AsOf, err = readAtClusterTime(s, req); err != nil {
		return nil, err
	}
	if sp.tailable {
		if sp.AsOf != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "a tailable cursor cannot read at a cluster time")
		}
		return findTailable(s, sp, sp.awaitData, dst)
	}
	src, err := s.x().Open(ctx, sp.Selection, exec.Run)
	if err != nil {
		return nil, err
	}
	batch := sp.batchSize
	if sp.Limit > 0 && (batch == 0 || sp.Limit < batch) {
		batch = sp.Limit
	}
	r, held, done, err := fillBatch(dst, "", "firstBatch", nil, src, batch)
	if err != nil {
		_ = src.Close()
		return nil, err
	}
	r.atClusterTime = sp.AsOf
	if !done && held == nil && sp.Limit > 0 && batch == sp.Limit {
		done = true // the batch holds the whole limit: nothing is left, as MongoDB closes it
	}
	examined := s.stat.readPlan(src, r.batchN, [2]int64{})
	if done || sp.singleBatch {
		s.stat.cursorExhausted = done
		_ = src.Close()
		return finishCursorIn(r, 0, sp.NS), nil // no "db.coll" string to build
	}
	ns := sp.NS.String()
	cur := s.Env.Cursors.Register(ns, keepForCursor(src, &sp.Selection), held)
	cur.examined = examined
	s.stat.cursorID = cur.ID
	s.ownCursor(cur)
	cur.noTimeout = sp.noCursorTimeout
	cur.maxTime, _ = opctx.Remaining(ctx)
	cur.coll = s.Env.Engine.Catalog().Collection(sp.NS.DB, sp.NS.Coll)
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, ns), nil
}

func cmdGetMore(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	id, ok := req.First().Int64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'getMore.getMore' is the wrong type '%s', expected type 'long'", typeName(req.First().Type))
	}
	coll, err := req.String("collection", "")
	if err != nil {
		return nil, err
	}
	if coll == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'getMore.collection' is missing but a required field")
	}
	batch, err := req.SafeInt("batchSize", 0)
	if err != nil {
		return nil, err
	}
	if err := nonNegative("batchSize", batch); err != nil {
		return nil, err
	}
	s.Env.Ops.GetMore.Add(1)
	ns := req.DB + "." + coll
	cur, err := s.Env.Cursors.Checkout(id, ns)
	if err != nil {
		return nil, err
	}
	if !s.ownsCursor(cur) {
		s.Env.Cursors.Release(cur, false)
		return nil, mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	if err := checkCursorSession(s, cur); err != nil { // sessions.go
		s.Env.Cursors.Release(cur, false)
		return nil, err
	}
	if err := failGetMoreAfterCheckout(s, ns); err != nil { // cmd_failpoint.go
		s.Env.Cursors.Release(cur, true)
		return nil, err
	}
	if t, ok := cur.src.(*tailSource); ok {
		return getMoreTailable(ctx, s, req, dst, cur, t, batch)
	}
	if c, ok := cur.src.(*csCursor); ok {
		return getMoreChangeStream(ctx, s, req, dst, cur, c, batch) // changestream.go
	}
	if _, ok := req.Arg("maxTimeMS"); ok {
		// Every Cairn cursor is a non-awaitData one (awaitData is not yet
		// honoured), for which MongoDB refuses a getMore's maxTimeMS.
		s.Env.Cursors.Release(cur, false)
		return nil, mongoerr.New(mongoerr.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
	}
	if err := checkCursorCollection(s.Env.Engine.Catalog(), cur); err != nil {
		s.Env.Cursors.Release(cur, true)
		return nil, err
	}
	ctx, resumed := cur.resume(ctx)
	err = opctx.Err(ctx) // the cursor's maxTimeMS may be spent already
	var r *Reply
	var held bsoncore.Document
	var done bool
	if err == nil {
		r, held, done, err = fillBatch(dst, ns, "nextBatch", cur.held, cur.src, batch)
	}
	resumed()
	if err != nil {
		s.Env.Cursors.Release(cur, true)
		return nil, err
	}
	cur.held = held
	cur.examined = s.stat.readPlan(planOf(cur.src), r.batchN, cur.examined)
	s.stat.cursorID, s.stat.cursorExhausted = cur.ID, done
	s.Env.Cursors.Release(cur, done)
	if done {
		return finishCursor(r, 0, ns), nil
	}
	return finishCursor(r, cur.ID, ns), nil
}

func cmdKillCursors(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	v, ok := req.Arg("cursors")
	arr, isArr := v.ArrayOK()
	if !ok || !isArr {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'killCursors.cursors' must be an array of cursor ids")
	}
	vals, _ := arr.Values()
	ns := req.DB + "." + coll
	var killed, notFound []int64
	for _, el := range vals {
		id, ok := el.Int64OK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'killCursors.cursors' must hold longs, found %s", typeName(el.Type))
		}
		if s.Env.Cursors.Kill(id, ns, s.ownsCursor) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	r := NewReply(dst)
	r.Any("cursorsKilled", nonNil(killed)).Any("cursorsNotFound", nonNil(notFound))
	r.Any("cursorsAlive", []int64{}).Any("cursorsUnknown", []int64{})
	return r.Finish(), nil
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func cmdCount(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if name, ok := req.First().StringValueOK(); ok && isView(s, req.DB, name) {
		if err := refuseAsOfView(req); err != nil {
			return nil, err
		}
		n, err := countOnView(ctx, s, req, name)
		if err != nil {
			return nil, err
		}
		return NewReply(dst).Count("n", n).Finish(), nil
	}
	sel, err := parseCountSpec(s, req)
	if err != nil {
		return nil, err
	}
	if sel.AsOf, err = readAtClusterTime(s, req); err != nil {
		return nil, err
	}
	n, err := s.x().Count(ctx, sel)
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Count("n", n).Finish(), nil
}

// parseCountSpec reads a count command (or the count explain explains) as
// a selection.
func parseCountSpec(s *Session, req *Request) (exec.Selection, error) {
	sp, err := selectionFor(s, req, "query")
	if err != nil {
		return sp, err
	}
	if sp.Skip, err = req.Int("skip", 0); err != nil {
		return sp, err
	}
	if sp.Limit, err = req.Int("limit", 0); err != nil {
		return sp, err
	}
	if sp.Skip < 0 {
		return sp, mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
	}
	if sp.Limit < 0 {
		sp.Limit = -sp.Limit
	}
	sp.CountOnly = true
	return sp, parseHint(req, &sp)
}

// selectionFor reads what count and distinct share: the collection, the
// filter in field and the collation.
func selectionFor(s *Session, req *Request, field string) (exec.Selection, error) {
	coll, err := req.Collection()
	if err != nil {
		return exec.Selection{}, err
	}
	filter, err := req.Document(field)
	if err != nil {
		return exec.Selection{}, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	c, err := commandCollation(s, req, ns)
	if err != nil {
		return exec.Selection{}, err
	}
	return newSelectionWith(ns, filter, withCollation(query.Options{}, c))
}
