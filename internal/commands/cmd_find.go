package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// findSpec is a parsed find (or count) request.
type findSpec struct {
	ns          engine.Namespace
	filter      bsoncore.Document
	skip, limit int64
	batchSize   int64
	singleBatch bool
}

func parseFind(req *Request) (findSpec, error) {
	coll, err := req.Collection()
	if err != nil {
		return findSpec{}, err
	}
	sp := findSpec{ns: engine.Namespace{DB: req.DB, Coll: coll}}
	if sp.filter, err = req.Document("filter"); err != nil {
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
	for _, unsupported := range []string{"sort", "projection", "hint", "min", "max"} {
		if d, err := req.Document(unsupported); err != nil {
			return sp, err
		} else if len(d) > 5 {
			return sp, mongoerr.New(mongoerr.BadValue, "find option '%s' needs the query language, which this build does not have yet", unsupported)
		}
	}
	return sp, nil
}

// open builds the document source a find reads from.
func (sp findSpec) open(eng *engine.Engine) (Source, error) {
	if id, ok := idEquality(sp.filter); ok {
		doc, found, err := eng.Get(nil, sp.ns, id)
		if err != nil {
			return nil, err
		}
		src := &sliceSource{}
		if found {
			src.docs = []bsoncore.Document{doc}
		}
		return limitSource(src, sp.skip, sp.limit), nil
	}
	match, err := compileFilter(sp.filter)
	if err != nil {
		return nil, err
	}
	it, err := eng.Scan(sp.ns)
	if err != nil {
		return nil, err
	}
	return limitSource(&scanSource{it: it, match: match}, sp.skip, sp.limit), nil
}

func cmdFind(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	sp, err := parseFind(req)
	if err != nil {
		return nil, err
	}
	s.Env.Ops.Query.Add(1)
	src, err := sp.open(s.Env.Engine)
	if err != nil {
		return nil, err
	}
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
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, ns), nil
}

func cmdGetMore(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
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
	r, held, done, err := fillBatch(dst, ns, "nextBatch", cur.held, cur.src, batch)
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

func cmdCount(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	sp := findSpec{ns: engine.Namespace{DB: req.DB, Coll: coll}}
	if sp.filter, err = req.Document("query"); err != nil {
		return nil, err
	}
	if sp.skip, err = req.Int("skip", 0); err != nil {
		return nil, err
	}
	if sp.limit, err = req.Int("limit", 0); err != nil {
		return nil, err
	}
	if sp.skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
	}
	if sp.limit < 0 {
		sp.limit = -sp.limit
	}
	src, err := sp.open(s.Env.Engine)
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
	return NewReply(dst).Int64("n", n).Finish(), nil
}
