package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// This file holds the delete and update commands: it parses their
// statements into exec's typed requests and shapes the replies; exec runs
// them (read, then modify and recheck in the commit pipeline).

// stmtFields are the fields of a write statement its parse reads, found
// in one walk (readStmt) where each LookupErr walked it again: for each
// name the value LookupErr would return, Type 0 where it would fail (the
// name absent, or the walk stopped by a malformed element first).
type stmtFields struct {
	q, u, c, hint, collation, arrayFilters, multi, upsert, limit bsoncore.Value
}

// readStmt walks st as LookupErr walks it (its declared length, element by
// element, stopping at one that cannot be read), keeping the first element
// of each name (TestReadStmtAsLookupErr).
func readStmt(st bsoncore.Document) (f stmtFields) {
	length, rem, ok := bsoncore.ReadLength(st)
	if !ok {
		return f
	}
	var seen [9]bool
	for length -= 4; length > 1; {
		el, r, ok := bsoncore.ReadElement(rem)
		if !ok {
			return f
		}
		rem = r
		length -= int32(len(el))
		i, dst := f.slot(el.KeyBytes())
		if dst == nil || seen[i] {
			continue
		}
		seen[i] = true
		if v, err := el.ValueErr(); err == nil {
			*dst = v
		}
	}
	return f
}

// slot is the field named name and its index, or nil.
func (f *stmtFields) slot(name []byte) (int, *bsoncore.Value) {
	switch string(name) {
	case "q":
		return 0, &f.q
	case "u":
		return 1, &f.u
	case "c":
		return 2, &f.c
	case "hint":
		return 3, &f.hint
	case "collation":
		return 4, &f.collation
	case "arrayFilters":
		return 5, &f.arrayFilters
	case "multi":
		return 6, &f.multi
	case "upsert":
		return 7, &f.upsert
	case "limit":
		return 8, &f.limit
	}
	return 0, nil
}

// statementFilter reads a write statement's q field into a selection whose
// $expr sees the command's variables cv.
func statementFilter(ns engine.Namespace, f stmtFields, cmd string, cv commandVars) (exec.Selection, error) {
	q := f.q
	if q.Type == 0 {
		return exec.Selection{}, mongoerr.New(mongoerr.FailedToParse, "BSON field '%s.q' is missing but a required field", cmd)
	}
	filter, ok := q.DocumentOK()
	if !ok {
		return exec.Selection{}, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.q' is the wrong type '%s', expected type 'object'", cmd, typeName(q.Type))
	}
	c, err := statementCollation(f.collation, cmd, cv.collation)
	if err != nil {
		return exec.Selection{}, err
	}
	sp, err := newSelectionWith(ns, filter, withCollation(cv.filterOptions(), c))
	if err != nil {
		return sp, err
	}
	if h := f.hint; h.Type != 0 {
		// The statement's hint, read by find's rules.
		if sp.Hint, err = hintValue(h); err != nil {
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
	cv, err := writeVars(s, req, wb.ns)
	if err != nil {
		return nil, err
	}
	var n int64
	var werrs []engine.WriteError
	retry := s.sess.retry
	for i, st := range wb.stmts {
		if rec, done := retry.Done(int32(i)); done {
			did, _ := fromStmtResult(rec)
			n += did.Matched
			continue
		}
		deleted, err := deleteStatement(ctx, s, wb.ns, st, cv, retry, i)
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
	s.stat.ndeleted, s.stat.writes = n, writeDeleted
	r := NewReply(dst).Count("n", n)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

// deleteStatement runs one delete statement {q, limit}, statement i of a
// retryable write when retry is set.
func deleteStatement(ctx context.Context, s *Session, ns engine.Namespace, st bsoncore.Document, cv commandVars, retry *session.Retry, i int) (int64, error) {
	d, err := parseDeleteStatement(ns, st, cv)
	if err != nil {
		return 0, err
	}
	if ts, ok := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll); ok {
		if s.sess.etx != nil {
			return 0, errTimeseriesInTxn("delete from", ns)
		}
		return s.Env.Exec.DeleteTimeseries(ctx, ts, d.Sel, d.Limit) // 7.0: any filter, any limit
	}
	if retry != nil {
		if d.Limit != 1 {
			return 0, errRetryMulti("limit=0")
		}
		d.Rider, d.Session = stmtRider(s, retry, i), retry.OplogSession(int32(i))
	}
	return s.x().Delete(ctx, d)
}

// parseDeleteStatement reads one delete statement {q, limit}.
func parseDeleteStatement(ns engine.Namespace, st bsoncore.Document, cv commandVars) (exec.Delete, error) {
	f := readStmt(st)
	sp, err := statementFilter(ns, f, "delete.deletes", cv)
	if err != nil {
		return exec.Delete{}, err
	}
	d := exec.Delete{Sel: sp}
	if v := f.limit; v.Type != 0 {
		l, err := safeInt64("delete.deletes.limit", v)
		if err != nil {
			return d, err
		}
		if l != 0 && l != 1 {
			return d, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", v)
		}
		d.Limit = l
	}
	return d, nil
}

func cmdUpdate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	wb, err := parseWriteBatch(req, "updates")
	if err != nil {
		return nil, err
	}
	cv, err := writeVars(s, req, wb.ns)
	if err != nil {
		return nil, err
	}
	if err := checkUpdateStages(wb.stmts); err != nil {
		return nil, err
	}
	var matched, modified int64
	var upserted []bsoncore.Document
	var werrs []engine.WriteError
	retry := s.sess.retry
	for i, st := range wb.stmts {
		var res exec.UpdateResult
		var err error
		if rec, done := retry.Done(int32(i)); done {
			res, _ = fromStmtResult(rec)
		} else {
			res, err = updateStatement(ctx, s, wb, st, cv, retry, i)
		}
		if isInterruption(err) {
			return nil, err // fails the whole command, as in MongoDB
		}
		if err == nil {
			matched += res.Matched // a failed statement matched nothing it could change
		}
		modified += res.Modified
		if res.UpsertedID.Type != 0 {
			upserted = append(upserted, NewReply(nil).Int32("index", int32(i)).Value("_id", res.UpsertedID).End())
		}
		if err != nil {
			werrs = append(werrs, engine.WriteError{Index: i, Err: err})
			if wb.ordered {
				break
			}
		}
	}
	s.Env.Ops.Update.Add(int64(len(wb.stmts)))
	s.stat.nMatched, s.stat.nModified, s.stat.writes = matched, modified, writeUpdated
	if len(upserted) > 0 {
		s.stat.ninserted, s.stat.writes = int64(len(upserted)), writeUpdated|writeInserted
	}
	r := NewReply(dst).Count("n", matched+int64(len(upserted)))
	if len(upserted) > 0 {
		r.DocArray("upserted", upserted)
	}
	r.Count("nModified", modified)
	appendWriteErrors(r, werrs)
	return r.Finish(), nil
}

// parseUpdateStatement reads one update statement {q, u, upsert, multi,
// arrayFilters, c, hint, collation}.
func parseUpdateStatement(ns engine.Namespace, st bsoncore.Document, cv commandVars) (exec.Update, error) {
	f := readStmt(st)
	sel, err := statementFilter(ns, f, "update.updates", cv)
	if err != nil {
		return exec.Update{}, err
	}
	u := f.u
	if u.Type == 0 {
		return exec.Update{}, mongoerr.New(mongoerr.FailedToParse, "BSON field 'update.updates.u' is missing but a required field")
	}
	arrayFilters, err := arrayFiltersOfValue(f.arrayFilters)
	if err != nil {
		return exec.Update{}, err
	}
	multi := boolValue(f.multi)
	consts, err := constantsOf(f.c, cv.now)
	if err != nil {
		return exec.Update{}, err
	}
	mod, err := parseModifier(u, arrayFilters, multi, cv, consts, sel.Collation)
	if err != nil {
		return exec.Update{}, err
	}
	spec := exec.Update{Sel: sel, Mod: mod, Upsert: boolValue(f.upsert), Multi: multi}
	if spec.Multi && mod.IsReplacement() {
		return exec.Update{}, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
	}
	return spec, nil
}

func arrayFiltersOf(st bsoncore.Document) ([]bsoncore.Document, error) {
	v, _ := st.LookupErr("arrayFilters")
	return arrayFiltersOfValue(v)
}

// arrayFiltersOfValue reads an arrayFilters field's value (Type 0: none).
func arrayFiltersOfValue(v bsoncore.Value) ([]bsoncore.Document, error) {
	if v.Type == 0 {
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

// updateStatement runs one update statement {q, u, upsert, multi,
// arrayFilters}, statement i of a retryable write when retry is set.
func updateStatement(ctx context.Context, s *Session, wb writeBatch, st bsoncore.Document, cv commandVars, retry *session.Retry, i int) (exec.UpdateResult, error) {
	ns := wb.ns
	spec, err := parseUpdateStatement(ns, st, cv)
	if err != nil {
		return exec.UpdateResult{}, err
	}
	spec.Bypass, spec.KeepEmptyTimestamps = wb.bypass, wb.keepEmptyTs
	if ts, ok := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll); ok {
		if s.sess.etx != nil {
			return exec.UpdateResult{}, errTimeseriesInTxn("update", ns)
		}
		if err := checkTimeseriesUpdate(ts, spec, st); err != nil {
			return exec.UpdateResult{}, err
		}
		return s.Env.Exec.UpdateTimeseries(ctx, ts, spec.Sel, spec.Mod)
	}
	if retry != nil {
		if spec.Multi {
			return exec.UpdateResult{}, errRetryMulti("multi=true")
		}
		spec.Rider, spec.Session = stmtRider(s, retry, i), retry.OplogSession(int32(i))
	}
	return s.x().Update(ctx, spec)
}

// boolValue reads a statement's flag (multi, upsert): a boolean, or a
// number other than 0; false when absent (Type 0) or of another type.
func boolValue(v bsoncore.Value) bool {
	if v.Type == 0 {
		return false
	}
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	n, ok := numberAsInt(v)
	return ok && n != 0
}

// checkUpdateStages fails the command, before any statement runs, when an
// update pipeline names a stage that does not exist: MongoDB checks stage
// names when it parses the command, so this is a command error, not a
// write error (other pipeline errors stay per statement).
func checkUpdateStages(stmts []bsoncore.Document) error {
	for _, st := range stmts {
		arr, ok := st.Lookup("u").ArrayOK()
		if !ok {
			continue
		}
		vals, _ := arr.Values()
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				continue // the statement's parse reports it
			}
			if el, err := d.IndexErr(0); err == nil {
				if err := agg.KnownStage(el.Key()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
