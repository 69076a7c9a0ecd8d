package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// This file holds the delete and update commands. Both choose documents from
// a snapshot, then change them through engine.Modify, which re-reads each
// inside the commit pipeline; the filter is checked again there, so a
// document changed in between is not wrongly updated or deleted.

// matchingIDs returns the _ids of the documents sp selects, at most limit
// of them (0 = all), read from a consistent snapshot.
func matchingIDs(ctx context.Context, eng *engine.Engine, sp findSpec, limit int64) ([]bsoncore.Value, error) {
	sp.limit = limit
	src, err := sp.open(ctx, eng)
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

// statementFilter reads a write statement's q field into a selection whose
// $expr sees the command's variables cv.
func statementFilter(ns engine.Namespace, st bsoncore.Document, cmd string, cv commandVars) (findSpec, error) {
	q, err := st.LookupErr("q")
	if err != nil {
		return findSpec{}, mongoerr.New(mongoerr.FailedToParse, "BSON field '%s.q' is missing but a required field", cmd)
	}
	filter, ok := q.DocumentOK()
	if !ok {
		return findSpec{}, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.q' is the wrong type '%s', expected type 'object'", cmd, typeName(q.Type))
	}
	if c, err := st.LookupErr("collation"); err == nil {
		if cd, ok := c.DocumentOK(); ok {
			if loc, _ := cd.Lookup("locale").StringValueOK(); loc != "simple" {
				return findSpec{}, mongoerr.New(mongoerr.BadValue, "collation %s is not supported yet; only {locale: \"simple\"} is", cd)
			}
		}
	}
	sp, err := newSelectionWith(ns, filter, cv.filterOptions())
	if err != nil {
		return sp, err
	}
	if h, err := st.LookupErr("hint"); err == nil {
		// The statement's hint, as find's (read by parseHint's rules).
		if err := parseHint(&Request{Body: NewReply(nil).Value("hint", h).End()}, &sp); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

func cmdDelete(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	wb, err := parseWriteBatch(req, "deletes")
	if err != nil {
		return nil, err
	}
	cv, err := requestVars(req)
	if err != nil {
		return nil, err
	}
	var n int64
	var werrs []engine.WriteError
	for i, st := range wb.stmts {
		deleted, err := deleteStatement(ctx, s.Env.Engine, wb.ns, st, cv)
		n += deleted
		if isInterruption(err) {
			return nil, err // fails the whole command, as in MongoDB
		}
		if err != nil {
			werrs = append(werrs, engine.WriteError{Index: i, Err: err})
			if wb.ordered {
				break
			}
		}
	}
	s.Env.Ops.Delete.Add(n)
	r := NewReply(dst).Count("n", n)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

// deleteStatement runs one delete statement {q, limit}.
func deleteStatement(ctx context.Context, eng *engine.Engine, ns engine.Namespace, st bsoncore.Document, cv commandVars) (int64, error) {
	sp, err := statementFilter(ns, st, "delete.deletes", cv)
	if err != nil {
		return 0, err
	}
	limit := int64(0)
	if v, err := st.LookupErr("limit"); err == nil {
		l, ok := numberAsInt(v)
		if !ok || (l != 0 && l != 1) {
			return 0, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", v)
		}
		limit = l
	}
	ids, err := matchingIDs(ctx, eng, sp, limit)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	res, err := eng.Modify(ns, ids, true, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if err := opctx.Err(ctx); err != nil {
			return engine.Action{}, err // stops here; what is deleted stays deleted, as in MongoDB
		}
		if cur == nil || !sp.filter.Match(cur) {
			return engine.Action{}, nil // changed since it was chosen
		}
		return engine.Action{Delete: true}, nil
	})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return int64(res.Deleted), err
}

func cmdUpdate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	wb, err := parseWriteBatch(req, "updates")
	if err != nil {
		return nil, err
	}
	cv, err := requestVars(req)
	if err != nil {
		return nil, err
	}
	var matched, modified int64
	var upserted []bsoncore.Document
	var werrs []engine.WriteError
	for i, st := range wb.stmts {
		res, err := updateStatement(ctx, s.Env.Engine, wb.ns, st, cv)
		if isInterruption(err) {
			return nil, err // fails the whole command, as in MongoDB
		}
		matched += res.matched
		modified += res.modified
		if res.upsertedID.Type != 0 {
			upserted = append(upserted, NewReply(nil).Int32("index", int32(i)).Value("_id", res.upsertedID).End())
		}
		if err != nil {
			werrs = append(werrs, engine.WriteError{Index: i, Err: err})
			if wb.ordered {
				break
			}
		}
	}
	s.Env.Ops.Update.Add(int64(len(wb.stmts)))
	r := NewReply(dst).Count("n", matched+int64(len(upserted)))
	if len(upserted) > 0 {
		r.DocArray("upserted", upserted)
	}
	r.Count("nModified", modified)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

type updateResult struct {
	matched, modified int64
	upsertedID        bsoncore.Value
	before, after     bsoncore.Document // for findAndModify (copies)
}

// updateSpec is one parsed update statement.
type updateSpec struct {
	sel    findSpec
	mod    modifier
	upsert bool
	multi  bool
}

func parseUpdateStatement(ns engine.Namespace, st bsoncore.Document, cv commandVars) (updateSpec, error) {
	sel, err := statementFilter(ns, st, "update.updates", cv)
	if err != nil {
		return updateSpec{}, err
	}
	u, err := st.LookupErr("u")
	if err != nil {
		return updateSpec{}, mongoerr.New(mongoerr.FailedToParse, "BSON field 'update.updates.u' is missing but a required field")
	}
	arrayFilters, err := arrayFiltersOf(st)
	if err != nil {
		return updateSpec{}, err
	}
	multi := boolField(st, "multi")
	consts, err := constantsOf(st, cv.now)
	if err != nil {
		return updateSpec{}, err
	}
	mod, err := parseModifier(u, arrayFilters, multi, cv, consts)
	if err != nil {
		return updateSpec{}, err
	}
	spec := updateSpec{sel: sel, mod: mod, upsert: boolField(st, "upsert"), multi: multi}
	if spec.multi && mod.isReplacement() {
		return updateSpec{}, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	return spec, nil
}

func arrayFiltersOf(st bsoncore.Document) ([]bsoncore.Document, error) {
	v, err := st.LookupErr("arrayFilters")
	if err != nil {
		return nil, nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'arrayFilters' is the wrong type '%s', expected type 'array'", typeName(v.Type))
	}
	vals, _ := arr.Values()
	out := make([]bsoncore.Document, 0, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "arrayFilters entries must be objects")
		}
		out = append(out, d)
	}
	return out, nil
}

// updateStatement runs one update statement {q, u, upsert, multi, arrayFilters}.
func updateStatement(ctx context.Context, eng *engine.Engine, ns engine.Namespace, st bsoncore.Document, cv commandVars) (updateResult, error) {
	spec, err := parseUpdateStatement(ns, st, cv)
	if err != nil {
		return updateResult{}, err
	}
	return runUpdate(ctx, eng, ns, spec, false)
}

// runUpdate applies spec to the documents it selects; keep records the
// before and after images (of the one document findAndModify touches).
func runUpdate(ctx context.Context, eng *engine.Engine, ns engine.Namespace, spec updateSpec, keep bool) (updateResult, error) {
	limit := int64(1)
	if spec.multi {
		limit = 0
	}
	ids, err := matchingIDs(ctx, eng, spec.sel, limit)
	if err != nil {
		return updateResult{}, err
	}
	var res updateResult
	if len(ids) > 0 {
		mres, err := eng.Modify(ns, ids, true, func(_ int, cur bsoncore.Document) (engine.Action, error) {
			if err := opctx.Err(ctx); err != nil {
				return engine.Action{}, err // stops here; what is updated stays, as in MongoDB
			}
			if cur == nil {
				return engine.Action{}, nil
			}
			ok, pos := spec.sel.filter.MatchDetails(cur)
			if !ok {
				return engine.Action{}, nil // changed since it was chosen
			}
			res.matched++
			next, err := spec.mod.apply(cur, pos)
			if err != nil {
				return engine.Action{}, err
			}
			if keep {
				res.before = append(bsoncore.Document(nil), cur...)
				res.after = res.before // a no-op leaves it as it was
				if next != nil {
					res.after = next
				}
			}
			if next == nil {
				return engine.Action{}, nil
			}
			return engine.Action{Replace: next}, nil
		})
		res.modified = int64(mres.Modified)
		if err != nil {
			return res, err
		}
		if len(mres.Errors) > 0 {
			return res, mres.Errors[0].Err
		}
		if keep && res.matched > 0 {
			// The stored image has _id first; read it back for an exact reply.
			res.after, _, _ = eng.Get(nil, ns, ids[0])
		}
	}
	if res.matched > 0 || !spec.upsert {
		return res, nil
	}
	return upsert(eng, ns, spec, keep)
}

// upsert inserts the document an update with upsert: true creates when
// nothing matched, seeded from the filter's equality fields.
func upsert(eng *engine.Engine, ns engine.Namespace, spec updateSpec, keep bool) (updateResult, error) {
	doc, err := spec.mod.upsertDoc(spec.sel.rawFilter())
	if err != nil {
		return updateResult{}, err
	}
	ires, err := eng.Insert(ns, []bsoncore.Document{doc}, true)
	if err != nil {
		return updateResult{}, err
	}
	if len(ires.WriteErrors) > 0 {
		return updateResult{}, ires.WriteErrors[0].Err
	}
	id := doc.Lookup("_id")
	if len(ires.GeneratedIDs) > 0 {
		id = ires.GeneratedIDs[0].ID
	}
	res := updateResult{upsertedID: id}
	if keep {
		res.after, _, _ = eng.Get(nil, ns, id)
	}
	return res, nil
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
