package router

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// This file holds logical sessions at the router, as mongos keeps them:
// the session fields of a client's command (lsid, txnNumber, autocommit,
// startTransaction), which travel with the command to the shards it
// reaches (opSession, toShardSeq), the router's table of sessions and
// their transactions (transactions.go), and startSession, refreshSessions,
// endSessions and killSessions.

// sessionTimeout is the logical session timeout (hello's
// logicalSessionTimeoutMinutes): a session unused for that long is
// forgotten, its open transaction aborted.
const sessionTimeout = 30 * time.Minute

// retryableWrites are the commands a txnNumber outside a transaction makes
// retryable writes.
var retryableWrites = map[string]bool{"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true}

// sessionCommands are the commands whose session fields the router passes
// on to the shards they reach; another command's lsid only keeps its
// session alive at the router (the router runs it, or sends it without
// the client's session, as mongos does its DDL).
var sessionCommands = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "count": true, "distinct": true, "aggregate": true,
	"explain": true, "insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
	"commitTransaction": true, "abortTransaction": true,
}

// opSession is the session a command runs in: its lsid as the client sent
// it, the transaction number of a retryable write, or the transaction the
// command is a statement of. It travels in the command's context
// (withSession) to every shard the command reaches.
type opSession struct {
	lsid      bsoncore.Document
	key       sessionKey
	txnNumber int64
	retryable bool       // a retryable write: txnNumber without autocommit
	txn       *routerTxn // a statement of this transaction (transactions.go)
}

type sessionCtxKey struct{}

func withSession(ctx context.Context, op *opSession) context.Context {
	return context.WithValue(ctx, sessionCtxKey{}, op)
}

// sessionOf is the session of the command ctx belongs to, nil for none.
func sessionOf(ctx context.Context) *opSession {
	op, _ := ctx.Value(sessionCtxKey{}).(*opSession)
	return op
}

// sessionKey names a session at the router: its lsid's id and uid (the
// SHA-256 of its user, "name@db"; of "" without access control), as
// MongoDB's LogicalSessionId: two users' sessions of the same id are two
// sessions. The lsid the shards get names the uid (the router reaches them
// as __system, which may: impersonate), so a shard's session is the
// client's user's too.
type sessionKey struct {
	id  [16]byte
	uid [32]byte
}

// uidOf is the uid of a's user (session.UIDOfUser: computed once per
// user, not per command).
func uidOf(a *connAuth) [32]byte { return session.UIDOfUser(a.userKey()) }

// routerSession is the router's record of one session.
type routerSession struct {
	lastUse time.Time
	txn     *routerTxn // the newest transaction started through this router
	// lsid is the session's lsid as the shards get it (sessionKey.lsid),
	// made once with the record and never changed: every command of the
	// session sends it.
	lsid bsoncore.Document
}

// sessions is the router's session table.
type sessions struct {
	mu sync.Mutex
	m  map[sessionKey]*routerSession
}

// touch returns the session named key, made when new, as used now.
func (t *sessions) touch(key sessionKey) *routerSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[sessionKey]*routerSession{}
	}
	s := t.m[key]
	if s == nil {
		lsid := key.lsid()
		s = &routerSession{lsid: lsid[:len(lsid):len(lsid)]} // shared: an append copies
		t.m[key] = s
	}
	s.lastUse = time.Now()
	return s
}

// remove forgets the sessions keys names and returns their open
// transactions.
func (t *sessions) remove(keys []sessionKey) []*routerTxn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var open []*routerTxn
	for _, k := range keys {
		if s := t.m[k]; s != nil {
			if s.txn != nil {
				open = append(open, s.txn)
			}
			delete(t.m, k)
		}
	}
	return open
}

// keysOf lists the sessions of the user whose uid is uid.
func (t *sessions) keysOf(uid [32]byte) []sessionKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sessionKey
	for k := range t.m {
		if k.uid == uid {
			out = append(out, k)
		}
	}
	return out
}

// expired forgets the sessions unused since before and returns their
// transactions.
func (t *sessions) expired(before time.Time) []*routerTxn {
	t.mu.Lock()
	defer t.mu.Unlock()
	var open []*routerTxn
	for k, s := range t.m {
		if s.lastUse.Before(before) {
			if s.txn != nil {
				open = append(open, s.txn)
			}
			delete(t.m, k)
		}
	}
	return open
}

// parseLSID reads an lsid of a client whose user has uid user: its id is
// a UUID, and a uid it names must be its user's (Unauthorized otherwise,
// as mongod: a router's client may not impersonate). The lsid returned,
// for the shards, names the uid.
func parseLSID(v bsoncore.Value, user [32]byte) (bsoncore.Document, sessionKey, error) {
	key, err := parseLSIDKey(v, user)
	if err != nil {
		return nil, key, err
	}
	// A new document: the request's buffer is the connection's, reused by
	// its next message, and the session outlives the command (cursors,
	// transactions).
	return key.lsid(), key, nil
}

// parseLSIDKey is parseLSID without the lsid document: the caller takes
// the session record's (routerSession.lsid).
func parseLSIDKey(v bsoncore.Value, user [32]byte) (sessionKey, error) {
	key := sessionKey{uid: user}
	d, ok := v.DocumentOK()
	if !ok {
		return key, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid' is the wrong type '%s', expected type 'object'", v.Type)
	}
	if len(d) < 5 {
		return key, mongoerr.New(mongoerr.InvalidBSON, "invalid lsid: not a well-formed document")
	}
	hasID := false
	rest := d[4 : len(d)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return key, mongoerr.New(mongoerr.InvalidBSON, "invalid lsid: not a well-formed document")
		}
		rest = r
		v := el.Value()
		switch string(el.KeyBytes()) {
		case "id":
			sub, data, ok := v.BinaryOK()
			if !ok || sub != 4 || len(data) != 16 {
				return key, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid.id' is the wrong type '%s', expected type 'UUID'", v.Type)
			}
			copy(key.id[:], data)
			hasID = true
		case "uid":
			_, data, ok := v.BinaryOK()
			if !ok || len(data) != 32 {
				return key, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid.uid' is the wrong type '%s', expected type 'binData'", v.Type)
			}
			if [32]byte(data) != user {
				return key, mongoerr.New(mongoerr.Unauthorized, "Only a session's own user may name its uid")
			}
		default:
			return key, mongoerr.New(mongoerr.UnknownField, "BSON field 'OperationSessionInfo.lsid.%s' is an unknown field.", el.Key())
		}
	}
	if !hasID {
		return key, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field")
	}
	return key, nil
}

// lsid is the session's lsid as the shards get it: {id, uid}.
func (k sessionKey) lsid() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendBinary("id", 4, k.id[:]).AppendBinary("uid", 0, k.uid[:]).Build()
}

// beginSession reads a command's session fields (MongoDB's
// initializeOperationSessionInfo): the session it names is used now; a
// txnNumber needs an lsid and, outside a transaction, a retryable write;
// autocommit: false binds it to a transaction (transactions.go). It
// returns nil for a command the shards should not see the session of.
func (r *Router) beginSession(req *request) (*opSession, error) {
	lsidV, hasLSID := req.arg("lsid")
	txnV, hasTxn := req.arg("txnNumber")
	_, hasAC := req.arg("autocommit")
	_, hasStart := req.arg("startTransaction")
	if !hasLSID {
		switch {
		case hasTxn:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
		case hasAC || hasStart:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' and 'startTransaction' need a session ID and a transaction number")
		}
		return nil, nil
	}
	key, err := parseLSIDKey(lsidV, uidOf(req.auth))
	if err != nil {
		return nil, err
	}
	sess := r.sessions.touch(key)
	op := &opSession{lsid: sess.lsid, key: key}
	if !hasTxn {
		switch {
		case hasAC:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified")
		case hasStart:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'startTransaction' field requires 'autocommit' field to also be specified")
		}
	} else {
		n, ok := txnV.Int64OK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'", txnV.Type)
		}
		if n < 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "TxnNumber cannot be negative")
		}
		op.txnNumber = n
		if hasAC || hasStart {
			if op.txn, err = r.bindTransaction(req, sess, sess.lsid, n); err != nil { // transactions.go
				return nil, err
			}
		} else if !retryableWrites[req.name] {
			return nil, mongoerr.New(mongoerr.NotARetryableWriteCommand, "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and %s is not a retryable write command.", req.name)
		} else {
			op.retryable = true
		}
	}
	if !sessionCommands[req.name] {
		return nil, nil
	}
	return op, nil
}

// appendSession appends a command's session fields for shard to dst (an
// open document): the lsid; a retryable write's txnNumber (the caller
// gives the statements' ids in the client's batch, stmtIds); a
// transaction's txnNumber, autocommit: false and, on the shard's first
// statement, startTransaction with the transaction's readConcern (and a
// snapshot transaction's read time as $clusterTime).
func (op *opSession) appendSession(dst []byte, shard, cmd string) ([]byte, error) {
	dst = bsoncore.AppendDocumentElement(dst, "lsid", op.lsid)
	switch {
	case op.txn != nil:
		first, err := op.txn.join(shard, retryableWrites[cmd])
		if err != nil {
			return dst, err
		}
		dst = bsoncore.AppendInt64Element(dst, "txnNumber", op.txnNumber)
		if first {
			dst = bsoncore.AppendBooleanElement(dst, "startTransaction", true)
			if op.txn.readConcern != nil {
				dst = bsoncore.AppendDocumentElement(dst, "readConcern", op.txn.readConcern)
			}
			if op.txn.chosen {
				dst = appendGossip(dst, op.txn.at) // the shard's clock reaches the read time (snapshot.go)
			}
		}
		dst = bsoncore.AppendBooleanElement(dst, "autocommit", false)
	case op.retryable && retryableWrites[cmd]:
		dst = bsoncore.AppendInt64Element(dst, "txnNumber", op.txnNumber)
	}
	return dst, nil
}

// appendStmtIDs appends to dst (an open document) the stmtIds array of
// statements at the client's positions index, with no builder: a
// retryable write appends it to every statement batch it sends.
func appendStmtIDs(dst []byte, index []int) []byte {
	start, dst := bsoncore.AppendArrayElementStart(dst, "stmtIds")
	var key [20]byte
	for k, i := range index {
		dst = bsoncore.AppendInt32Element(dst, string(strconv.AppendInt(key[:0], int64(k), 10)), int32(i))
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, start)
	return dst
}

// sessionList reads a session command's list of lsids.
func sessionList(req *request) ([]sessionKey, error) {
	v := req.body.Index(0).Value()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'array'", req.name, v.Type)
	}
	vals, _ := arr.Values()
	keys := make([]sessionKey, 0, len(vals))
	for _, v := range vals {
		_, k, err := parseLSID(v, uidOf(req.auth))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func cmdStartSession(_ context.Context, r *Router, req *request) (bsoncore.Document, error) {
	key := sessionKey{uid: uidOf(req.auth)}
	_, _ = rand.Read(key.id[:])
	key.id[6] = key.id[6]&0x0f | 0x40
	key.id[8] = key.id[8]&0x3f | 0x80
	r.sessions.touch(key)
	id := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, key.id[:]).Build()
	return bsoncore.NewDocumentBuilder().AppendDocument("id", id).AppendInt32("timeoutMinutes", int32(sessionTimeout/time.Minute)).
		AppendDouble("ok", 1).Build(), nil
}

func cmdRefreshSessions(_ context.Context, r *Router, req *request) (bsoncore.Document, error) {
	keys, err := sessionList(req)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		r.sessions.touch(k)
	}
	return okReply(), nil
}

// cmdEndSessions forgets the sessions and aborts their open transactions
// on their participants (the shards' own sessions expire by themselves),
// in the background, as reapSessions does: a driver ends its sessions
// when it disconnects, and a shard that is down must not hold it.
func cmdEndSessions(_ context.Context, r *Router, req *request) (bsoncore.Document, error) {
	keys, err := sessionList(req)
	if err != nil {
		return nil, err
	}
	if open := r.sessions.remove(keys); len(open) > 0 {
		go func() {
			for _, t := range open {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r.abortParticipants(ctx, t)
				cancel()
			}
		}()
	}
	return okReply(), nil
}

// cmdKillSessions kills the named sessions (every session for an empty
// list) as mongos does: their transactions are aborted, the router's
// cursors opened in them closed, and every shard kills them too (their
// operations, cursors and transactions there).
func cmdKillSessions(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	keys, err := sessionList(req)
	if err != nil {
		return nil, err
	}
	// The shards get the sessions with their uids named (the router is
	// __system there); an empty list is every session of the user (every
	// session without access control), as mongod's killSessions: [].
	var cmd bsoncore.Document
	mine := len(keys) == 0 && req.auth != nil && req.auth.user != nil
	switch {
	case mine:
		keys = r.sessions.keysOf(uidOf(req.auth))
		who := bsoncore.NewDocumentBuilder().AppendString("user", req.auth.user.Name).AppendString("db", req.auth.user.DB).Build()
		cmd = bsoncore.NewDocumentBuilder().AppendArray("killAllSessions", bsoncore.NewArrayBuilder().AppendDocument(who).Build()).
			AppendString("$db", "admin").Build()
	default:
		list := bsoncore.NewArrayBuilder()
		for _, k := range keys {
			list.AppendDocument(k.lsid())
		}
		cmd = bsoncore.NewDocumentBuilder().AppendArray("killSessions", list.Build()).AppendString("$db", "admin").Build()
	}
	var open []*routerTxn
	if len(keys) == 0 && !mine {
		open = r.sessions.expired(time.Now().Add(time.Hour)) // all of them
	} else {
		open = r.sessions.remove(keys)
	}
	for _, t := range open {
		r.abortParticipants(ctx, t)
	}
	if !mine || len(keys) > 0 {
		r.cursors.killSessions(keys)
	}
	shards, err := r.cache.shardIDs(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(shards))
	for i, s := range shards {
		ids[i] = s.id
	}
	if err := errors.Join(r.runOn(ctx, ids, cmd)...); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// reapSessions forgets the sessions unused for sessionTimeout and aborts
// their transactions.
func (r *Router) reapSessions(now time.Time) {
	for _, t := range r.sessions.expired(now.Add(-sessionTimeout)) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r.abortParticipants(ctx, t)
		cancel()
	}
}

// Labels a reply's error may carry: drivers retry a retryable write on
// RetryableWriteError, a whole transaction on TransientTransactionError
// and a commit on UnknownTransactionCommitResult.
const (
	labelRetryableWrite = "RetryableWriteError"
	labelTransient      = "TransientTransactionError"
	labelUnknownCommit  = "UnknownTransactionCommitResult"
)

// withLabel returns an error reply carrying label among its errorLabels.
func withLabel(reply bsoncore.Document, label string) bsoncore.Document {
	var labels []string
	if arr, ok := reply.Lookup("errorLabels").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			s, _ := v.StringValueOK()
			if s == label {
				return reply
			}
			labels = append(labels, s)
		}
	}
	labels = append(labels, label)
	a := bsoncore.NewArrayBuilder()
	for _, l := range labels {
		a.AppendString(l)
	}
	return rewrite(reply, map[string]bool{"errorLabels": true}, func(b *bsoncore.DocumentBuilder) { b.AppendArray("errorLabels", a.Build()) })
}

// retriableCode is MongoDB's RetriableError category (the retryable
// writes specification's list), the router's own failures to reach a
// shard's primary included.
func retriableCode(c int32) bool {
	switch mongoerr.Code(c) {
	case mongoerr.HostUnreachable, mongoerr.HostNotFound, mongoerr.NetworkTimeout,
		mongoerr.ShutdownInProgress, mongoerr.PrimarySteppedDown, mongoerr.ExceededTimeLimit,
		mongoerr.SocketException, mongoerr.NotWritablePrimary, mongoerr.InterruptedAtShutdown,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.NotPrimaryNoSecondaryOk,
		mongoerr.NotPrimaryOrSecondary, mongoerr.FailedToSatisfyReadPreference:
		return true
	}
	return false
}

// unreachable reports whether err is the router's failure to reach a
// shard (not a shard's answer): a network error or a retriable code of
// the router's own.
func unreachable(err error) bool {
	var re *memberclient.ReplyError
	if errors.As(err, &re) {
		return false
	}
	if _, ok := mongoerr.As(err); !ok {
		return !errors.Is(err, context.Canceled)
	}
	return retriableCode(codeOf(err))
}

// codeOf is the MongoDB code of err, a member's (memberclient.ReplyError
// unwraps to it) or the router's own.
func codeOf(err error) int32 { return int32(mongoerr.CodeOf(err)) }
