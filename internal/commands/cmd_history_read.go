package commands

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// The three internal commands a chunk migration of a versioned collection
// moves histories with (package shardsvr; engine/history_migrate.go): the
// donor's _historyRead, the recipient's _historyInstall and the range
// deleter's _historyPurge. They have no MongoDB counterpart (a mongod's
// migration carries no history) and need the internal action (__system).
//
// A history travels as {_id, first, versions: [{v, validFrom, op, doc}]},
// versions newest first; op is the stored letter (i, u, r, d) and a
// tombstone has no doc.

// deletedBatchBytes bounds one _historyRead {deleted: true} reply.
const deletedBatchBytes = 4 << 20

// cmdHistoryRead is _historyRead: {_historyRead: <coll>, ids: [...],
// from: [<Timestamp>...]} answers the versions of each _id from that time
// on (all when from has no entry), {histories: [...], horizon}; with
// {deleted: true, startAfter: <id>} it lists the deleted documents (newest
// version a tombstone) with their last live document, {deleted: [{_id,
// last}], more}.
func cmdHistoryRead(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	if deleted, err := req.Bool("deleted", false); err != nil {
		return nil, err
	} else if deleted {
		after, _ := req.Arg("startAfter")
		ids, last, more, err := s.Env.Exec.DeletedHistories(ns, after, deletedBatchBytes)
		if err != nil {
			return nil, err
		}
		arr := bsoncore.NewArrayBuilder()
		for i, id := range ids {
			b := bsoncore.NewDocumentBuilder().AppendValue("_id", id)
			if last[i] != nil {
				b.AppendDocument("last", last[i])
			} else {
				b.AppendNull("last")
			}
			arr.AppendDocument(b.Build())
		}
		return NewReply(dst).Value("deleted", bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}).Bool("more", more).Finish(), nil
	}
	idv, ok := req.Arg("ids")
	if !ok || idv.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_historyRead.ids' must be an array of _ids")
	}
	ids, _ := idv.Array().Values()
	var from []uint64
	if fv, ok := req.Arg("from"); ok {
		fa, ok := fv.ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_historyRead.from' must be an array of timestamps")
		}
		vals, _ := fa.Values()
		for _, v := range vals {
			t, i, ok := v.TimestampOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_historyRead.from' must be an array of timestamps")
			}
			from = append(from, uint64(hlc.New(t, i)))
		}
	}
	hs, horizon, err := s.Env.Exec.ReadHistories(ns, ids, from)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, h := range hs {
		arr.AppendDocument(appendHistory(nil, h))
	}
	return NewReply(dst).Value("histories", bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}).
		Value("horizon", tsValue(horizon)).Finish(), nil
}

// appendHistory encodes one document's history.
func appendHistory(dst []byte, h engine.DocHistory) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendValueElement(dst, "_id", h.ID)
	dst = bsoncore.AppendBooleanElement(dst, "first", h.First)
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "versions")
	for i, v := range h.Versions {
		vidx, d := bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(i))
		d = bsoncore.AppendInt64Element(d, "v", int64(v.V))
		d = bsoncore.AppendTimestampElement(d, "validFrom", uint32(v.ValidFrom>>32), uint32(v.ValidFrom))
		d = bsoncore.AppendStringElement(d, "op", string(rune(v.Op)))
		if v.Doc != nil {
			d = bsoncore.AppendDocumentElement(d, "doc", v.Doc)
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, vidx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// parseHistory decodes one document's history (appendHistory's shape).
func parseHistory(d bsoncore.Document) (engine.DocHistory, error) {
	bad := func(what string) (engine.DocHistory, error) {
		return engine.DocHistory{}, mongoerr.New(mongoerr.BadValue, "_historyInstall: a history %s", what)
	}
	h := engine.DocHistory{ID: d.Lookup("_id")}
	if h.ID.Type == 0 {
		return bad("has no _id")
	}
	h.First, _ = d.Lookup("first").BooleanOK()
	arr, ok := d.Lookup("versions").ArrayOK()
	if !ok {
		return bad("has no versions array")
	}
	vals, _ := arr.Values()
	for _, x := range vals {
		vd, ok := x.DocumentOK()
		if !ok {
			return bad("version is not a document")
		}
		n, ok := vd.Lookup("v").Int64OK()
		t, i, okT := vd.Lookup("validFrom").TimestampOK()
		op, okOp := vd.Lookup("op").StringValueOK()
		if !ok || n < 1 || !okT || !okOp || len(op) != 1 || !engine.ValidOp(op[0]) {
			return bad("version needs v (a long ≥ 1), validFrom (a timestamp) and op (i, u, r or d)")
		}
		v := engine.Version{V: uint64(n), ValidFrom: uint64(hlc.New(t, i)), Op: op[0]}
		if doc, ok := vd.Lookup("doc").DocumentOK(); ok {
			v.Doc = doc
		}
		if (v.Doc == nil) != (v.Op == 'd') {
			return bad("version's doc must be given exactly when op is not d")
		}
		h.Versions = append(h.Versions, v)
	}
	return h, nil
}

func tsValue(ts hlc.Timestamp) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(uint64(ts)>>32), uint32(ts))}
}
