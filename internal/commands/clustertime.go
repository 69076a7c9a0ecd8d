package commands

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/clusterkeys"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/periodic"
)

// This file holds cluster time at the command boundary (package hlc owns
// the clock, storage the times of commits). MongoDB's replica-set members
// put operationTime and $clusterTime on every reply, advance their clock
// from the $clusterTime clients gossip, and honour readConcern
// afterClusterTime by waiting; a standalone mongod does none of it, which
// is how drivers know not to attempt causal consistency with one. So all
// three depend on the server's mode: off on a standalone (as mongod), on
// once the replica set turns it on (Env.SetClusterTimes).

// Signed cluster times (package clusterkeys owns the keys and proofs): a
// client that may advance the clock (with --auth, a user holding
// advanceClusterTime on the cluster, such as __system; without --auth,
// everyone) gets and gives $clusterTime with a zero signature, as mongod's
// internal clients do; any other client gets it signed with a key of
// admin.system.keys, and a time it sends that would advance the clock is
// validated first (KeyNotFound 211, TimeProofMismatch 204).

// keysNS is where the signing keys live, as in MongoDB.
var keysNS = engine.Namespace{DB: "admin", Coll: "system.keys"}

// keysBacking stores the keys through the engine.
type keysBacking struct{ env *Env }

func (b keysBacking) Load() ([]bson.Raw, error) { return usersBacking{b.env, keysNS}.Load() }
func (b keysBacking) Insert(doc bson.Raw) error {
	_, err := b.env.Engine.Insert(keysNS, []bsoncore.Document{bsoncore.Document(doc)}, true)
	return err
}

// startKeyRotation runs the primary's key maker: once a second it checks
// (in memory, unless keys are missing) that a current and a next key
// exist ("A key per time").
func (e *Env) startKeyRotation(primaryOnly func() bool) *periodic.Loop {
	return periodic.Start(nil, time.Second, func() bool { return e.ClusterTimes() && primaryOnly() }, func() {
		now := e.Engine.Storage().Clock().Current()
		if e.Keys.Ready(now) {
			return
		}
		if err := e.Keys.Rotate(now, clusterkeys.DefaultRotation); err != nil {
			e.Log.Warn("cannot make a cluster time signing key", "err", err)
		}
	})
}

// mayAdvanceClock reports whether s's client may advance the cluster time
// without a valid signature: access control off, or the advanceClusterTime
// privilege on the cluster.
func mayAdvanceClock(s *Session) bool {
	acc := s.Env.Access
	if acc == nil || !acc.Enabled {
		return true
	}
	a := &s.auth
	if a.user == nil {
		return false
	}
	privs := s.privileges() // resolves again when the users changed
	// Cached per user and resolution: every reply of a member asks.
	if a.advanceUser != a.user || a.advanceGen != a.gen {
		a.advance, a.advanceGen, a.advanceUser = privs.Allows(auth.Cluster, "advanceClusterTime"), a.gen, a.user
	}
	return a.advance
}

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
	ts := hlc.New(t, i)
	clock := s.Env.Engine.Storage().Clock()
	if ts > clock.Current() && !mayAdvanceClock(s) {
		if err := validateSignature(s.Env.Keys, ts, d); err != nil {
			return err
		}
	}
	return clock.Observe(ts)
}

// validateSignature checks $clusterTime's signature {hash, keyId} for ts.
func validateSignature(keys *clusterkeys.Keys, ts hlc.Timestamp, ct bsoncore.Document) error {
	sig, err := ct.LookupErr("signature")
	if err != nil {
		return mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"signature\"")
	}
	sd, ok := sig.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$clusterTime.signature' is the wrong type '%s', expected type 'object'", typeName(sig.Type))
	}
	_, hash, ok := sd.Lookup("hash").BinaryOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$clusterTime.signature.hash' must be binData")
	}
	keyID, ok := sd.Lookup("keyId").AsInt64OK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$clusterTime.signature.keyId' must be a number")
	}
	switch err := keys.Validate(ts, hash, keyID); {
	case errors.Is(err, clusterkeys.ErrKeyNotFound):
		return mongoerr.New(mongoerr.KeyNotFound, "Cache Reader No keys found for HMAC that is valid for time: { ts: Timestamp(%d, %d) } with id: %d", ts.T(), ts.I(), keyID)
	case errors.Is(err, clusterkeys.ErrProofMismatch):
		return mongoerr.New(mongoerr.TimeProofMismatch, "Proof does not match the cluster time")
	case err != nil:
		return err
	}
	return nil
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
	hash, keyID := zeroProof[:], int64(0)
	if !mayAdvanceClock(s) {
		if h, id, ok := s.Env.Keys.Sign(ct); ok {
			hash, keyID = h, id
		}
	}
	b = bsoncore.AppendBinaryElement(b, "hash", 0, hash)
	b = bsoncore.AppendInt64Element(b, "keyId", keyID)
	b, _ = bsoncore.AppendDocumentEnd(b, sigIdx)
	b, _ = bsoncore.AppendDocumentEnd(b, ctIdx)
	b = append(b, 0)
	bsoncore.UpdateLength(b, 0, int32(len(b)))
	return b
}

// zeroProof is the signature of a time sent to a client that may advance
// the clock, or before any key exists.
var zeroProof [clusterkeys.ProofLen]byte

// afterClusterTime is the readConcern's afterClusterTime, zero for none.
func afterClusterTime(req *Request) hlc.Timestamp { return readConcernTime(req, "afterClusterTime") }

// atClusterTimeOf is the readConcern's atClusterTime, zero for none.
func atClusterTimeOf(req *Request) hlc.Timestamp { return readConcernTime(req, "atClusterTime") }

// readConcernTime is the readConcern's timestamp field, zero for none.
func readConcernTime(req *Request, field string) hlc.Timestamp {
	rc, ok := req.Arg("readConcern")
	if !ok {
		return 0
	}
	d, ok := rc.DocumentOK()
	if !ok {
		return 0
	}
	t, i, ok := d.Lookup(field).TimestampOK()
	if !ok {
		return 0
	}
	return hlc.New(t, i)
}

// waitClusterTime makes a read with afterClusterTime T wait until the
// node's last committed time reaches T (the command's maxTimeMS and killOp
// end the wait). A T the node never issued (gossiped from elsewhere, or
// ahead of an idle node) is reached with a no-op oplog entry, as MongoDB's
// primary writes one; a secondary, which cannot write, waits until it has
// applied the primary's entries up to T (a causally consistent read of the
// session's own write on a secondary). A snapshot read at atClusterTime T
// waits the same way when the clock has reached T (a router's chosen time,
// which it gossips as $clusterTime with the read: one snapshot across
// shards, on the shards that have committed less); a T beyond the clock
// is the read's error, as mongod's.
func waitClusterTime(ctx context.Context, s *Session, req *Request) error {
	if !s.Env.ClusterTimes() {
		return nil
	}
	db := s.Env.Engine.Storage()
	target := afterClusterTime(req)
	if at := atClusterTimeOf(req); at > target && at <= db.Clock().Current() {
		target = at
	}
	if target == 0 {
		return nil
	}
	if db.LastCommitted() >= target {
		return nil
	}
	if rs := s.Env.Repl; rs == nil || rs.CanWrite() == nil {
		if err := db.Clock().Observe(target); err != nil {
			return err
		}
		if err := s.Env.Engine.LogNoop("waiting for afterClusterTime"); err != nil {
			return err
		}
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
