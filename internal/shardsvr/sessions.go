package shardsvr

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/session"
)

// Retryable-write history moves with a chunk, as mongod's
// (SessionCatalogMigrationSource): a driver that lost a write's reply
// retries it once, and if the chunk moved in between the retry reaches
// the recipient, which must answer it from the record rather than run it
// again. Every _transferMods reply carries, in "sessions", the newest
// retryable-write record (number and statements' replies, package
// session's RetryHistory) of each session whose retryable writes to the
// collection its oplog entries show — and the first one also of those in
// retryWindow before the migration began; the recipient installs them
// (session.Table.InstallRetryHistories) before it answers done. The final
// drain runs inside the donor's critical section, so no write of the
// collection can record after it.
//
// Deviation from MongoDB 7.0: a write older than retryWindow before the
// migration began has no record on the recipient (mongod sends every
// session's history); drivers retry at once, so its retry comes long
// before. Sessions travel whole — their newest number's statements, not
// only those of the chunk's documents: a retry is routed to its
// document's owner, so a record of another range's statement is never
// asked for there.

// retryWindow is how far before a migration's start the donor looks for
// sessions that wrote the collection.
const retryWindow = time.Minute

// lsidsOf adds to into the lsids of the retryable writes to ns among
// oplog entries es (a transaction's applyOps entry is not one), once
// each (seen).
func lsidsOf(ns string, es []bsoncore.Value, seen map[string]bool, into []bsoncore.Document) []bsoncore.Document {
	for _, v := range es {
		e, ok := v.DocumentOK()
		if !ok {
			continue
		}
		if s, _ := e.Lookup("ns").StringValueOK(); s != ns {
			continue
		}
		lsid, ok := e.Lookup("lsid").DocumentOK()
		if !ok || seen[string(lsid)] {
			continue
		}
		seen[string(lsid)] = true
		into = append(into, lsid)
	}
	return into
}

// priorSessions are the sessions with retryable writes to d.ns in the
// retryWindow before the migration began (its first oplog ts), read by
// their lsids alone.
func (n *Node) priorSessions(ctx context.Context, d *donation, seen map[string]bool) ([]bsoncore.Document, error) {
	from := bson.Timestamp{}
	if w := uint32(retryWindow / time.Second); d.startTS.T > w {
		from.T = d.startTS.T - w
	}
	reply, err := n.local(ctx, "local", bson.D{{Key: "find", Value: "oplog.rs"},
		{Key: "filter", Value: bson.D{{Key: "ns", Value: d.ns}, {Key: "lsid", Value: bson.D{{Key: "$exists", Value: true}}},
			{Key: "ts", Value: bson.D{{Key: "$gt", Value: from}, {Key: "$lte", Value: d.startTS}}}}},
		{Key: "projection", Value: bson.D{{Key: "ns", Value: 1}, {Key: "lsid", Value: 1}}}, {Key: "batchSize", Value: 100000}})
	var out []bsoncore.Document
	for err == nil {
		vals, id := batchOf(reply)
		out = lsidsOf(d.ns, vals, seen, out)
		if id == 0 {
			return out, nil
		}
		reply, err = n.local(ctx, "local", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "oplog.rs"}, {Key: "batchSize", Value: 100000}})
	}
	return nil, err
}

// sessionHistories is a _transferMods reply's "sessions": the newest
// retryable-write records of the sessions lsids.
func (n *Node) sessionHistories(lsids []bsoncore.Document) (bsoncore.Array, error) {
	arr := bsoncore.NewArrayBuilder()
	if n.opts.Sessions == nil || len(lsids) == 0 {
		return arr.Build(), nil
	}
	hs, err := n.opts.Sessions.RetryHistories(lsids)
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		stmts := bsoncore.NewArrayBuilder()
		for id, reply := range h.Stmts {
			stmts.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("stmtId", id).AppendDocument("reply", reply).Build())
		}
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("lsid", h.LSID).AppendInt64("txnNumber", h.Txn).
			AppendArray("stmts", stmts.Build()).Build())
	}
	return arr.Build(), nil
}

// installSessions installs a _transferMods reply's sessions here (the
// recipient).
func (n *Node) installSessions(ctx context.Context, reply bsoncore.Document) error {
	arr, ok := reply.Lookup("sessions").ArrayOK()
	if !ok || n.opts.Sessions == nil {
		return nil
	}
	vals, _ := arr.Values()
	hs := make([]session.RetryHistory, 0, len(vals))
	for _, v := range vals {
		d, _ := v.DocumentOK()
		h := session.RetryHistory{Stmts: map[int32]bsoncore.Document{}}
		h.LSID, _ = d.Lookup("lsid").DocumentOK()
		h.Txn, _ = d.Lookup("txnNumber").AsInt64OK()
		stmts, _ := d.Lookup("stmts").ArrayOK()
		svals, _ := stmts.Values()
		for _, sv := range svals {
			s, _ := sv.DocumentOK()
			id, _ := s.Lookup("stmtId").Int32OK()
			r, _ := s.Lookup("reply").DocumentOK()
			h.Stmts[id] = r
		}
		hs = append(hs, h)
	}
	return n.opts.Sessions.InstallRetryHistories(ctx, hs)
}
