package router

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds multi-document transactions through the router, as
// mongos's transaction router runs them: the statements of a transaction
// go to the shards they target, each shard joining as a participant on
// its first statement (which carries startTransaction and the
// transaction's readConcern); a failed statement aborts the transaction
// on every participant; abortTransaction aborts it everywhere;
// commitTransaction commits on the one participant, or on each
// participant when at most one of them wrote (the read-only ones first,
// as mongos's single-write-shard commit); a commit for a transaction the
// router did not run goes by its recoveryToken (recoverCommit).
//
// Invariant "No partial commit": a transaction that wrote on two or more
// shards commits by MongoDB's two-phase commit, never shard by shard: the
// router sends coordinateCommitTransaction with the shards that wrote to
// the first of them, which prepares them all, records its decision and
// commits or aborts each (package shardsvr's coordinator.go); the
// read-only participants are then committed (or aborted) by the router.
// Deviation from MongoDB 7.0 (the coordinator's choice): mongos makes a
// transaction's first participant its coordinator, tells it so on its
// first statement ({coordinator: true}: the shard starts a coordinator
// then, which aborts the transaction if no commit comes before its
// deadline) and, at a two-phase commit, hands it every participant, the
// read-only ones included (they prepare too). Cairn's router picks the
// first shard that wrote, at commit, and hands it the shards that wrote;
// it commits the read-only participants itself after the decision. Not
// followed yet because Cairn's recovery rests on the coordinator being a
// participant that prepared: a coordinateCommitTransaction for a
// coordination no longer recorded answers from the coordinator's own
// participant record (shardsvr's coordinator.go), which a read-only first
// participant has only if read-only participants are prepared as well; and
// MongoDB's recoveryShardId (the first shard that wrote, as Cairn's token
// says) would then name a shard other than the coordinator, which answers
// a recovering router by waiting on its own prepared participant's
// outcome, where Cairn's answers from a record or coordinates anew. The
// change needs, together: shards that take coordinator: true and start a
// coordination with a deadline on the first statement, prepare and commit
// of read-only participants, and recovery that waits on the local
// participant.
//
// A transaction with readConcern snapshot reads every participant at one
// atClusterTime, chosen at its first statement (snapshot.go's "One read
// time per snapshot").

// txnCommands are the commands a transaction may run through the router
// (MongoDB 7.0's list, less create and createIndexes, which Cairn's
// shards refuse in a transaction).
var txnCommands = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "insert": true, "update": true, "delete": true,
	"findAndModify": true, "findandmodify": true, "aggregate": true, "distinct": true,
	"commitTransaction": true, "abortTransaction": true,
}

type txnState int

const (
	txnOpen txnState = iota
	txnAborted
	txnCommitted
	// txnCommitting: its coordinator was asked to commit it and has not
	// answered with a verdict; nothing of the router's aborts it (its
	// participants may be prepared: only the coordinator decides).
	txnCommitting
)

// routerTxn is one transaction of a session as the router runs it.
type routerTxn struct {
	lsid        bsoncore.Document
	number      int64
	readConcern bsoncore.Document // the first statement's, sent to each participant on its first statement
	// at is a snapshot transaction's read time (in readConcern as
	// atClusterTime); chosen: the router picked it (gossiped to each
	// participant as $clusterTime, snapshot.go), not the client.
	at     hlc.Timestamp
	chosen bool

	// recovering: the transaction ran through another router (or this
	// one before a restart); recovery is the recoveryToken its commit
	// carried (recoverCommit).
	recovering bool
	recovery   bsoncore.Document

	mu           sync.Mutex
	state        txnState
	participants []*participant // in joining order
}

// participant is a shard a transaction's statements reached.
type participant struct {
	shard string
	wrote bool // a write statement went there
}

// join makes shard a participant (first: it was not one, so this
// statement starts the transaction there); write marks it as written.
func (t *routerTxn) join(shard string, write bool) (first bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != txnOpen {
		return false, mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has been aborted.", t.number)
	}
	for _, p := range t.participants {
		if p.shard == shard {
			p.wrote = p.wrote || write
			return false, nil
		}
	}
	t.participants = append(t.participants, &participant{shard: shard, wrote: write})
	return true, nil
}

// snapshotParticipants copies the participants.
func (t *routerTxn) snapshotParticipants() []participant {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]participant, len(t.participants))
	for i, p := range t.participants {
		out[i] = *p
	}
	return out
}

func (t *routerTxn) setState(s txnState) {
	t.mu.Lock()
	t.state = s
	t.mu.Unlock()
}

func (t *routerTxn) getState() txnState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// bindTransaction binds a command with autocommit to transaction n of its
// session: startTransaction begins it (readConcern on this first
// statement only); a later statement must name the open one.
func (r *Router) bindTransaction(req *request, sess *routerSession, lsid bsoncore.Document, n int64) (*routerTxn, error) {
	acV, _ := req.arg("autocommit")
	ac, ok := acV.BooleanOK()
	switch {
	case acV.Type == 0:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "'startTransaction' field requires 'autocommit' field to also be specified")
	case !ok:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.autocommit' is the wrong type '%s', expected type 'bool'", acV.Type)
	case ac:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
	}
	if !txnCommands[req.name] {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", req.name)
	}
	rc, hasRC := req.arg("readConcern")
	if _, ok := req.arg("writeConcern"); ok && req.name != "commitTransaction" && req.name != "abortTransaction" {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot set write concern after starting a transaction.")
	}
	if stV, start := req.arg("startTransaction"); start {
		if st, ok := stV.BooleanOK(); !ok || !st {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
		}
		if req.name == "commitTransaction" || req.name == "abortTransaction" {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot start a transaction with %s", req.name)
		}
		t := &routerTxn{lsid: lsid, number: n}
		if hasRC {
			d, ok := rc.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern' is the wrong type '%s', expected type 'object'", rc.Type)
			}
			lvl, _ := d.Lookup("level").StringValueOK()
			switch lvl {
			case "", "local", "majority", "snapshot":
			default:
				return nil, mongoerr.New(mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
			}
			t.readConcern = append(bsoncore.Document(nil), d...)
			if lvl == "snapshot" { // one read time for every participant (snapshot.go)
				if ts, i, ok := d.Lookup("atClusterTime").TimestampOK(); ok {
					t.at = hlc.New(ts, i)
				} else if _, err := d.LookupErr("atClusterTime"); err != nil {
					t.at, t.chosen = r.chooseReadTime(d), true
					t.readConcern = readConcernAt(d, t.at)
				} // not a timestamp: the participants refuse it
			}
		}
		r.sessions.mu.Lock()
		defer r.sessions.mu.Unlock()
		if old := sess.txn; old != nil {
			switch {
			case n < old.number:
				return nil, mongoerr.New(mongoerr.TransactionTooOld, "Cannot start transaction %d on session because a newer transaction %d has already started.", n, old.number)
			case n == old.number:
				return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Transaction %d has already started on this session.", n)
			}
			if old.getState() == txnOpen && len(old.snapshotParticipants()) > 0 {
				go func() { // a newer number ends the older transaction, as on the shards
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					r.abortParticipants(ctx, old)
				}()
			}
		}
		sess.txn = t
		return t, nil
	}
	if hasRC {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	r.sessions.mu.Lock()
	defer r.sessions.mu.Unlock()
	t := sess.txn
	if t == nil || t.number < n {
		if req.name == "commitTransaction" || req.name == "abortTransaction" {
			// Started through another router, or through this one
			// before it restarted: its recoveryToken names the shards
			// (cmdCommitTransaction).
			t = &routerTxn{lsid: lsid, number: n, recovering: true}
			if tok := docArg(req, "recoveryToken"); tok != nil {
				t.recovery = append(bsoncore.Document(nil), tok...)
			}
			sess.txn = t
			return t, nil
		}
	}
	if t == nil || t.number != n {
		return nil, mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has not been started on this router, or a newer one has", n)
	}
	return t, nil
}

// recoveryToken is what the router adds to each reply of a transaction's
// statement, and a driver sends back with commitTransaction (MongoDB's
// {recoveryShardId}): the first shard that wrote (or the first
// participant) — a two-phase commit's coordinator — and every shard that
// wrote, so that a router that does not know the transaction — another
// one, or this one restarted — can still commit it where it wrote, or ask
// its coordinator for the outcome of one that wrote on several shards.
func (t *routerTxn) recoveryToken() bsoncore.Document {
	parts := t.snapshotParticipants()
	if len(parts) == 0 {
		return nil
	}
	recovery, first := parts[0].shard, true
	writers := bsoncore.NewArrayBuilder()
	for _, p := range parts {
		if p.wrote {
			writers.AppendString(p.shard)
			if first {
				recovery, first = p.shard, false // the coordinator of a two-phase commit
			}
		}
	}
	return bsoncore.NewDocumentBuilder().AppendString("recoveryShardId", recovery).AppendArray("writeShards", writers.Build()).Build()
}

// withRecoveryToken returns a statement's reply with the transaction's
// recoveryToken.
func withRecoveryToken(reply bsoncore.Document, t *routerTxn) bsoncore.Document {
	tok := t.recoveryToken()
	if tok == nil {
		return reply
	}
	return rewrite(reply, map[string]bool{"recoveryToken": true}, func(b *bsoncore.DocumentBuilder) { b.AppendDocument("recoveryToken", tok) })
}

// recoveryShards are a recoveryToken's recovery shard, then the shards
// that wrote; none without a token.
func recoveryShards(tok bsoncore.Document) []string {
	recovery, ok := tok.Lookup("recoveryShardId").StringValueOK()
	if !ok {
		return nil
	}
	out := []string{recovery}
	arr, _ := tok.Lookup("writeShards").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok {
			out = append(out, s)
		}
	}
	return out
}

// recoverCommit commits a transaction this router does not know from the
// recoveryToken its commit carries: on the one shard that wrote (or the
// recovery shard of a read-only one); one that wrote on several shards is
// its coordinator's to commit or answer (coordinateCommitTransaction with
// the token's shards: the coordination's outcome, its own participant's,
// or a new two-phase commit).
func (r *Router) recoverCommit(ctx context.Context, op *opSession, wc bsoncore.Document) (bsoncore.Document, error) {
	t := op.txn
	if t.getState() == txnAborted {
		return nil, memberclient.Err(withLabel(errorReply(mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has been aborted.", t.number)), labelTransient))
	}
	recovery, _ := t.recovery.Lookup("recoveryShardId").StringValueOK()
	if recovery == "" {
		// No TransientTransactionError: the transaction may have been
		// committed by the router that ran it.
		return nil, mongoerr.New(mongoerr.NoSuchTransaction, "this router has no record of transaction %d and its commit carries no recoveryToken: its outcome is unknown here", t.number)
	}
	writers := recoveryShards(t.recovery)[1:]
	if len(writers) > 1 {
		// Its coordinator (the recovery shard, the first that wrote)
		// knows the outcome, or commits it over the shards the token
		// names (every statement's reply carried the token, so the last
		// one names every shard that wrote).
		return r.coordinate(ctx, op, wc, recovery, writers, nil)
	}
	if err := r.endOn(ctx, "commitTransaction", op, wc, []string{recovery})[0]; err != nil {
		if unreachable(err) {
			return nil, memberclient.Err(withLabel(errorReply(err), labelUnknownCommit))
		}
		return nil, err
	}
	t.setState(txnCommitted)
	return okReply(), nil
}

// txnEndCmd is commitTransaction or abortTransaction for one participant.
func txnEndCmd(name string, op *opSession, wc bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendDocument("lsid", op.lsid).
		AppendInt64("txnNumber", op.txnNumber).AppendBoolean("autocommit", false)
	if wc != nil {
		b.AppendDocument("writeConcern", wc)
	}
	return b.AppendString("$db", "admin").Build()
}

// endOn sends commitTransaction or abortTransaction to each shard at
// once and returns their errors in order.
func (r *Router) endOn(ctx context.Context, name string, op *opSession, wc bsoncore.Document, shards []string) []error {
	return r.runOn(ctx, shards, txnEndCmd(name, op, wc))
}

// runOn sends cmd (with its $db) to each shard's primary at once, without
// versions, and returns their errors in order.
func (r *Router) runOn(ctx context.Context, shards []string, cmd bsoncore.Document) []error {
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh, err := r.cache.shard(ctx, s)
			if err == nil {
				raw, rerr := sh.set.Run(ctx, cmd)
				r.clock.observe(raw) // a commit's time: a later snapshot read sees it
				_, err = memberclient.Check(raw, rerr)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}

// abortParticipants aborts t on every participant (their NoSuchTransaction
// answers included: a participant whose statement failed aborted it
// already) and marks it aborted — unless it is committed or its
// coordinator is committing it (txnCommitting): then nothing.
func (r *Router) abortParticipants(ctx context.Context, t *routerTxn) []error {
	t.mu.Lock()
	if t.state == txnCommitted || t.state == txnCommitting {
		t.mu.Unlock()
		return nil // committed, or its coordinator's to decide
	}
	t.state = txnAborted
	t.mu.Unlock()
	parts := t.snapshotParticipants()
	shards := make([]string, len(parts))
	for i, p := range parts {
		shards[i] = p.shard
	}
	op := &opSession{lsid: t.lsid, txnNumber: t.number}
	return r.endOn(ctx, "abortTransaction", op, nil, shards)
}

// txnStatementOutcome is the router's last word on a statement of a
// transaction: a failed statement, or one with a write error, aborts the
// transaction on every participant (mongos's implicit abort); the router's
// own failure to reach a shard, a stale routing, and a read time a shard
// cannot serve (SnapshotTooOld, SnapshotUnavailable: snapshot.go) get
// TransientTransactionError (the driver retries the whole transaction).
func (r *Router) txnStatementOutcome(ctx context.Context, op *opSession, reply bsoncore.Document, err error) (bsoncore.Document, error) {
	if err == nil {
		if arr, ok := reply.Lookup("writeErrors").ArrayOK(); ok {
			if vals, _ := arr.Values(); len(vals) > 0 {
				r.abortParticipants(ctx, op.txn)
			}
		}
		return reply, nil
	}
	r.abortParticipants(ctx, op.txn)
	out := errorReply(err)
	code := codeOf(err)
	if unreachable(err) || staleCode(code) || snapshotError(code) || code == int32(mongoerr.NoSuchTransaction) || code == int32(mongoerr.WriteConflict) {
		out = withLabel(out, labelTransient)
	}
	return nil, memberclient.Err(out)
}

func cmdCommitTransaction(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	op := sessionOf(ctx)
	if op == nil || op.txn == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "commitTransaction must be run within a transaction: it needs lsid, txnNumber and autocommit: false")
	}
	t := op.txn
	wc := docArg(req, "writeConcern")
	if t.recovering {
		return r.recoverCommit(ctx, op, wc)
	}
	switch t.getState() {
	case txnAborted:
		return nil, memberclient.Err(withLabel(errorReply(mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d has been aborted.", t.number)), labelTransient))
	}
	parts := t.snapshotParticipants()
	var readOnly, wrote []string
	for _, p := range parts {
		if p.wrote {
			wrote = append(wrote, p.shard)
		} else {
			readOnly = append(readOnly, p.shard)
		}
	}
	if len(wrote) > 1 {
		return r.coordinate(ctx, op, wc, wrote[0], wrote, readOnly) // the coordinator: the first shard that wrote
	}
	// The read-only participants first, then the one that wrote: only its
	// commit makes the transaction's writes visible.
	for _, shards := range [][]string{readOnly, wrote} {
		if len(shards) == 0 {
			continue
		}
		errs := r.endOn(ctx, "commitTransaction", op, wc, shards)
		if err := firstError(errs); err != nil {
			if len(wrote) == 1 && shards[0] != wrote[0] {
				r.abortParticipants(ctx, t) // nothing committed yet
			}
			if unreachable(err) {
				return nil, memberclient.Err(withLabel(errorReply(err), labelUnknownCommit))
			}
			return nil, err
		}
	}
	t.setState(txnCommitted)
	return okReply(), nil
}

func cmdAbortTransaction(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	op := sessionOf(ctx)
	if op == nil || op.txn == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "abortTransaction must be run within a transaction: it needs lsid, txnNumber and autocommit: false")
	}
	t := op.txn
	if t.recovering {
		// Abort where the token says the transaction ran; without one
		// there is nothing this router knows to abort.
		shards := recoveryShards(t.recovery)
		if len(shards) == 0 {
			return nil, mongoerr.New(mongoerr.NoSuchTransaction, "no known command has been sent by this router for transaction %d", t.number)
		}
		r.endOn(ctx, "abortTransaction", op, nil, shards)
		t.setState(txnAborted)
		return okReply(), nil
	}
	switch t.getState() {
	case txnCommitted:
		return nil, mongoerr.New(mongoerr.TransactionCommitted, "Transaction %d has been committed.", t.number)
	case txnCommitting:
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Transaction %d is being committed by its coordinator: its outcome is the coordinator's (retry commitTransaction to learn it)", t.number)
	case txnAborted:
		return okReply(), nil
	}
	if len(t.snapshotParticipants()) == 0 {
		t.setState(txnAborted)
		return nil, mongoerr.New(mongoerr.NoSuchTransaction, "no known command has been sent by this router for transaction %d", t.number)
	}
	for _, err := range r.abortParticipants(ctx, t) {
		if err != nil && codeOf(err) != int32(mongoerr.NoSuchTransaction) {
			return nil, err
		}
	}
	return okReply(), nil
}

// isTxnEnd reports whether a command ends a transaction.
func isTxnEnd(name string) bool { return name == "commitTransaction" || name == "abortTransaction" }

// coordinate sends coordinateCommitTransaction to coordinator (with the
// participants that wrote; none: only learn the outcome) and answers as
// mongos: ok; NoSuchTransaction with TransientTransactionError for an
// abort decision; UnknownTransactionCommitResult when the outcome is not
// known (the coordinator unreachable, stepping down, out of time).
func (r *Router) coordinate(ctx context.Context, op *opSession, wc bsoncore.Document, coordinator string, wrote, readOnly []string) (bsoncore.Document, error) {
	t := op.txn
	parts := bsoncore.NewArrayBuilder()
	for _, s := range wrote {
		parts.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("shardId", s).Build())
	}
	b := bsoncore.NewDocumentBuilder().AppendInt32("coordinateCommitTransaction", 1).
		AppendArray("participants", parts.Build()).
		AppendDocument("lsid", op.lsid).AppendInt64("txnNumber", op.txnNumber).AppendBoolean("autocommit", false)
	if wc != nil {
		b.AppendDocument("writeConcern", wc)
	}
	t.setState(txnCommitting)
	err := r.runOn(ctx, []string{coordinator}, b.AppendString("$db", "admin").Build())[0]
	if err != nil {
		code := codeOf(err)
		if code == int32(mongoerr.NoSuchTransaction) {
			t.setState(txnAborted)
			if len(readOnly) > 0 {
				r.endOn(ctx, "abortTransaction", op, nil, readOnly)
			}
			return nil, memberclient.Err(withLabel(errorReply(err), labelTransient))
		}
		return nil, memberclient.Err(withLabel(errorReply(err), labelUnknownCommit))
	}
	t.setState(txnCommitted)
	if len(readOnly) > 0 {
		r.endOn(ctx, "commitTransaction", op, wc, readOnly) // read only: their outcome changes nothing
	}
	return okReply(), nil
}
