package commands

import (
	"context"
	"encoding/binary"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
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
	// keepEmptyTs is bypassEmptyTsReplacement (insert and update): a
	// top-level Timestamp(0, 0) is stored as given, not replaced by a new
	// cluster time.
	keepEmptyTs bool
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
	bypass, keepEmptyTs := false, false
	if field != "deletes" {
		if bypass, err = req.Bool("bypassDocumentValidation", false); err != nil {
			return writeBatch{}, err
		}
		if keepEmptyTs, err = req.Bool("bypassEmptyTsReplacement", false); err != nil {
			return writeBatch{}, err
		}
	}
	return writeBatch{ns: engine.Namespace{DB: req.DB, Coll: coll}, stmts: stmts, ordered: ordered, bypass: bypass, keepEmptyTs: keepEmptyTs}, nil
}

func cmdInsert(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	wb, err := parseWriteBatch(req, "documents")
	if err != nil {
		return nil, err
	}
	if !wb.keepEmptyTs {
		wb.stmts = fillEmptyTimestamps(wb.stmts, s.Env.Engine.Storage().Clock().Now)
	}
	var res engine.InsertResult
	if ts, ok := timeseriesOf(s.Env.Engine, wb.ns.DB, wb.ns.Coll); ok && s.sess.etx != nil {
		return nil, errTimeseriesInTxn("insert into", wb.ns)
	} else if ok {
		res, err = insertTimeseries(ctx, s.Env.Exec, ts, s.sess.retry, wb) // timeseries.go
	} else if r := s.sess.retry; r != nil {
		res, err = insertRetryable(s, s.Env.Exec, r, wb) // retryable.go
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

// fillEmptyTimestamps gives each top-level Timestamp(0, 0) of docs a new
// cluster time, as mongod's fixDocumentForInsert does unless the insert
// says bypassEmptyTsReplacement. A document without one is kept as it is
// (one pass over its top-level fields, no copy).
func fillEmptyTimestamps(docs []bsoncore.Document, now func() hlc.Timestamp) []bsoncore.Document {
	var out []bsoncore.Document
	for i, d := range docs {
		if !hasEmptyTimestamp(d) {
			if out != nil {
				out = append(out, d)
			}
			continue
		}
		if out == nil {
			out = append(make([]bsoncore.Document, 0, len(docs)), docs[:i]...)
		}
		elems, _ := d.Elements()
		idx, b := bsoncore.AppendDocumentStart(make([]byte, 0, len(d)))
		for _, el := range elems {
			v := el.Value()
			if v.Type == bsoncore.TypeTimestamp {
				if t, inc, _ := v.TimestampOK(); t == 0 && inc == 0 {
					ts := now()
					b = bsoncore.AppendTimestampElement(b, el.Key(), ts.T(), ts.I())
					continue
				}
			}
			b = append(b, el...)
		}
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		out = append(out, b)
	}
	if out == nil {
		return docs
	}
	return out
}

// hasEmptyTimestamp reports whether d has a top-level Timestamp(0, 0). It
// frames each element once with bsonx.NextElement (bsoncore's ReadElement
// and Value framed each twice: 14 % of an insert command's instructions in
// BenchmarkInsertYCSB); an element that does not frame ends the walk, as
// before.
func hasEmptyTimestamp(d bsoncore.Document) bool {
	rest := d[4 : len(d)-1]
	for len(rest) > 0 {
		t, _, val, r, ok := bsonx.NextElement(rest)
		if !ok {
			return false
		}
		if t == bsoncore.TypeTimestamp && binary.LittleEndian.Uint64(val) == 0 {
			return true
		}
		rest = r
	}
	return false
}
