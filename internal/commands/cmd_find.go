package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/query"
)

// findSpec is a parsed find (or count, distinct, delete, update) selection.
type findSpec struct {
	ns           engine.Namespace
	filter       *query.Filter
	raw          bsoncore.Document // the filter as sent
	rawSort      bsoncore.Document // the sort as sent, for explain
	rawProj      bsoncore.Document // the projection as sent, for explain
	proj         *query.Projection
	positional   bool // the projection has a "field.$" that needs the match position
	sort         *query.Sort
	skip, limit  int64
	batchSize    int64
	singleBatch  bool
	allowDiskUse bool
	sortMemory   int64
	// hint forces a plan (an index name or key pattern, {$natural: ±1});
	// Type 0 lets the planner choose.
	hint bsoncore.Value
	// min and max bound the hinted index's keys (find's options).
	min, max bsoncore.Document
	// countOnly: the results are only counted (count), so the plan may
	// return empty documents (see planner.Query.Count).
	countOnly bool
	// distinct: the pipeline keeps only the first document of each value
	// of this path (see planner.Query.DistinctPath).
	distinct string
}

// newSelection parses a filter into a findSpec with no other options.
func newSelection(ns engine.Namespace, filter bsoncore.Document) (findSpec, error) {
	return newSelectionWith(ns, filter, query.Options{})
}

// newSelectionWith is newSelection for a command with variables ($$NOW, let).
func newSelectionWith(ns engine.Namespace, filter bsoncore.Document, vars query.Options) (findSpec, error) {
	if len(filter) == 0 {
		filter = emptyDocument // an absent filter selects everything
	}
	// A cursor keeps the parsed filter past this request, and the request's
	// bytes alias the connection's read buffer, which the next message
	// overwrites: parse an owned copy.
	filter = owned(filter)
	f, err := query.ParseWith(filter, vars)
	if err != nil {
		return findSpec{}, err
	}
	return findSpec{ns: ns, filter: f, raw: filter}, nil
}

// rawFilter is the filter as sent ({} when none was).
func (sp findSpec) rawFilter() bsoncore.Document {
	if len(sp.raw) == 0 {
		return bsoncore.Document(emptyDocument)
	}
	return sp.raw
}

var emptyDocument = []byte{5, 0, 0, 0, 0}

// owned copies a document out of the request buffer.
func owned(d bsoncore.Document) bsoncore.Document { return append(bsoncore.Document(nil), d...) }

func parseFind(s *Session, req *Request) (findSpec, error) {
	coll, err := req.Collection()
	if err != nil {
		return findSpec{}, err
	}
	filter, err := req.Document("filter")
	if err != nil {
		return findSpec{}, err
	}
	cv, err := requestVars(req)
	if err != nil {
		return findSpec{}, err
	}
	sp, err := newSelectionWith(engine.Namespace{DB: req.DB, Coll: coll}, filter, cv.filterOptions())
	if err != nil {
		return sp, err
	}
	if sp.skip, err = req.Int("skip", 0); err != nil {
		return sp, err
	}
	if sp.skip < 0 {
		return sp, mongoerr.New(mongoerr.BadValue, "BSON field 'skip' value must be >= 0, actual value '%d'", sp.skip)
	}
	if sp.limit, err = req.Int("limit", 0); err != nil {
		return sp, err
	}
	if sp.limit < 0 {
		// A negative limit is the legacy "single batch of |limit|".
		sp.limit, sp.singleBatch = -sp.limit, true
	}
	if sp.batchSize, err = req.Int("batchSize", DefaultFirstBatch); err != nil {
		return sp, err
	}
	if sp.batchSize < 0 {
		return sp, mongoerr.New(mongoerr.BadValue, "BSON field 'batchSize' value must be >= 0, actual value '%d'", sp.batchSize)
	}
	if single, err := req.Bool("singleBatch", false); err != nil {
		return sp, err
	} else if single {
		sp.singleBatch = true
	}
	if sp.allowDiskUse, err = req.Bool("allowDiskUse", false); err != nil {
		return sp, err
	}
	if err := parseProjectionAndSort(req, &sp); err != nil {
		return sp, err
	}
	if err := checkUnsupportedFindOptions(req); err != nil {
		return sp, err
	}
	if err := parseHint(req, &sp); err != nil {
		return sp, err
	}
	for _, mm := range []struct {
		name string
		dst  *bsoncore.Document
	}{{"min", &sp.min}, {"max", &sp.max}} {
		d, err := req.Document(mm.name)
		if err != nil {
			return sp, err
		}
		if len(d) > 5 {
			*mm.dst = owned(d)
		}
	}
	sp.sortMemory = sortMemory(s)
	return sp, nil
}

func parseProjectionAndSort(req *Request, sp *findSpec) error {
	proj, err := req.Document("projection")
	if err != nil {
		return err
	}
	if len(proj) > 5 {
		proj = owned(proj) // kept by the cursor (see newSelection)
		sp.rawProj = proj
		if sp.proj, err = query.ParseProjection(proj, sp.filter); err != nil {
			return err
		}
		elems, _ := proj.Elements()
		for _, el := range elems {
			if strings.HasSuffix(el.Key(), ".$") {
				sp.positional = true
			}
		}
	}
	sortSpec, err := req.Document("sort")
	if err != nil {
		return err
	}
	if len(sortSpec) > 5 {
		sp.rawSort = owned(sortSpec)
		if sp.sort, err = query.ParseSort(sp.rawSort); err != nil {
			return err
		}
	}
	return nil
}

// checkUnsupportedFindOptions refuses options whose absence would change
// results: a non-simple collation, tailable cursors.
func checkUnsupportedFindOptions(req *Request) error {
	if err := checkCollation(req); err != nil {
		return err
	}
	if t, _ := req.Bool("tailable", false); t {
		return mongoerr.New(mongoerr.BadValue, "error processing query: tailable cursor requested on non capped collection")
	}
	return nil
}

// checkCollation accepts only the simple collation (bytewise string order).
func checkCollation(req *Request) error {
	c, err := req.Document("collation")
	if err != nil || len(c) <= 5 {
		return err
	}
	if loc, ok := c.Lookup("locale").StringValueOK(); ok && loc == "simple" {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "collation %s is not supported yet; only {locale: \"simple\"} is", c)
}

// parseHint keeps the hint for the planner, which resolves it against the
// indexes it sees (an unknown index is BadValue there).
func parseHint(req *Request, sp *findSpec) error {
	v, ok := req.Arg("hint")
	if !ok {
		return nil
	}
	switch v.Type {
	case bsoncore.TypeString:
	case bsoncore.TypeEmbeddedDocument:
		if len(v.Data) <= 5 {
			return nil // {}: no hint
		}
	default:
		return mongoerr.New(mongoerr.FailedToParse, "hint must be either a string or nested object")
	}
	sp.hint = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
	return nil
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
	sp, err := parseFind(s, req)
	if err != nil {
		return nil, err
	}
	s.Env.Ops.Query.Add(1)
	src, detach, err := sp.openBound(ctx, s.Env.Engine)
	if err != nil {
		return nil, err
	}
	defer detach()
	ns := sp.ns.String()
	batch := sp.batchSize
	if sp.limit > 0 && (batch == 0 || sp.limit < batch) {
		batch = sp.limit
	}
	r, held, done, err := fillBatch(dst, ns, "firstBatch", nil, src, batch)
	if err != nil {
		_ = src.Close()
		return nil, err
	}
	if done || sp.singleBatch {
		_ = src.Close()
		return finishCursor(r, 0, ns), nil
	}
	cur := s.Env.Cursors.Register(ns, src, held)
	cur.maxTime, _ = opctx.Remaining(ctx)
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
	batch, err := req.Int("batchSize", 0)
	if err != nil {
		return nil, err
	}
	s.Env.Ops.GetMore.Add(1)
	ns := req.DB + "." + coll
	cur, err := s.Env.Cursors.Checkout(id, ns)
	if err != nil {
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
		if s.Env.Cursors.Kill(id, ns) {
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
	sp, err := parseCountSpec(req)
	if err != nil {
		return nil, err
	}
	src, err := sp.open(ctx, s.Env.Engine)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var n int64
	for {
		d, err := src.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		n++
	}
	return NewReply(dst).Count("n", n).Finish(), nil
}

// selectionFor reads what count and distinct share: the collection, the
// filter in field, the collation (simple only) and maxTimeMS.
func selectionFor(req *Request, field string) (findSpec, error) {
	coll, err := req.Collection()
	if err != nil {
		return findSpec{}, err
	}
	filter, err := req.Document(field)
	if err != nil {
		return findSpec{}, err
	}
	sp, err := newSelection(engine.Namespace{DB: req.DB, Coll: coll}, filter)
	if err != nil {
		return sp, err
	}
	return sp, checkCollation(req)
}
