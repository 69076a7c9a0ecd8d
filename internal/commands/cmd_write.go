package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds the delete and update commands.

// matchingIDs returns the _ids of the documents filter selects in ns, at most
// limit of them (0 = all), read from a consistent snapshot.
func matchingIDs(eng *engine.Engine, ns engine.Namespace, filter bsoncore.Document, limit int64) ([]bsoncore.Value, error) {
	src, err := findSpec{ns: ns, filter: filter, limit: limit}.open(eng)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var ids []bsoncore.Value
	for {
		d, err := src.Next()
		if err != nil || d == nil {
			return ids, err
		}
		id := d.Lookup("_id")
		ids = append(ids, bsoncore.Value{Type: id.Type, Data: append([]byte(nil), id.Data...)})
	}
}

func cmdDelete(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	stmts, err := req.Docs("deletes")
	if err != nil {
		return nil, err
	}
	if err := checkBatchSize(len(stmts)); err != nil {
		return nil, err
	}
	ordered, err := req.Bool("ordered", true)
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	var n int64
	var werrs []engine.WriteError
	for i, st := range stmts {
		deleted, err := deleteOne(s.Env.Engine, ns, st)
		n += deleted
		if err != nil {
			werrs = append(werrs, engine.WriteError{Index: i, Err: err})
			if ordered {
				break
			}
		}
	}
	s.Env.Ops.Delete.Add(n)
	r := NewReply(dst).Int64("n", n)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

// deleteOne runs one delete statement {q, limit}.
func deleteOne(eng *engine.Engine, ns engine.Namespace, st bsoncore.Document) (int64, error) {
	q, err := st.LookupErr("q")
	filter, ok := q.DocumentOK()
	if err != nil || !ok {
		return 0, mongoerr.New(mongoerr.FailedToParse, "BSON field 'delete.deletes.q' is missing or not an object")
	}
	limit := int64(0)
	if v, err := st.LookupErr("limit"); err == nil {
		l, ok := numberAsInt(v)
		if !ok || (l != 0 && l != 1) {
			return 0, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", v)
		}
		limit = l
	}
	ids, err := matchingIDs(eng, ns, filter, limit)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, id := range ids {
		deleted, err := eng.Delete(ns, id)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

func cmdUpdate(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	stmts, err := req.Docs("updates")
	if err != nil {
		return nil, err
	}
	if err := checkBatchSize(len(stmts)); err != nil {
		return nil, err
	}
	ordered, err := req.Bool("ordered", true)
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	var matched, modified int64
	var upserted []bsoncore.Document
	var werrs []engine.WriteError
	for i, st := range stmts {
		res, err := updateOne(s.Env.Engine, ns, st)
		matched += res.matched
		modified += res.modified
		if res.upsertedID.Type != 0 {
			upserted = append(upserted, NewReply(nil).Int32("index", int32(i)).Value("_id", res.upsertedID).End())
		}
		if err != nil {
			werrs = append(werrs, engine.WriteError{Index: i, Err: err})
			if ordered {
				break
			}
		}
	}
	s.Env.Ops.Update.Add(int64(len(stmts)))
	r := NewReply(dst).Int64("n", matched+int64(len(upserted)))
	if len(upserted) > 0 {
		r.DocArray("upserted", upserted)
	}
	r.Int64("nModified", modified)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

type updateResult struct {
	matched, modified int64
	upsertedID        bsoncore.Value
}

// updateOne runs one update statement {q, u, upsert, multi}. Replacement
// documents work now; update operators arrive with the update language.
func updateOne(eng *engine.Engine, ns engine.Namespace, st bsoncore.Document) (updateResult, error) {
	q, err := st.LookupErr("q")
	filter, ok := q.DocumentOK()
	if err != nil || !ok {
		return updateResult{}, mongoerr.New(mongoerr.FailedToParse, "BSON field 'update.updates.q' is missing or not an object")
	}
	u, err := st.LookupErr("u")
	if err != nil {
		return updateResult{}, mongoerr.New(mongoerr.FailedToParse, "BSON field 'update.updates.u' is missing but a required field")
	}
	repl, ok := u.DocumentOK()
	if !ok {
		return updateResult{}, mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
	}
	if isOperatorDoc(u) {
		return updateResult{}, mongoerr.New(mongoerr.FailedToParse, "update operators need the update language, which this build does not have yet")
	}
	upsert := boolField(st, "upsert")
	if boolField(st, "multi") {
		return updateResult{}, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	ids, err := matchingIDs(eng, ns, filter, 1)
	if err != nil {
		return updateResult{}, err
	}
	if len(ids) == 0 {
		if !upsert {
			return updateResult{}, nil
		}
		return upsertReplacement(eng, ns, filter, repl)
	}
	found, err := eng.Replace(ns, ids[0], repl)
	if err != nil || !found {
		return updateResult{}, err
	}
	return updateResult{matched: 1, modified: 1}, nil
}

// upsertReplacement inserts the replacement, taking _id from the filter's
// equality on _id when the replacement has none, as MongoDB does.
func upsertReplacement(eng *engine.Engine, ns engine.Namespace, filter, repl bsoncore.Document) (updateResult, error) {
	doc := repl
	if _, err := repl.LookupErr("_id"); err != nil {
		if id, ok := idEquality(filter); ok {
			r := NewReply(nil).Value("_id", id)
			elems, _ := repl.Elements()
			for _, el := range elems {
				*r.Raw() = append(*r.Raw(), el...)
			}
			doc = r.End()
		}
	}
	res, err := eng.Insert(ns, []bsoncore.Document{doc}, true)
	if err != nil {
		return updateResult{}, err
	}
	if len(res.WriteErrors) > 0 {
		return updateResult{}, res.WriteErrors[0].Err
	}
	id := doc.Lookup("_id")
	if len(res.GeneratedIDs) > 0 {
		id = res.GeneratedIDs[0].ID
	}
	return updateResult{upsertedID: id}, nil
}

func boolField(d bsoncore.Document, key string) bool {
	v, err := d.LookupErr(key)
	if err != nil {
		return false
	}
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	n, ok := numberAsInt(v)
	return ok && n != 0
}
