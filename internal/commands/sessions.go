package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/session"
)

// This file holds logical sessions at the command boundary (package
// session owns the table and the retryable-write records): the lsid and
// txnNumber of each command, the session commands (startSession,
// refreshSessions, endSessions, killSessions, killAllSessions,
// killAllSessionsByPattern), and what a killed session's cursors become.

// cmdSession is the logical session of the command in progress on a
// connection: set by checkSession, checked out by useSession, released by
// Run when the command ends.
type cmdSession struct {
	has   bool
	id    session.ID
	hasTx bool
	txn   int64
	use   *session.Use
	retry *session.Retry
	// inTxn: the command runs in a multi-document transaction (autocommit:
	// false), started by it when start; etx is that transaction, for a
	// statement (transactions.go).
	inTxn, start bool
	etx          *engine.Txn
	// level is the readConcern level the command starting a transaction
	// named ("" for none), kept in the transaction (useTransaction).
	level string
	// at is its readConcern's atClusterTime (level snapshot), 0 for none:
	// the transaction reads at it (engine.BeginAt).
	at hlc.Timestamp
	// stmtIDs are the statements' ids a router gave (checkStmtIDs).
	stmtIDs []int32
}

// retryableWrites are the commands a txnNumber outside a transaction makes
// retryable.
var retryableWrites = map[string]bool{"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true}

// checkSession reads the session fields of a command (MongoDB's
// initializeOperationSessionInfo): an lsid must be a valid session id; a
// txnNumber needs an lsid and, outside a transaction, a retryable write
// command; transactions (autocommit, startTransaction) are
// transactions.go's (a standalone refuses them with IllegalOperation, as
// mongod does).
func checkSession(s *Session, name string, g *generic) error {
	s.sess = cmdSession{}
	if g.lsid.Type != 0 {
		d, ok := g.lsid.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid' is the wrong type '%s', expected type 'object'", typeName(g.lsid.Type))
		}
		id, err := session.Parse(d, session.UIDOfUser(s.userKey()), s.mayImpersonate())
		if err != nil {
			return err
		}
		s.sess.has, s.sess.id = true, id
	}
	if g.txnNumber.Type != 0 {
		if !s.sess.has {
			return mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
		}
		n, ok := g.txnNumber.Int64OK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'", typeName(g.txnNumber.Type))
		}
		if g.autocommit.Type != 0 || g.startTransaction.Type != 0 {
			s.sess.hasTx, s.sess.txn = true, n
			return checkTransaction(s, name, g) // transactions.go
		}
		if !retryableWrites[name] {
			return mongoerr.New(mongoerr.NotARetryableWriteCommand, "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and %s is not a retryable write command.", name)
		}
		s.sess.hasTx, s.sess.txn = true, n
	}
	if g.autocommit.Type != 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified")
	}
	if g.startTransaction.Type != 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "'startTransaction' field requires 'autocommit' field to also be specified")
	}
	return nil
}

// useSession checks the command's session out of the table for the
// command's duration (the session's commands run one at a time) and, for
// a retryable write, begins its transaction number. Run calls
// releaseSession when the command is done.
func useSession(ctx context.Context, s *Session) error {
	if !s.sess.has {
		return nil
	}
	if s.interrupt == nil {
		s.interrupt = s.Interrupt // made once: a method value allocates
	}
	use, err := s.Env.Sessions.Checkout(ctx, s.sess.id, s.userKey(), s.interrupt)
	if err != nil {
		return err
	}
	s.sess.use = use
	if s.sess.inTxn {
		return nil // bound after afterClusterTime (run, useTransaction)
	}
	if s.sess.hasTx {
		r, err := use.BeginRetry(s.sess.txn)
		if err != nil {
			return err
		}
		r.UseStmtIDs(s.sess.stmtIDs)
		s.sess.retry = r
	}
	return nil
}

func releaseSession(s *Session) {
	if s.sess.use != nil {
		s.sess.use.Release()
	}
	s.sess = cmdSession{}
}

// cmdStartSession makes a new session for the connection's user.
func cmdStartSession(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	id := s.Env.Sessions.Start(s.userKey())
	idDoc := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, id.UUID[:]).Build()
	return NewReply(dst).Doc("id", idDoc).Int32("timeoutMinutes", LogicalSessionTimeoutMinutes).Finish(), nil
}

// sessionList reads a session command's array of lsids, each owned by the
// connection's user.
func sessionList(s *Session, req *Request) ([]session.ID, error) {
	v := req.First()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'array'", req.Name, typeName(v.Type))
	}
	vals, _ := arr.Values()
	if len(vals) > maxSessionsPerCommand {
		return nil, mongoerr.New(mongoerr.BadValue, "%s may only name %d sessions", req.Name, maxSessionsPerCommand)
	}
	uid := session.UIDOfUser(s.userKey())
	ids := make([]session.ID, 0, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' must hold session ids (objects), found %s", req.Name, typeName(el.Type))
		}
		id, err := session.Parse(d, uid, s.mayImpersonate())
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// maxSessionsPerCommand is MongoDB's limit on the lsids one endSessions or
// refreshSessions names (10,000).
const maxSessionsPerCommand = 10_000

func cmdRefreshSessions(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	ids, err := sessionList(s, req)
	if err != nil {
		return nil, err
	}
	s.Env.Sessions.Refresh(ids, s.userKey())
	return OK(dst), nil
}

func cmdEndSessions(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	ids, err := sessionList(s, req)
	if err != nil {
		return nil, err
	}
	s.Env.Sessions.End(ids)
	return OK(dst), nil
}

// cmdKillSessions kills the named sessions of the connection's user, or
// all of its sessions for an empty list.
func cmdKillSessions(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	ids, err := sessionList(s, req)
	if err != nil {
		return nil, err
	}
	uid := session.UIDOfUser(s.userKey())
	named := make(map[session.ID]bool, len(ids))
	for _, id := range ids {
		named[id] = true
	}
	s.Env.Sessions.Kill(func(id session.ID, _ string) bool {
		return id.UID == uid && (len(named) == 0 || named[id])
	}, opctx.ErrKilled)
	return OK(dst), nil
}

// killPattern is one killAllSessionsByPattern pattern: any field given
// must match (MongoDB's KillAllSessionsByPattern).
type killPattern struct {
	uuid  *[16]byte
	uid   *[32]byte
	users map[[32]byte]bool
}

func (p killPattern) match(id session.ID) bool {
	return (p.uuid == nil || *p.uuid == id.UUID) && (p.uid == nil || *p.uid == id.UID) && (p.users == nil || p.users[id.UID])
}

// cmdKillAllSessions kills every session of the listed users ({user, db}),
// or every session for an empty list.
func cmdKillAllSessions(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	v := req.First()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'killAllSessions' is the wrong type '%s', expected type 'array'", typeName(v.Type))
	}
	users, err := userUIDs("killAllSessions", arr)
	if err != nil {
		return nil, err
	}
	var pats []killPattern
	if len(users) > 0 {
		pats = []killPattern{{users: users}}
	}
	killMatching(s, pats)
	return OK(dst), nil
}

// cmdKillAllSessionsByPattern kills every session that matches one of the
// patterns ({lsid}, {uid}, {users}), or every session for an empty list.
func cmdKillAllSessionsByPattern(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	v := req.First()
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'killAllSessionsByPattern' is the wrong type '%s', expected type 'array'", typeName(v.Type))
	}
	vals, _ := arr.Values()
	pats := make([]killPattern, 0, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'killAllSessionsByPattern' must hold patterns (objects), found %s", typeName(el.Type))
		}
		var p killPattern
		fields, _ := d.Elements()
		for _, f := range fields {
			switch f.Key() {
			case "lsid":
				ld, ok := f.Value().DocumentOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'KillAllSessionsByPattern.lsid' is the wrong type '%s', expected type 'object'", typeName(f.Value().Type))
				}
				sub, data, ok := ld.Lookup("id").BinaryOK()
				if !ok || sub != 4 || len(data) != 16 {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'KillAllSessionsByPattern.lsid.id' must be a UUID")
				}
				u := [16]byte(data)
				p.uuid = &u
				if _, udata, ok := ld.Lookup("uid").BinaryOK(); ok && len(udata) == 32 {
					uid := [32]byte(udata)
					p.uid = &uid
				}
			case "uid":
				_, data, ok := f.Value().BinaryOK()
				if !ok || len(data) != 32 {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'KillAllSessionsByPattern.uid' must be a 32-byte binData")
				}
				uid := [32]byte(data)
				p.uid = &uid
			case "users":
				ua, ok := f.Value().ArrayOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'KillAllSessionsByPattern.users' is the wrong type '%s', expected type 'array'", typeName(f.Value().Type))
				}
				users, err := userUIDs("KillAllSessionsByPattern.users", ua)
				if err != nil {
					return nil, err
				}
				p.users = users
			case "roles":
				return nil, mongoerr.New(mongoerr.InvalidOptions, "killAllSessionsByPattern's roles pattern is not supported yet; name the users or uids")
			default:
				return nil, mongoerr.New(mongoerr.UnknownField, "BSON field 'KillAllSessionsByPattern.%s' is an unknown field.", f.Key())
			}
		}
		pats = append(pats, p)
	}
	killMatching(s, pats)
	return OK(dst), nil
}

// killMatching kills the sessions matching any of pats (all for none).
func killMatching(s *Session, pats []killPattern) {
	s.Env.Sessions.Kill(func(id session.ID, _ string) bool {
		if len(pats) == 0 {
			return true
		}
		for _, p := range pats {
			if p.match(id) {
				return true
			}
		}
		return false
	}, opctx.ErrKilled)
}

// userUIDs reads [{user, db}, …] into the uids of those users.
func userUIDs(field string, arr bsoncore.Array) (map[[32]byte]bool, error) {
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(map[[32]byte]bool, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' must hold {user, db} objects, found %s", field, typeName(el.Type))
		}
		user, ok1 := d.Lookup("user").StringValueOK()
		db, ok2 := d.Lookup("db").StringValueOK()
		if !ok1 || !ok2 {
			return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field '%s' entries need string fields user and db", field)
		}
		out[session.UIDOf(user+"@"+db)] = true
	}
	return out, nil
}

// closeSessionCursors closes the cursors opened in killed sessions (the
// session table's OnKill).
func (c *Cursors) closeSessionCursors(killed map[session.ID]struct{}) {
	c.mu.Lock()
	var dead []*Cursor
	for id, cur := range c.open {
		if !cur.hasLSID {
			continue
		}
		if _, ok := killed[cur.lsid]; ok {
			dead = append(dead, cur)
			delete(c.open, id)
		}
	}
	c.mu.Unlock()
	for _, cur := range dead {
		_ = cur.src.Close()
	}
}

// checkCursorSession answers a getMore whose session differs from the
// cursor's as MongoDB does (50736, 50737, 50738).
func checkCursorSession(s *Session, cur *Cursor) error {
	switch {
	case s.sess.has && !cur.hasLSID:
		return mongoerr.New(mongoerr.GetMoreNoSessionCursor, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", cur.ID, s.sess.id)
	case !s.sess.has && cur.hasLSID:
		return mongoerr.New(mongoerr.GetMoreNoLSID, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", cur.ID, cur.lsid)
	case s.sess.has && cur.lsid != s.sess.id:
		return mongoerr.New(mongoerr.CursorInUse, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", cur.ID, cur.lsid, s.sess.id)
	}
	return nil
}

// mayImpersonate reports whether the client may name another user's uid in
// an lsid (MongoDB's impersonate action on the cluster: __system, as a
// router forwards its clients' sessions; anyone without access control).
func (s *Session) mayImpersonate() bool {
	acc := s.Env.Access
	if acc == nil || !acc.Enabled {
		return true
	}
	return s.auth.user != nil && s.privileges().Allows(auth.Cluster, "impersonate")
}
