package commands

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// This file holds multi-document transactions at the command boundary
// (package session owns their state, package engine their snapshot and
// writes): the transaction fields of a command (lsid, txnNumber,
// autocommit: false, startTransaction: true), which commands may run in a
// transaction, the read and write concerns a transaction takes,
// commitTransaction and abortTransaction, and MongoDB's error labels.
//
// Transactions run on replica-set members (the primary); a standalone
// refuses them with IllegalOperation, as mongod does. readConcern snapshot
// may name atClusterTime (what a router sends every participant, one
// snapshot across shards): the transaction reads the member's snapshot
// history at that time (engine.BeginAt), after its last committed time has
// reached it (waitClusterTime).
//
// create and createIndexes run in a transaction as MongoDB 4.4+ allows
// (engine txn_ddl.go): a new collection, and indexes on it while it is
// empty, visible at the commit only; explicitly only under readConcern
// "local" (txnDDL). Deviation from MongoDB 7.0: a collection created in a
// transaction takes no options (refused: OperationNotSupportedInTransaction),
// and views and time series collections are not created in one.

// defineTxnParams defines transactionLifetimeLimitSeconds (MongoDB's, 60 by
// default): open transactions older than it are aborted (package session);
// and minSnapshotHistoryWindowInSeconds.
func defineTxnParams(env *Env) {
	env.Params.DefineLive("transactionLifetimeLimitSeconds", func() any {
		return int32(env.Sessions.TransactionLifetime() / time.Second)
	}, func(v bsoncore.Value) (any, error) {
		n, ok := numberAsInt(v)
		if !ok || n < 1 || n > math.MaxInt32 {
			return nil, mongoerr.New(mongoerr.BadValue, "transactionLifetimeLimitSeconds must be a positive integer, got %s", v)
		}
		env.Sessions.SetTransactionLifetime(int64(n))
		return int32(n), nil
	})
	// minSnapshotHistoryWindowInSeconds (MongoDB's, 300 by default): how
	// long a member keeps snapshots for reads at a cluster time (engine
	// snapshot_history.go); setting it also starts keeping them.
	env.Params.DefineLive("minSnapshotHistoryWindowInSeconds", func() any {
		return int32(env.Engine.SnapshotHistoryWindow() / time.Second)
	}, func(v bsoncore.Value) (any, error) {
		n, ok := numberAsInt(v)
		if !ok || n < 0 || n > math.MaxInt32 {
			return nil, mongoerr.New(mongoerr.BadValue, "minSnapshotHistoryWindowInSeconds must be a non-negative integer, got %s", v)
		}
		env.Engine.SetSnapshotHistoryWindow(time.Duration(n) * time.Second)
		return int32(n), nil
	})
}

// txnCommands are the commands a transaction may run (MongoDB 7.0's list).
var txnCommands = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "insert": true, "update": true, "delete": true,
	"findAndModify": true, "findandmodify": true, "aggregate": true, "distinct": true,
	"create": true, "createIndexes": true,
	"commitTransaction": true, "abortTransaction": true,
	"prepareTransaction": true, "coordinateCommitTransaction": true, // two-phase commit, between members
}

// endsTransaction: the commands that end (or prepare, or coordinate) a
// transaction rather than run a statement in it.
func endsTransaction(name string) bool {
	switch name {
	case "commitTransaction", "abortTransaction", "prepareTransaction", "coordinateCommitTransaction":
		return true
	}
	return false
}

// checkTransaction reads a command's transaction fields (checkSession,
// once txnNumber is known): autocommit must be false and startTransaction
// true when given; only txnCommands run in a transaction.
func checkTransaction(s *Session, name string, g *generic) error {
	if s.Env.Repl == nil {
		return mongoerr.New(mongoerr.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos")
	}
	if g.autocommit.Type == 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "'startTransaction' field requires 'autocommit' field to also be specified")
	}
	ac, ok := g.autocommit.BooleanOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.autocommit' is the wrong type '%s', expected type 'bool'", typeName(g.autocommit.Type))
	}
	if ac {
		return mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
	}
	if g.startTransaction.Type != 0 {
		st, ok := g.startTransaction.BooleanOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.startTransaction' is the wrong type '%s', expected type 'bool'", typeName(g.startTransaction.Type))
		}
		if !st {
			return mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
		}
		s.sess.start = true
	}
	if !txnCommands[name] {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", name)
	}
	if s.sess.start && endsTransaction(name) {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot start a transaction with %s", name)
	}
	if name == "coordinateCommitTransaction" {
		// The coordinator drives the participants — this shard among them,
		// whose prepareTransaction checks the session out — so it does not
		// hold the session itself (it reads lsid and txnNumber from its
		// body: package shardsvr).
		s.sess = cmdSession{}
		return nil
	}
	s.sess.inTxn = true
	return checkTxnConcerns(s, name, g)
}

// checkTxnConcerns: a transaction takes its readConcern (snapshot,
// majority or local: all read the transaction's snapshot) on its first
// command only, and a writeConcern only on commitTransaction and
// abortTransaction.
func checkTxnConcerns(s *Session, name string, g *generic) error {
	if rc := g.readConcern; rc.Type != 0 {
		if !s.sess.start {
			return mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
		}
		d, ok := rc.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern' is the wrong type '%s', expected type 'object'", typeName(rc.Type))
		}
		// Element by element, without Elements' slice (per transaction:
		// TestTxnPointReadAllocs).
		for rest := docElements(d); len(rest) > 0; {
			el, r, ok := bsoncore.ReadElement(rest)
			if !ok {
				break
			}
			rest = r
			switch el.Key() {
			case "level":
				// The level's constant, not a string made of its bytes (per
				// transaction: TestTxnPointReadAllocs).
				switch v := el.Value(); {
				case stringIs(v, "snapshot"):
					s.sess.level = "snapshot"
				case stringIs(v, "majority"):
					s.sess.level = "majority"
				case stringIs(v, "local"):
					s.sess.level = "local"
				default:
					return mongoerr.New(mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
				}
			case "provenance", "afterClusterTime": // waited for before the snapshot (run)
			case "atClusterTime":
				// One snapshot across shards: a router sends every
				// participant the time it chose (engine.BeginAt).
				at, err := parseAtClusterTime(el.Value())
				if err != nil {
					return err
				}
				s.sess.at = at
			default:
				return mongoerr.New(mongoerr.InvalidOptions, "readConcern %s is not supported in a transaction yet", el.Key())
			}
		}
		if s.sess.at != 0 && s.sess.level != "snapshot" {
			return mongoerr.New(mongoerr.InvalidOptions, "readConcern level snapshot is required when specifying atClusterTime")
		}
	}
	if g.writeConcern.Type != 0 && !endsTransaction(name) {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot set write concern after starting a transaction.")
	}
	return nil
}

// docElements is d's elements' bytes (none for a document too short to
// hold any).
func docElements(d bsoncore.Document) []byte {
	if len(d) < 5 {
		return nil
	}
	return d[4 : len(d)-1]
}

// useTransaction binds the command to its transaction (useSession): a
// statement gets the open transaction, started when startTransaction.
func useTransaction(s *Session, name string) error {
	if !s.sess.inTxn || endsTransaction(name) {
		return nil
	}
	if s.sess.start {
		s.Env.Cursors.closeTxnCursors(s.sess.use.ID()) // an older transaction's
	}
	t, err := s.sess.use.TransactionAt(s.sess.txn, s.sess.start, s.sess.at)
	if err != nil {
		return err
	}
	if s.sess.start {
		t.ReadConcernLevel = s.sess.level
	}
	s.sess.etx = t
	return nil
}

// txnDDL is the transaction an explicit create or createIndexes runs in
// (nil outside one), refused unless the transaction reads at "local"
// (MongoDB's rule for explicit DDL in a transaction; an implicit creation
// takes any level).
func txnDDL(s *Session, name string) (*engine.Txn, error) {
	t := s.sess.etx
	if t == nil {
		return nil, nil
	}
	if lv := t.ReadConcernLevel; lv != "" && lv != "local" {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot run '%s' in a multi-document transaction with readConcern level '%s': only 'local' is allowed", name, lv)
	}
	return t, nil
}

// x is the execution environment of the command (Session.scope): inside its transaction
// when it runs in one, filtering orphans out of a shard's reads that carry
// a shardVersion.
func (s *Session) x() *exec.Env {
	sc := s.scope
	sc.Txn = s.sess.etx
	return s.Env.Exec.Within(sc)
}

// enforcesPrepare reports whether a command's reads wait on prepare
// conflicts, as MongoDB 7.0's do: the reads of a write (update, delete,
// findAndModify, an aggregate with $out or $merge) and reads with
// readConcern snapshot, linearizable or afterClusterTime; other reads
// (local, majority, available) read past a prepared transaction, seeing
// its documents as before it (MongoDB's ignore_prepared).
func enforcesPrepare(req *Request, writes bool) bool {
	if writes {
		return true
	}
	rc := argDoc(req, "readConcern")
	if len(rc) == 0 {
		return false
	}
	if level := rc.Lookup("level"); stringIs(level, "snapshot") || stringIs(level, "linearizable") {
		return true
	}
	_, err := rc.LookupErr("afterClusterTime")
	return err == nil
}

// stringIs reports whether v is the string s, without making a Go string
// of it (a statement's hot path: TestTxnPointReadAllocs).
func stringIs(v bsoncore.Value, s string) bool {
	return v.Type == bsoncore.TypeString && len(v.Data) >= 5 && string(v.Data[4:len(v.Data)-1]) == s
}

// cmdTransactionEnd is commitTransaction and abortTransaction.
func cmdTransactionEnd(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if !s.sess.inTxn {
		if s.Env.Repl == nil || !s.sess.has {
			return nil, mongoerr.New(mongoerr.CommandFailed, "%s must be run within a transaction", req.Name)
		}
		return nil, mongoerr.New(mongoerr.InvalidOptions, "%s must be run within a transaction: it needs txnNumber and autocommit: false", req.Name)
	}
	use, n := s.sess.use, s.sess.txn
	defer s.Env.Cursors.closeTxnCursors(use.ID())
	if req.Name == "abortTransaction" {
		if err := use.AbortTransaction(n); err != nil {
			return nil, err
		}
		return OK(dst), nil
	}
	if v, ok := req.Arg("commitTimestamp"); ok {
		t, i, ok := v.TimestampOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'commitTransaction.commitTimestamp' is the wrong type '%s', expected type 'timestamp'", typeName(v.Type))
		}
		if _, err := use.CommitPreparedTransaction(n, hlc.New(t, i)); err != nil {
			return nil, err
		}
		return OK(dst), nil
	}
	if _, err := use.CommitTransaction(n); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

// cmdPrepareTransaction is prepareTransaction (two-phase commit's
// participant, sent by a shard's coordinator): it prepares the
// transaction and answers its prepareTimestamp (package session's
// "Only commit or abort ends a prepared transaction").
func cmdPrepareTransaction(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if !s.sess.inTxn {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "prepareTransaction must be run within a transaction: it needs lsid, txnNumber and autocommit: false")
	}
	defer s.Env.Cursors.closeTxnCursors(s.sess.use.ID())
	ts, err := s.sess.use.PrepareTransaction(s.sess.txn)
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Value("prepareTimestamp", bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, ts.T(), ts.I())}).Finish(), nil
}

// txnOutcome is run's last word on a command of a transaction: a
// statement that failed, or whose write failed, aborts the transaction (as
// MongoDB's do); a write conflict answers the command, not its writeErrors;
// the error gets MongoDB's labels (TransientTransactionError: the whole
// transaction may be retried; UnknownTransactionCommitResult: a commit
// whose outcome is unknown may be retried).
func txnOutcome(s *Session, name string, out bsoncore.Document, err error) error {
	if !s.sess.inTxn {
		return err
	}
	isEnd := endsTransaction(name)
	if err == nil && !isEnd {
		if arr, ok := out.Lookup("writeErrors").ArrayOK(); ok {
			vals, _ := arr.Values()
			if len(vals) > 0 {
				if d, ok := vals[0].DocumentOK(); ok {
					if code, _ := d.Lookup("code").AsInt64OK(); mongoerr.Code(code) == mongoerr.WriteConflict {
						msg, _ := d.Lookup("errmsg").StringValueOK()
						err = mongoerr.New(mongoerr.WriteConflict, "%s", msg)
					}
				}
				if err == nil && s.sess.etx != nil {
					s.abortTxn()
				}
			}
		}
	}
	if err == nil {
		return nil
	}
	if !isEnd && s.sess.etx != nil {
		s.abortTxn() // not a command refused before it joined the transaction
	}
	code := mongoerr.CodeOf(err)
	switch {
	case code == mongoerr.NoSuchTransaction, code == mongoerr.WriteConflict, code == mongoerr.LockTimeout,
		code == mongoerr.SnapshotTooOld, code == mongoerr.SnapshotUnavailable: // a read time the member cannot serve (MongoDB labels snapshot errors so)
		return withLabels(err, bson.A{"TransientTransactionError"})
	case name == "commitTransaction" && unknownCommitResult(code):
		return withLabels(err, bson.A{"UnknownTransactionCommitResult"})
	case !isEnd && notPrimaryError(code):
		return withLabels(err, bson.A{"TransientTransactionError"})
	}
	return err
}

// notPrimaryError: MongoDB's NotPrimaryError category, which labels a
// transaction's statement TransientTransactionError (a primary stepped
// down: the transaction is gone, the whole of it may be retried).
func notPrimaryError(code mongoerr.Code) bool {
	switch code {
	case mongoerr.NotWritablePrimary, mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.PrimarySteppedDown:
		return true
	}
	return false
}

// unknownCommitResult: a commit that failed with code may have committed
// (MongoDB's isUnknownTransactionCommitResult: retryable errors, write
// concern failures, time limits).
func unknownCommitResult(code mongoerr.Code) bool {
	switch code {
	case mongoerr.NotWritablePrimary, mongoerr.InterruptedDueToReplStateChange, mongoerr.PrimarySteppedDown,
		mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary, mongoerr.ShutdownInProgress,
		mongoerr.InterruptedAtShutdown, mongoerr.HostUnreachable, mongoerr.NetworkTimeout, mongoerr.SocketException,
		mongoerr.WriteConcernFailed, mongoerr.UnsatisfiableWriteConcern, mongoerr.MaxTimeMSExpired, mongoerr.ExceededTimeLimit,
		mongoerr.InternalError:
		return true
	}
	return false
}

// abortTxn aborts the command's transaction after a failed statement and
// closes its cursors.
func (s *Session) abortTxn() {
	_ = s.sess.use.AbortTransaction(s.sess.txn)
	s.Env.Cursors.closeTxnCursors(s.sess.use.ID())
	s.sess.etx = nil
}

// closeTxnCursors closes the cursors a session opened in a transaction
// (when it ends: MongoDB kills them with it).
func (c *Cursors) closeTxnCursors(id session.ID) {
	c.mu.Lock()
	var dead []*Cursor
	for cid, cur := range c.open {
		if cur.inTxn && cur.hasLSID && cur.lsid == id {
			dead = append(dead, cur)
			delete(c.open, cid)
		}
	}
	c.mu.Unlock()
	for _, cur := range dead {
		_ = cur.src.Close()
	}
}

// errTimeseriesInTxn refuses a write to a time series collection inside a
// transaction: MongoDB 7.0 does not allow it (its buckets are written
// outside the transaction's snapshot), and running it outside the
// transaction would break the transaction's atomicity.
func errTimeseriesInTxn(what string, ns interface{ String() string }) error {
	return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot %s a time-series collection %s in a multi-document transaction.", what, ns.String())
}
