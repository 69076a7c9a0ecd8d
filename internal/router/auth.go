package router

import (
	"context"
	"crypto/x509"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Access control at the router (with a keyFile, as mongos). The cluster's
// users and roles live on the config servers (admin.system.users and
// admin.system.roles there); the router reads them into an auth.Store,
// authenticates clients against it with SCRAM, and checks every command
// against the same privilege rules a server uses (commands.Authorize)
// before routing it. The router itself reaches every member as __system
// (memberclient), so its check is the one that counts. User and role
// commands go to the config servers' primary, which stores them; the
// router then reads the users again. Other routers see a change at their
// next authentication or within pingInterval (pingLoop reads the users
// again), as mongos's user cache (userCacheInvalidationIntervalSecs, 30 s).

// connAuth is one client connection's authentication: the user it proved
// (nil: none), its privileges as of the store's generation gen, and the
// SASL conversation in progress. A connection runs one command at a time.
type connAuth struct {
	remote string
	// auditConn names the connection in audit events (made at its first).
	auditConn [16]byte
	// clientCert is the client's TLS certificate when it verified against
	// --tlsCAFile: only such a one names a MONGODB-X509 user.
	clientCert *x509.Certificate
	user       *auth.User
	privs      auth.Privileges
	gen        uint64
	conv       *auth.Conversation
	convID     int32
	// skipEmpty is saslStart's options.skipEmptyExchange; finished, that
	// the proof was accepted and only the client's empty last message is
	// awaited.
	skipEmpty, finished bool
}

// userKey is the connection's user as "db.name" ("" before
// authentication), the owner of the cursors it opens.
func (a *connAuth) userKey() string {
	if a == nil || a.user == nil {
		return ""
	}
	return a.user.Key()
}

// access is the router's access control: enforced with a key. Without
// one, clients may still authenticate (as with a mongod without --auth),
// and nothing is checked.
type access struct {
	on  bool
	key []byte
	mu  sync.Mutex
	// users is opened at first need (the router contacts nobody before).
	users *auth.Store
}

// userStore returns the users, read again from the config servers when
// fresh is set (an authentication, the localhost exception's test).
func (r *Router) userStore(ctx context.Context, fresh bool) (*auth.Store, error) {
	a := &r.access
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.users == nil {
		users, err := auth.Open(configBacking{r, "system.users"}, configBacking{r, "system.roles"})
		if err != nil {
			return nil, err
		}
		if a.key != nil {
			sys, err := auth.NewSystemUser(a.key)
			if err != nil {
				return nil, err
			}
			users.SetSystemUser(sys)
		}
		a.users = users
		return users, nil
	}
	if fresh {
		if _, err := a.users.Reload(); err != nil {
			// The config servers are away (a failover): the users read
			// last still authenticate, as mongos's cache does.
			r.log.Warn("could not read the users from the config servers; using those read last", "err", err)
		}
	}
	return a.users, nil
}

// reloadUsers reads the users again (after a user command, and every
// pingInterval); a failure keeps the ones read last.
func (r *Router) reloadUsers(ctx context.Context) {
	if !r.access.on || r.closing.Load() {
		return
	}
	if _, err := r.userStore(ctx, true); err != nil {
		r.log.Warn("could not read the users from the config servers", "err", err)
	}
}

// configBacking reads admin.<coll> on the config servers. The router
// never writes through it: user commands run on the config servers.
type configBacking struct {
	r    *Router
	coll string
}

func (b configBacking) Load() ([]bson.Raw, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	docs, err := b.r.configFindIn(ctx, "admin", b.coll, nil, nil)
	if mongoerr.CodeOf(err) == mongoerr.NamespaceNotFound {
		return nil, nil
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		out[i] = bson.Raw(d)
	}
	return out, err
}

func (b configBacking) Put(string, bson.Raw) error {
	return mongoerr.New(mongoerr.IllegalOperation, "the router stores no users: user commands run on the config servers")
}

func (b configBacking) Delete(string) error { return b.Put("", nil) }

// authorize is the access check of every command (commands.Authorize's
// rules), made before the command runs.
func (r *Router) authorize(ctx context.Context, req *request) error {
	creq, err := commands.NewRequest(req.body, req.db, req.seqs)
	if err != nil {
		return err
	}
	a := req.auth
	return commands.Authorize(commands.Caller{
		User:       a.user,
		Privileges: func() auth.Privileges { return r.privileges(ctx, a) },
		Remote:     a.remote,
		NoUsers: func() bool {
			users, err := r.userStore(ctx, true)
			return err == nil && users.Empty()
		},
	}, creq)
}

// privileges are a's user's privileges, resolved again when the users
// changed since (a dropped user keeps none).
func (r *Router) privileges(ctx context.Context, a *connAuth) auth.Privileges {
	users, err := r.userStore(ctx, false)
	if err != nil {
		return nil
	}
	if g := users.Gen(); g != a.gen {
		a.gen, a.privs = g, nil
		if u, ok := users.Lookup(a.user.DB, a.user.Name); ok {
			a.user = u
			a.privs, _ = users.Resolve(u.Roles)
		}
	}
	return a.privs
}

var errAuthFailed = mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")

func cmdSaslStart(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	payload, err := commands.SASLPayload(req.body)
	if err != nil {
		return nil, err
	}
	skip, _ := req.body.Lookup("options", "skipEmptyExchange").BooleanOK()
	return r.saslStart(ctx, req, req.db, req.str("mechanism"), payload, skip)
}

// saslStart begins a conversation for db's users and answers its first
// step (saslStart, and hello's speculativeAuthenticate).
func (r *Router) saslStart(ctx context.Context, req *request, db, mech string, payload []byte, skipEmpty bool) (bsoncore.Document, error) {
	users, err := r.userStore(ctx, true)
	if err != nil {
		return nil, mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed: the users could not be read from the config servers: %v", err)
	}
	conv, err := users.Start(mech, db)
	if errors.Is(err, auth.ErrUnknownMechanism) {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	if err != nil {
		return nil, err
	}
	a := req.auth
	a.convID++
	a.conv, a.finished, a.skipEmpty = conv, false, skipEmpty
	return r.saslStep(req, users, payload)
}

// speculativeAuth answers hello's speculativeAuthenticate (a saslStart in
// the handshake); a failure leaves the field out and the driver
// authenticates the ordinary way, where it sees the error.
func (r *Router) speculativeAuth(ctx context.Context, req *request) bsoncore.Document {
	d, ok := req.body.Lookup("speculativeAuthenticate").DocumentOK()
	if !ok {
		return nil
	}
	mech, _ := d.Lookup("mechanism").StringValueOK()
	db, _ := d.Lookup("db").StringValueOK()
	if mech == commands.MechanismX509 {
		user, _ := d.Lookup("user").StringValueOK()
		reply, err := r.authenticateX509(ctx, req, db, user)
		if err != nil {
			return nil
		}
		return reply
	}
	payload, err := commands.SASLPayload(d)
	if err != nil || mech == "" || db == "" {
		return nil
	}
	reply, err := r.saslStart(ctx, req, db, mech, payload, true)
	if err != nil {
		return nil
	}
	// saslStart's reply without its ok, as mongod's.
	b := bsoncore.NewDocumentBuilder()
	elems, _ := reply.Elements()
	for _, el := range elems {
		if el.Key() != "ok" {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

func cmdSaslContinue(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	id, _ := req.body.Lookup("conversationId").AsInt64OK()
	payload, err := commands.SASLPayload(req.body)
	if err != nil {
		return nil, err
	}
	a := req.auth
	// A conversation belongs to its connection.
	if a.conv == nil || id != int64(a.convID) {
		return nil, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	users, err := r.userStore(ctx, false)
	if err != nil {
		return nil, err
	}
	return r.saslStep(req, users, payload)
}

func (r *Router) saslStep(req *request, users *auth.Store, payload []byte) (bsoncore.Document, error) {
	a := req.auth
	if a.finished { // the client's empty last message
		a.conv, a.finished = nil, false
		return okReply("conversationId", a.convID, "done", true, "payload", bson.Binary{Data: []byte{}}), nil
	}
	out, done, err := a.conv.Step(payload)
	if err != nil {
		r.auditAuthenticate(req, a.conv.Username(), a.conv.DB(), a.conv.Mechanism, errAuthFailed)
		a.conv = nil
		r.log.Info("authentication failed", "conn", req.conn, "remote", a.remote)
		return nil, errAuthFailed
	}
	if done {
		u := a.conv.User()
		a.user, a.gen = u, users.Gen()
		a.privs, _ = users.Resolve(u.Roles)
		r.log.Info("authenticated", "conn", req.conn, "user", u.Name, "db", u.DB, "mechanism", a.conv.Mechanism)
		r.auditAuthenticate(req, u.Name, u.DB, a.conv.Mechanism, nil)
		if a.skipEmpty {
			a.conv = nil
		} else {
			a.finished, done = true, false
		}
	}
	return okReply("conversationId", a.convID, "done", done, "payload", bson.Binary{Data: out}), nil
}

// cmdAuthenticate serves authenticate, which modern MongoDB keeps for
// MONGODB-X509 only: the client's verified TLS certificate names a user of
// $external on the config servers (as mongos).
func cmdAuthenticate(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	mech := req.str("mechanism")
	if mech != commands.MechanismX509 {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	reply, err := r.authenticateX509(ctx, req, req.db, req.str("user"))
	if err != nil {
		return nil, err
	}
	return okReply("dbname", reply.Lookup("dbname").StringValue(), "user", reply.Lookup("user").StringValue()), nil
}

// authenticateX509 authenticates req's connection as its certificate's
// subject and returns {dbname, user}.
func (r *Router) authenticateX509(ctx context.Context, req *request, db, user string) (reply bsoncore.Document, err error) {
	a := req.auth
	subject, err := commands.X509Subject(db, user, a.clientCert)
	if subject != "" {
		user = subject
	}
	defer func() { r.auditAuthenticate(req, user, db, commands.MechanismX509, err) }()
	if err != nil {
		return nil, err
	}
	users, err := r.userStore(ctx, true)
	if err != nil {
		return nil, mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed: the users could not be read from the config servers: %v", err)
	}
	u, ok := users.Lookup("$external", subject)
	if !ok {
		r.log.Info("authentication failed", "conn", req.conn, "remote", a.remote, "mechanism", commands.MechanismX509, "subject", subject)
		return nil, commands.X509UnknownUser(subject)
	}
	a.conv = nil
	a.user, a.gen = u, users.Gen()
	a.privs, _ = users.Resolve(u.Roles)
	r.log.Info("authenticated", "conn", req.conn, "user", u.Name, "db", u.DB, "mechanism", commands.MechanismX509)
	return bsoncore.NewDocumentBuilder().AppendString("dbname", "$external").AppendString("user", subject).Build(), nil
}

func cmdLogout(_ context.Context, _ *Router, req *request) (bsoncore.Document, error) {
	*req.auth = connAuth{remote: req.auth.remote, convID: req.auth.convID, auditConn: req.auth.auditConn, clientCert: req.auth.clientCert}
	return okReply(), nil
}

// cmdConnectionStatus reports the connection's user and roles and, with
// showPrivileges, their privileges.
func cmdConnectionStatus(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	show, _ := req.body.Lookup("showPrivileges").BooleanOK()
	users, roles := bson.A{}, bson.A{}
	var privs auth.Privileges
	if a := req.auth; a.user != nil {
		privs = r.privileges(ctx, a)
		users = append(users, bson.D{{Key: "user", Value: a.user.Name}, {Key: "db", Value: a.user.DB}})
		roles = auth.RolesDoc(a.user.Roles)
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: roles}}
	if show {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: auth.PrivilegesDoc(privs)})
	}
	return okReply("authInfo", info), nil
}

// userCommands are the user and role commands: they run on the config
// servers' primary, where the cluster's users live.
var userCommands = []string{"createUser", "updateUser", "dropUser", "dropAllUsersFromDatabase", "usersInfo",
	"grantRolesToUser", "revokeRolesFromUser", "createRole", "updateRole", "dropRole", "rolesInfo",
	"grantPrivilegesToRole", "revokePrivilegesFromRole"}

// toConfigServers runs a user or role command on the config servers'
// primary, as the router (__system), and reads the users again.
func toConfigServers(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	cmd := rewrite(req.body, nil, func(b *bsoncore.DocumentBuilder) { b.AppendString("$db", req.db) })
	reply, err := r.config.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if req.name != "usersInfo" && req.name != "rolesInfo" {
		r.reloadUsers(ctx)
	}
	return reply, nil
}
