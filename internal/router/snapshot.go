package router

import (
	"context"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds read timestamps: one snapshot across shards, as mongos
// gives readConcern snapshot (its transaction router's "global read
// timestamp", and snapshot reads outside transactions).
//
// The router keeps the newest cluster time a shard has answered it (every
// reply's operationTime: clusterClock). A snapshot transaction takes its
// read time at its first statement — the client's atClusterTime, else the
// router's latest — and every participant starts with readConcern
// {level: "snapshot", atClusterTime: T} (transactions.go); find,
// aggregate and distinct with readConcern snapshot outside a transaction
// send every shard the same atClusterTime, answer it as atClusterTime
// (in the cursor, as mongos; distinct at the top) and continue with
// getMore on the shards' cursors, which keep their snapshot. Every command
// carrying a router-chosen T gossips it as $clusterTime (a client's own T
// is not: a shard that has not reached it refuses it, as mongod does), so a shard whose
// clock is behind advances it and, having committed less, waits until it
// has (commands' waitClusterTime: a no-op write on the primary, as
// mongod's).
//
// Invariant "One read time per snapshot": every shard a snapshot read or
// snapshot transaction reaches reads at the same T (the shards enforce
// their half: engine's "A read at T sees a prepared commit iff its
// commitTimestamp ≤ T"). A shard that cannot serve T exactly answers
// SnapshotUnavailable (246) or SnapshotTooOld (239); outside a
// transaction, when the router chose T, it reads again at a later time
// (at most snapshotRetries times, as mongos retries snapshot errors of a
// time it chose); in a transaction the error carries
// TransientTransactionError and the driver runs the transaction again.
// A client's own atClusterTime is never changed.

// clusterClock is the newest cluster time shards have answered.
type clusterClock struct{ latest atomic.Uint64 }

// observe takes a shard reply's operationTime (nil replies are skipped).
func (c *clusterClock) observe(reply bsoncore.Document) {
	if len(reply) < 5 {
		return
	}
	t, i, ok := reply.Lookup("operationTime").TimestampOK()
	if !ok {
		return
	}
	ts := uint64(hlc.New(t, i))
	for {
		cur := c.latest.Load()
		if ts <= cur || c.latest.CompareAndSwap(cur, ts) {
			return
		}
	}
}

// now is the time a snapshot read starts at: the newest answered, or,
// before any, the wall clock's second (gossiped to the shards, which
// reach it).
func (c *clusterClock) now() hlc.Timestamp {
	if ts := c.latest.Load(); ts != 0 {
		return hlc.Timestamp(ts)
	}
	return hlc.New(uint32(time.Now().Unix()), 1)
}

// snapshotRetries bounds a snapshot read's new attempts at later times.
const snapshotRetries = 10

// snapshotReadCommands take readConcern snapshot outside a transaction
// (MongoDB 7.0's list).
var snapshotReadCommands = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// snapshotConcern returns the readConcern of a snapshot read outside a
// transaction, or nil.
func snapshotConcern(req *request) bsoncore.Document {
	if !snapshotReadCommands[req.name] {
		return nil
	}
	v, ok := req.arg("readConcern")
	if !ok {
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil
	}
	if lvl, _ := d.Lookup("level").StringValueOK(); lvl != "snapshot" {
		return nil
	}
	return d
}

// snapshotError reports whether code says a shard cannot serve a read
// time: the read may go again at another.
func snapshotError(code int32) bool {
	return code == int32(mongoerr.SnapshotTooOld) || code == int32(mongoerr.SnapshotUnavailable)
}

// snapshotRead runs h, a snapshot read outside a transaction, at one
// cluster time on every shard (see above).
func (r *Router) snapshotRead(ctx context.Context, h handler, req *request, rc bsoncore.Document) (bsoncore.Document, error) {
	var at hlc.Timestamp
	t, i, given := rc.Lookup("atClusterTime").TimestampOK()
	if given {
		at = hlc.New(t, i)
	} else if _, err := rc.LookupErr("atClusterTime"); err == nil {
		return h(ctx, r, req) // not a timestamp: the shards refuse it
	}
	for attempt := 0; ; attempt++ {
		if !given {
			at = max(r.chooseReadTime(rc), at+1) // a later time at each attempt
		}
		q := *req
		q.body = withReadConcern(req.body, readConcernAt(rc, at))
		qctx := ctx
		if !given {
			qctx = withReadTime(ctx, at) // gossiped: only a time the router chose
		}
		reply, err := h(qctx, r, &q)
		if err != nil && !given && attempt < snapshotRetries && snapshotError(codeOf(err)) {
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(time.Duration(attempt+1) * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return withAtClusterTime(req.name, reply, at), nil
	}
}

// chooseReadTime is the time the router reads a snapshot at when the
// client named none: its newest known cluster time, or the client's
// afterClusterTime when later (a causally consistent session's last
// operation), as mongos chooses.
func (r *Router) chooseReadTime(rc bsoncore.Document) hlc.Timestamp {
	at := r.clock.now()
	if t, i, ok := rc.Lookup("afterClusterTime").TimestampOK(); ok {
		at = max(at, hlc.New(t, i))
	}
	return at
}

// readConcernAt is rc with atClusterTime at, in place of any
// afterClusterTime (the chosen time is at or after it: chooseReadTime).
func readConcernAt(rc bsoncore.Document, at hlc.Timestamp) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	elems, _ := rc.Elements()
	for _, el := range elems {
		if k := el.Key(); k != "atClusterTime" && k != "afterClusterTime" {
			dst = append(dst, el...)
		}
	}
	dst = bsoncore.AppendTimestampElement(dst, "atClusterTime", at.T(), at.I())
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// withReadConcern is body with its readConcern replaced by rc (every other
// field kept, the client's session fields included).
func withReadConcern(body, rc bsoncore.Document) bsoncore.Document {
	return replaceField(body, "readConcern", func(dst []byte) []byte {
		return bsoncore.AppendDocumentElement(dst, "readConcern", rc)
	})
}

// replaceField copies doc without its field key, then lets add append
// the new one.
func replaceField(doc bsoncore.Document, key string, add func(dst []byte) []byte) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+32))
	elems, _ := doc.Elements()
	for _, el := range elems {
		if el.Key() != key {
			dst = append(dst, el...)
		}
	}
	dst = add(dst)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// withAtClusterTime adds a snapshot read's time to its reply, as mongos
// answers it: in the cursor of find and aggregate, at the top of
// distinct.
func withAtClusterTime(name string, reply bsoncore.Document, at hlc.Timestamp) bsoncore.Document {
	if name == "distinct" {
		return replaceField(reply, "atClusterTime", func(dst []byte) []byte {
			return bsoncore.AppendTimestampElement(dst, "atClusterTime", at.T(), at.I())
		})
	}
	cur, ok := reply.Lookup("cursor").DocumentOK()
	if !ok {
		return reply // explain, or no cursor at all
	}
	cur = replaceField(cur, "atClusterTime", func(dst []byte) []byte {
		return bsoncore.AppendTimestampElement(dst, "atClusterTime", at.T(), at.I())
	})
	// The cursor stays where it was: drivers read firstBatch from it
	// wherever it is, but keep the reply's order for humans.
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(reply)+32))
	elems, _ := reply.Elements()
	for _, el := range elems {
		if el.Key() == "cursor" {
			dst = bsoncore.AppendDocumentElement(dst, "cursor", cur)
			continue
		}
		dst = append(dst, el...)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// readTimeKey carries a snapshot read's time in its context to every
// command the read sends (toShardSeq gossips it).
type readTimeKey struct{}

func withReadTime(ctx context.Context, at hlc.Timestamp) context.Context {
	return context.WithValue(ctx, readTimeKey{}, at)
}

func readTimeOf(ctx context.Context) hlc.Timestamp {
	at, _ := ctx.Value(readTimeKey{}).(hlc.Timestamp)
	return at
}

// zeroSignature is $clusterTime's signature from the router, which (as
// __system with a keyFile, or with access control off) may advance a
// member's clock without one.
var zeroSignature = bsoncore.NewDocumentBuilder().AppendBinary("hash", 0, make([]byte, 20)).AppendInt64("keyId", 0).Build()

// appendGossip appends $clusterTime at (an open document): a shard's
// clock reaches the read time the router chose.
func appendGossip(dst []byte, at hlc.Timestamp) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "$clusterTime")
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", at.T(), at.I())
	dst = bsoncore.AppendDocumentElement(dst, "signature", zeroSignature)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
