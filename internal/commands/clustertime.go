package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds cluster time at the command boundary (package hlc owns
// the clock, storage the times of commits). MongoDB's replica-set members
// put operationTime and $clusterTime on every reply, advance their clock
// from the $clusterTime clients gossip, and honour readConcern
// afterClusterTime by waiting; a standalone mongod does none of it, which
// is how drivers know not to attempt causal consistency with one. So all
// three depend on the server's mode: off on a standalone (as mongod), on
// once the replica set turns it on (Env.SetClusterTimes).

// SetClusterTimes turns the replica-set behaviour of cluster times on or
// off (see the file comment).
func (e *Env) SetClusterTimes(on bool) { e.clusterTimes.Store(on) }

// ClusterTimes reports whether replies carry cluster times.
func (e *Env) ClusterTimes() bool { return e.clusterTimes.Load() }

// observeClusterTime advances the clock to the $clusterTime a client
// gossips ({clusterTime: Timestamp, signature}); a time too far ahead is
// refused (hlc's "Bounded drift").
func observeClusterTime(s *Session, req *Request) error {
	v, ok := req.Arg("$clusterTime")
	if !ok {
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$clusterTime' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	t, i, ok := d.Lookup("clusterTime").TimestampOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$clusterTime.clusterTime' must be a timestamp")
	}
	return s.Env.Engine.Storage().Clock().Observe(hlc.New(t, i))
}

// appendClusterTimes adds operationTime (the last committed time: what the
// command's reads saw or its writes reached) and $clusterTime (the clock's
// current time, with a zero signature until keys exist) to a finished
// reply, which must end its buffer.
func appendClusterTimes(reply bsoncore.Document, s *Session) bsoncore.Document {
	db := s.Env.Engine.Storage()
	op, ct := db.LastCommitted(), db.Clock().Current()
	if ct < op {
		ct = op
	}
	b := []byte(reply[:len(reply)-1])
	b = bsoncore.AppendTimestampElement(b, "operationTime", op.T(), op.I())
	var ctIdx, sigIdx int32
	ctIdx, b = bsoncore.AppendDocumentElementStart(b, "$clusterTime")
	b = bsoncore.AppendTimestampElement(b, "clusterTime", ct.T(), ct.I())
	sigIdx, b = bsoncore.AppendDocumentElementStart(b, "signature")
	b = bsoncore.AppendBinaryElement(b, "hash", 0, make([]byte, 20))
	b = bsoncore.AppendInt64Element(b, "keyId", 0)
	b, _ = bsoncore.AppendDocumentEnd(b, sigIdx)
	b, _ = bsoncore.AppendDocumentEnd(b, ctIdx)
	b = append(b, 0)
	bsoncore.UpdateLength(b, 0, int32(len(b)))
	return b
}

// afterClusterTime is the readConcern's afterClusterTime, zero for none.
func afterClusterTime(req *Request) hlc.Timestamp {
	rc, ok := req.Arg("readConcern")
	if !ok {
		return 0
	}
	d, ok := rc.DocumentOK()
	if !ok {
		return 0
	}
	t, i, ok := d.Lookup("afterClusterTime").TimestampOK()
	if !ok {
		return 0
	}
	return hlc.New(t, i)
}

// waitClusterTime makes a read with afterClusterTime T wait until the
// node's last committed time reaches T (the command's maxTimeMS and killOp
// end the wait). A T the node never issued (gossiped from elsewhere, or
// ahead of an idle node) is reached with a no-op oplog entry, as MongoDB's
// primary writes one.
func waitClusterTime(ctx context.Context, s *Session, req *Request) error {
	if !s.Env.ClusterTimes() {
		return nil
	}
	target := afterClusterTime(req)
	if target == 0 {
		return nil
	}
	db := s.Env.Engine.Storage()
	if db.LastCommitted() >= target {
		return nil
	}
	if err := db.Clock().Observe(target); err != nil {
		return err
	}
	if err := s.Env.Engine.LogNoop("waiting for afterClusterTime"); err != nil {
		return err
	}
	for db.LastCommitted() < target {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
