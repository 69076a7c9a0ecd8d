package commands

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// checkBatchSize enforces MongoDB's limit on operations per write command.
func checkBatchSize(n int) error {
	if n < 1 || n > MaxWriteBatchSize {
		return mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", MaxWriteBatchSize, n)
	}
	return nil
}

// writeBatch is what insert, update and delete requests share: the target
// collection, the statements (documents, updates or deletes), and ordered.
type writeBatch struct {
	ns      engine.Namespace
	stmts   []bsoncore.Document
	ordered bool
	bypass  bool // bypassDocumentValidation (insert and update)
}

// parseWriteBatch reads a write command whose statements are in field.
func parseWriteBatch(req *Request, field string) (writeBatch, error) {
	coll, err := req.Collection()
	if err != nil {
		return writeBatch{}, err
	}
	stmts, err := req.Docs(field)
	if err != nil {
		return writeBatch{}, err
	}
	if err := checkBatchSize(len(stmts)); err != nil {
		return writeBatch{}, err
	}
	ordered, err := req.Bool("ordered", true)
	if err != nil {
		return writeBatch{}, err
	}
	bypass := false
	if field != "deletes" {
		if bypass, err = req.Bool("bypassDocumentValidation", false); err != nil {
			return writeBatch{}, err
		}
	}
	return writeBatch{ns: engine.Namespace{DB: req.DB, Coll: coll}, stmts: stmts, ordered: ordered, bypass: bypass}, nil
}

func cmdInsert(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	wb, err := parseWriteBatch(req, "documents")
	if err != nil {
		return nil, err
	}
	var res engine.InsertResult
	if r := s.sess.retry; r != nil {
		res, err = insertRetryable(s.Env.Exec, r, wb) // retryable.go
	} else {
		res, err = s.x().Insert(wb.ns, wb.stmts, engine.InsertOptions{Ordered: wb.ordered, BypassValidation: wb.bypass})
	}
	if err != nil {
		return nil, err
	}
	s.Env.Ops.Insert.Add(int64(res.Inserted))
	s.stat.ninserted, s.stat.writes = int64(res.Inserted), writeInserted
	r := NewReply(dst).Int32("n", int32(res.Inserted))
	appendWriteErrors(r, res.WriteErrors)
	if len(res.GeneratedIDs) > 0 {
		buf := r.Raw()
		var aidx int32
		aidx, *buf = bsoncore.AppendArrayElementStart(*buf, "generatedIds")
		for i, g := range res.GeneratedIDs {
			var didx int32
			didx, *buf = bsoncore.AppendDocumentElementStart(*buf, strconv.Itoa(i))
			*buf = bsoncore.AppendInt32Element(*buf, "index", int32(g.Index))
			*buf = bsoncore.AppendValueElement(*buf, "_id", g.ID)
			*buf, _ = bsoncore.AppendDocumentEnd(*buf, didx)
		}
		*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
	}
	return r.Finish(), nil
}

// appendWriteErrors adds writeErrors: [{index, code, errmsg, …}] when any.
func appendWriteErrors(r *Reply, errs []engine.WriteError) {
	if len(errs) == 0 {
		return
	}
	buf := r.Raw()
	var aidx int32
	aidx, *buf = bsoncore.AppendArrayElementStart(*buf, "writeErrors")
	for i, we := range errs {
		code, msg := mongoerr.InternalError, we.Err.Error()
		var extra []mongoerr.Field
		if e, ok := mongoerr.As(we.Err); ok {
			code, msg, extra = e.Code, e.Msg, e.Extra
		}
		el := NewReply(nil).Int32("index", int32(we.Index)).Int32("code", int32(code))
		for _, f := range extra {
			el.Any(f.Name, f.Value)
		}
		el.String("errmsg", msg)
		*buf = bsoncore.AppendDocumentElement(*buf, strconv.Itoa(i), el.End())
	}
	*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
}
