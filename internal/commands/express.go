package commands

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/planner"
)

// The express path of a find: MongoDB 8.0's name for what 7.0 calls the
// IDHACK plan taken without planning. A find whose only condition is
// {_id: v} (v a string, ObjectId, int or long) and that asks for nothing a
// plan would do — no projection, sort, skip, hint, collation, min, max,
// returnKey, showRecordId, tailable, let or batchSize 0 — on a collection
// (not a view) whose default collation cannot change which _id a string
// equals, outside a transaction and a read time and without a shard's
// ownership filter, is recognised in one pass over its fields
// (expressID) and answered by one engine read appended straight into the
// reply's batch (findExpress), instead of parsing a filter, opening the
// planner's point read and copying its document into the batch.
//
// Invariant "The express path is unobservable": everything a client can
// see of such a find is what the general path gives it — the reply's
// bytes, the errors, the counters (opcounters.query,
// metrics.document.returned, queryExecutor.scanned and scannedObjects,
// top, latencies), the _id index's $indexStats accesses, the profiler's
// and the slow-query log's entries (planSummary IDHACK, keysExamined and
// docsExamined 1 when found), the sampled query shapes, currentOp and
// killOp (the operation is begun and ended by Run for both), the
// prepare-conflict wait of a read that enforces them, and explain (a
// separate command that always plans). Every part of Run before and after
// the handler (access checks, sessions, readConcern waits, maxTimeMS,
// sharding admission) is the same for both. TestExpressMatchesGeneral
// runs each observable through both paths (Env.noExpress turns the
// express path off) and compares; TestExpressRecognises lists what
// qualifies; the invariants build re-parses every express find as the
// general path does and fails unless it plans the same point read
// (checkExpress), and compares the reply findExpress writes as bytes with
// the one the general path's batch writer builds (checkExpressReply).

// expressID returns the _id of a find the express path may answer, read
// from the request's fields in one pass; ok is false for any find that
// names a field beyond the few it understands, or one whose values are not
// the plain ones it accepts (the general path then reads them, refusing
// what it must). hasRC reports a readConcern, whose level the caller checks.
func expressID(req *Request) (id bsoncore.Value, hasRC, ok bool) {
	elems := req.fields()
	if len(elems) < 2 {
		return id, false, false
	}
	for i := 1; i < len(elems); i++ {
		f := &elems[i]
		v := f.value()
		switch string(f.key()) {
		case "filter":
			if id, ok = idOnly(v); !ok {
				return id, false, false
			}
		case "limit":
			if !plainCount(v) {
				return id, false, false
			}
		case "batchSize":
			// 0 is an empty first batch and a live cursor: the general path.
			if !plainCount(v) || v.Type == bsoncore.TypeInt32 && v.Int32() == 0 || v.Type == bsoncore.TypeInt64 && v.Int64() == 0 {
				return id, false, false
			}
		case "singleBatch":
			if v.Type != bsoncore.TypeBoolean {
				return id, false, false
			}
		case "readConcern":
			hasRC = true
		case "$db", "lsid", "maxTimeMS", "comment", "$clusterTime", "$readPreference",
			"apiVersion", "apiStrict", "apiDeprecationErrors":
			// Generic arguments Run has read and checked already; none
			// changes what the find reads.
		default:
			return id, false, false
		}
	}
	return id, hasRC, id.Type != 0
}

// plainCount reports whether v is an int or a long, not negative.
func plainCount(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32:
		return len(v.Data) == 4 && int32(binary.LittleEndian.Uint32(v.Data)) >= 0
	case bsoncore.TypeInt64:
		return len(v.Data) == 8 && int64(binary.LittleEndian.Uint64(v.Data)) >= 0
	}
	return false
}

// idOnly returns v of a filter that is exactly {_id: v}, v a string,
// ObjectId, int or long: the _id equalities the express path answers (the
// planner's pointID accepts more; the others take the general path).
func idOnly(f bsoncore.Value) (bsoncore.Value, bool) {
	d := f.Data
	// {len, type, "_id\x00", value, 0}: at least 4+1+4+value+1 bytes.
	if f.Type != bsoncore.TypeEmbeddedDocument || len(d) < 10 || string(d[5:9]) != "_id\x00" {
		return bsoncore.Value{}, false
	}
	if int(binary.LittleEndian.Uint32(d)) != len(d) || d[len(d)-1] != 0 {
		return bsoncore.Value{}, false
	}
	t, val := bsoncore.Type(d[4]), d[9:len(d)-1]
	var n int
	switch t {
	case bsoncore.TypeString:
		if len(val) < 5 {
			return bsoncore.Value{}, false
		}
		n = 4 + int(binary.LittleEndian.Uint32(val))
		if n < 5 || n != len(val) || val[n-1] != 0 {
			return bsoncore.Value{}, false
		}
	case bsoncore.TypeObjectID:
		n = 12
	case bsoncore.TypeInt32:
		n = 4
	case bsoncore.TypeInt64:
		n = 8
	default:
		return bsoncore.Value{}, false
	}
	if len(val) != n { // one field only, and whole
		return bsoncore.Value{}, false
	}
	return bsoncore.Value{Type: t, Data: val}, true
}

// findExpress answers a find expressID recognised, on collection coll (the
// command's first field, checked to name no view), when nothing about the
// collection or the command's circumstances needs the general path;
// handled is false otherwise, and nothing was done. It does what cmdFind's
// general path does for such a find, in the same order: count the query,
// read (planner.Express: the _id index's access, the prepare-conflict
// wait, the engine's read, appended straight into the batch), record the
// figures the IDHACK plan would report, answer with a closed cursor.
func findExpress(ctx context.Context, s *Session, req *Request, coll string, id bsoncore.Value, hasRC bool, dst []byte) (_ bsoncore.Document, handled bool, err error) {
	if s.Env.noExpress || s.sess.etx != nil || coll == "" {
		return nil, false, nil
	}
	if hasRC {
		if _, ok := snapshotRead(req); ok {
			return nil, false, nil // a read at a cluster time
		}
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	if id.Type == bsoncore.TypeString && hasDefaultCollation(s, ns) {
		return nil, false, nil // a string _id under a collation: the planner scans
	}
	x := s.x()
	if !x.Expressible(ns) {
		return nil, false, nil
	}
	if invariants.Enabled {
		checkExpress(s, req, ns, id)
	}
	s.Env.Ops.Query.Add(1)
	if s.Env.expressReads != nil {
		s.Env.expressReads.Add(1)
	}
	// The reply, {cursor: {firstBatch: [doc], id: 0, ns: "db.coll"},
	// ok: 1.0}, written as the bytes the general path's batchWriter and
	// finishCursorIn write for a closed cursor of one batch, without
	// building it through a Reply.
	start := len(dst)
	dst = append(dst, expressHead...)
	arr := len(dst) - 4 // firstBatch's length
	// The document's element, {"0": doc}, its value appended by the read.
	buf, found, err := x.Express(ctx, append(dst, byte(bsoncore.TypeEmbeddedDocument), '0', 0), ns, id)
	if err != nil {
		return nil, true, err
	}
	n := int64(0)
	var doc bsoncore.Document // for the invariants build's check
	if found {
		dst, n, doc = buf, 1, buf[arr+4+3:]
	} else {
		dst = buf[:arr+4]
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[arr:], uint32(len(dst)-arr))
	dst = append(dst, byte(bsoncore.TypeInt64), 'i', 'd', 0, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = append(dst, byte(bsoncore.TypeString), 'n', 's', 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ns.DB)+1+len(ns.Coll)+1))
	dst = append(append(append(append(dst, ns.DB...), '.'), ns.Coll...), 0)
	dst = append(dst, 0)
	cursor := start + 4 + len("\x03cursor\x00")
	binary.LittleEndian.PutUint32(dst[cursor:], uint32(len(dst)-cursor))
	dst = append(dst, expressTail...)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	if invariants.Enabled {
		checkExpressReply(dst[start:], doc, ns)
	}
	st := &s.stat
	st.reads, st.nreturned, st.express = true, n, true
	st.keysExamined, st.docsExamined = n, n
	st.cursorExhausted = true
	return dst[start:], true, nil
}

// expressHead opens an express find's reply up to its batch's first
// element: the reply's length, "cursor" and its length, "firstBatch" and
// its length (the lengths patched in after); expressTail ends it with ok:
// 1.0 and the reply's terminating 0.
var (
	expressHead = []byte("\x00\x00\x00\x00\x03cursor\x00\x00\x00\x00\x00\x04firstBatch\x00\x00\x00\x00\x00")
	expressTail = append(binary.LittleEndian.AppendUint64([]byte("\x01ok\x00"), math.Float64bits(1)), 0)
)

// checkExpress fails the invariant "The express path is unobservable"
// when the general path would not plan this find as the point read of the
// same _id (the invariants build: it parses the find as parseFind does).
func checkExpress(s *Session, req *Request, ns engine.Namespace, id bsoncore.Value) {
	sp, err := parseFind(s, req)
	if err != nil {
		invariants.Fail("The express path is unobservable", "find on %v takes the express path, but the general path refuses it: %v", ns, err)
		return
	}
	want, ok := sp.Filter.IDEquality()
	if !ok || !sp.PointRead() || sp.Skip != 0 || sp.Proj != nil || sp.ReturnKey || sp.ShowRecordID || sp.tailable || sp.batchSize < 0 ||
		want.Type != id.Type || string(want.Data) != string(id.Data) {
		invariants.Fail("The express path is unobservable", "find on %v takes the express path for _id %v, but the general path plans %+v", ns, id, sp.Selection)
	}
}

// checkExpressReply fails the invariant "The express path is
// unobservable" unless got, the reply findExpress wrote as bytes, is the
// one the general path's batch writer builds for doc (nil: none found)
// in ns (the invariants build).
func checkExpressReply(got []byte, doc bsoncore.Document, ns engine.Namespace) {
	var b batchWriter
	b.start(nil, "firstBatch")
	if doc != nil {
		b.add(doc)
	}
	if want := finishCursorIn(b.end(), 0, ns); !bytes.Equal(got, want) {
		invariants.Fail("The express path is unobservable", "find on %v: the express reply %x, the batch writer's %x", ns, got, []byte(want))
	}
}

// hasDefaultCollation reports whether collection ns was created with a
// collation (which may be the simple one: the general path then decides).
func hasDefaultCollation(s *Session, ns engine.Namespace) bool {
	c := s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)
	if c == nil || len(c.Options) == 0 {
		return false
	}
	_, err := bsoncore.Document(c.Options).LookupErr("collation")
	return err == nil
}

// planSummary is the summary of the plan the command ran, as the profiler,
// the slow-query log and the query shapes name it; ok is false when it ran
// none.
func (st *opStats) planSummary() (_ string, ok bool) {
	switch {
	case st.express:
		return planner.ExpressSummary, true
	case st.plan != nil:
		return st.plan.PlanSummary(), true
	}
	return "", false
}
