package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
	"github.com/cairndb/cairn/internal/storage"
)

// This file gives write commands their retryable form (package session
// owns the records): with a txnNumber, statement i of a command (its
// stmtId, as mongod numbers statements) runs only if the session has no
// record of it for that txnNumber; its record is written by an exec.Rider
// in the statement's own commit request ("Record rides the write"), and a
// statement already run answers from its record.

// stmtIDFields are the statements' fields of the commands that take
// stmtIds.
var stmtIDFields = map[string]string{"insert": "documents", "update": "updates", "delete": "deletes"}

// checkStmtIDs reads stmtIds, the statement ids a router gives the
// statements it sends a shard (MongoDB's: a shard gets only the
// statements of a client's batch it owns, and records each under its
// position in the client's batch, so that a retry routed differently —
// after a chunk moved — still finds it). Only a retryable write from a
// router (shardVersion) carries them, one per statement.
func checkStmtIDs(s *Session, req *Request, g *generic) error {
	v, ok := req.Arg("stmtIds")
	if !ok {
		return nil
	}
	if !g.shardVersioned || !s.sess.hasTx || s.sess.inTxn {
		return mongoerr.New(mongoerr.InvalidOptions, "stmtIds are sent by a router with shardVersion, for a retryable write")
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.stmtIds' is the wrong type '%s', expected type 'array'", req.Name, typeName(v.Type))
	}
	vals, _ := arr.Values()
	stmts, err := req.Docs(stmtIDFields[req.Name])
	if err != nil {
		return err
	}
	if len(vals) != len(stmts) {
		return mongoerr.New(mongoerr.InvalidLength, "%s has %d stmtIds for %d statements", req.Name, len(vals), len(stmts))
	}
	ids := make([]int32, len(vals))
	for i, v := range vals {
		n, ok := v.Int32OK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.stmtIds' holds a %s, expected type 'int'", req.Name, typeName(v.Type))
		}
		ids[i] = n
	}
	s.sess.stmtIDs = ids
	return nil
}

// stmtResult encodes what a statement did for its record: n (matched or
// deleted), m (modified), u (the upserted _id), b and a (findAndModify's
// images), g (an insert's server-made _id). Absent fields are zero. The
// fields are appended into one buffer of the record's exact size (a
// document builder cost more: BENCHMARKS.md, session 14's "CPU per
// update"; TestStmtResultShape).
func stmtResult(did exec.UpdateResult, generated bsoncore.Value) bsoncore.Document {
	size := 4 + 1
	if did.Matched != 0 {
		size += 1 + 2 + 8
	}
	if did.Modified != 0 {
		size += 1 + 2 + 8
	}
	if did.UpsertedID.Type != 0 {
		size += 1 + 2 + len(did.UpsertedID.Data)
	}
	if did.Before != nil {
		size += 1 + 2 + len(did.Before)
	}
	if did.After != nil {
		size += 1 + 2 + len(did.After)
	}
	if generated.Type != 0 {
		size += 1 + 2 + len(generated.Data)
	}
	at, d := bsoncore.AppendDocumentStart(make([]byte, 0, size))
	if did.Matched != 0 {
		d = bsoncore.AppendInt64Element(d, "n", did.Matched)
	}
	if did.Modified != 0 {
		d = bsoncore.AppendInt64Element(d, "m", did.Modified)
	}
	if did.UpsertedID.Type != 0 {
		d = bsoncore.AppendValueElement(d, "u", did.UpsertedID)
	}
	if did.Before != nil {
		d = bsoncore.AppendDocumentElement(d, "b", did.Before)
	}
	if did.After != nil {
		d = bsoncore.AppendDocumentElement(d, "a", did.After)
	}
	if generated.Type != 0 {
		d = bsoncore.AppendValueElement(d, "g", generated)
	}
	d, _ = bsoncore.AppendDocumentEnd(d, at) // errors only for a bad index
	return d
}

// fromStmtResult decodes a statement's record (stmtResult).
func fromStmtResult(d bsoncore.Document) (did exec.UpdateResult, generated bsoncore.Value) {
	did.Matched, _ = d.Lookup("n").AsInt64OK()
	did.Modified, _ = d.Lookup("m").AsInt64OK()
	did.UpsertedID = d.Lookup("u")
	did.Before, _ = d.Lookup("b").DocumentOK()
	did.After, _ = d.Lookup("a").DocumentOK()
	return did, d.Lookup("g")
}

// stmtRider is the rider that records statement i of r, after the
// onPrimaryTransactionalWrite fail point (cmd_failpoint.go).
func stmtRider(s *Session, r *session.Retry, i int) exec.Rider {
	return func(tx *storage.Txn, did exec.UpdateResult) error {
		if err := onPrimaryTransactionalWrite(s); err != nil {
			return err
		}
		return r.Record(tx, session.Stmt{ID: int32(i), Result: stmtResult(did, bsoncore.Value{})})
	}
}

// insertRetryable inserts the documents of a retryable insert that have
// not run yet, recording each stored one in the same request, and answers
// for the others from their records.
func insertRetryable(s *Session, x *exec.Env, r *session.Retry, wb writeBatch) (engine.InsertResult, error) {
	var res engine.InsertResult
	todo := make([]bsoncore.Document, 0, len(wb.stmts))
	at := make([]int, 0, len(wb.stmts)) // todo's positions in the batch
	for i, d := range wb.stmts {
		if rec, done := r.Done(int32(i)); done {
			res.Inserted++
			if _, g := fromStmtResult(rec); g.Type != 0 {
				res.GeneratedIDs = append(res.GeneratedIDs, engine.GeneratedID{Index: i, ID: g})
			}
			continue
		}
		todo = append(todo, d)
		at = append(at, i)
	}
	if len(todo) == 0 {
		return res, nil
	}
	rider := func(tx *storage.Txn, ride engine.InsertRide) error {
		if err := onPrimaryTransactionalWrite(s); err != nil {
			return err
		}
		gen := make(map[int]bsoncore.Value, len(ride.Generated))
		for _, g := range ride.Generated {
			gen[g.Index] = g.ID
		}
		stmts := make([]session.Stmt, len(ride.Stored))
		for k, j := range ride.Stored {
			stmts[k] = session.Stmt{ID: int32(at[j]), Result: stmtResult(exec.UpdateResult{}, gen[j])}
		}
		return r.Record(tx, stmts...)
	}
	stmtIDs := make([]int32, len(at))
	for k, i := range at {
		stmtIDs[k] = int32(i)
	}
	more, err := x.Insert(wb.ns, todo, engine.InsertOptions{Ordered: wb.ordered, BypassValidation: wb.bypass, Rider: rider, Session: r.OplogSession(stmtIDs...)})
	if err != nil {
		return engine.InsertResult{}, err
	}
	res.Inserted += more.Inserted
	for _, g := range more.GeneratedIDs {
		res.GeneratedIDs = append(res.GeneratedIDs, engine.GeneratedID{Index: at[g.Index], ID: g.ID})
	}
	for _, we := range more.WriteErrors {
		res.WriteErrors = append(res.WriteErrors, engine.WriteError{Index: at[we.Index], Err: we.Err})
	}
	sortGenerated(res.GeneratedIDs)
	return res, nil
}

func sortGenerated(g []engine.GeneratedID) {
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j].Index < g[j-1].Index; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
}

// errRetryMulti is the statement error of a multi update or an unlimited
// delete in a retryable write, as MongoDB words it.
func errRetryMulti(field string) error {
	return mongoerr.New(mongoerr.InvalidOptions, "Cannot use (or request) retryable writes with %s", field)
}
