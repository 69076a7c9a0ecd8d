package commands

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// Where users and roles live, as in MongoDB.
var (
	usersNS = engine.Namespace{DB: "admin", Coll: "system.users"}
	rolesNS = engine.Namespace{DB: "admin", Coll: "system.roles"}
)

// Access is the server's access control: whether it is enforced (--auth)
// and the users, which exist and can be managed either way (as in mongod,
// where users made without --auth apply once it is on).
type Access struct {
	Enabled bool
	Users   *auth.Store
}

// sessionAuth is one connection's authentication: the user it proved (nil:
// none), that user's privileges as of the store's generation gen, and the
// SASL conversation in progress.
type sessionAuth struct {
	user  *auth.User
	privs auth.Privileges
	gen   uint64
	conv  *auth.Conversation
	// convID numbers conversations; skipEmpty is saslStart's
	// options.skipEmptyExchange, finished that the proof was accepted and
	// only the client's empty last message is awaited.
	convID    int32
	skipEmpty bool
	finished  bool
	// advance caches whether privs allow advanceClusterTime, for
	// advanceUser as of advanceGen (clustertime.go).
	advance     bool
	advanceUser *auth.User
	advanceGen  uint64
}

// usersBacking stores users (or roles) in ns through the engine.
type usersBacking struct {
	env *Env
	ns  engine.Namespace
}

func (b usersBacking) Load() ([]bson.Raw, error) {
	if b.env.Engine.Catalog().Collection(b.ns.DB, b.ns.Coll) == nil {
		return nil, nil
	}
	// A whole-collection read: the planner needs a filter, the empty one.
	all, err := query.Parse(bsoncore.NewDocumentBuilder().Build())
	if err != nil {
		return nil, err
	}
	src, err := b.env.Exec.Open(context.Background(), exec.Selection{NS: b.ns, Filter: all, RawFilter: bsoncore.NewDocumentBuilder().Build()}, exec.Run)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var out []bson.Raw
	for {
		d, err := src.Next()
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, bson.Raw(append([]byte(nil), d...)))
	}
}

func (b usersBacking) Put(id string, doc bson.Raw) error {
	key := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, id)}
	matched, err := b.env.Engine.Replace(b.ns, key, bsoncore.Document(doc))
	if err != nil || matched {
		return err
	}
	_, err = b.env.Engine.Insert(b.ns, []bsoncore.Document{bsoncore.Document(doc)}, true)
	return err
}

func (b usersBacking) Delete(id string) error {
	key := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, id)}
	_, err := b.env.Engine.Delete(b.ns, key)
	return err
}

// isLoopback reports whether a connection's remote address is on this host
// (the localhost exception's condition).
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// privileges are the session user's privileges, resolved again when the
// users changed since (a dropped user keeps none).
func (s *Session) privileges() auth.Privileges {
	a := &s.auth
	store := s.Env.Access.Users
	if g := store.Gen(); g != a.gen {
		a.gen = g
		a.privs = nil
		if u, ok := store.Lookup(a.user.DB, a.user.Name); ok {
			a.user = u
			a.privs, _ = store.Resolve(u.Roles)
		}
	}
	return a.privs
}

// authorize is the one access check, made by Run before a command's fields
// are parsed (Authorize says what it allows).
func authorize(s *Session, req *Request) error {
	acc := s.Env.Access
	if acc == nil || !acc.Enabled {
		return nil
	}
	return Authorize(Caller{User: s.auth.user, Privileges: s.privileges, Remote: s.Remote, NoUsers: acc.Users.Empty}, req)
}

// Caller is who runs a command, for Authorize: the user it proved (nil:
// none), that user's privileges (asked only when needed), its address
// (the localhost exception's condition), and whether no user or role
// exists yet.
type Caller struct {
	User       *auth.User
	Privileges func() auth.Privileges
	Remote     string
	NoUsers    func() bool
}

// Authorize is the access check of a process that enforces access control
// (a server with --auth, a router with --keyFile): an unauthenticated
// client runs only the handshake commands (and, from loopback while no
// user or role exists, createUser and createRole: the localhost
// exception); an authenticated one runs what its roles' privileges allow
// (privileges.go says which actions on which resource each command needs).
func Authorize(c Caller, req *Request) error {
	rule, ok := privilegeRules[req.Name]
	if !ok {
		rule, ok = routerRules[req.Name]
	}
	if !ok {
		// Fail closed: a command nobody gave a rule runs for nobody.
		return mongoerr.New(mongoerr.Unauthorized, "command %s has no privilege rule", req.Name)
	}
	if rule.pre {
		return nil
	}
	if c.User == nil {
		if (req.Name == "createUser" || req.Name == "createRole") && c.NoUsers() && isLoopback(c.Remote) {
			return nil // the localhost exception
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", req.Name)
	}
	if rule.anyUser {
		return nil
	}
	privs := c.Privileges()
	for _, n := range rule.needs(nil, req) {
		if !privs.AllowsAll(n.res, n.actions...) {
			// The command is not echoed: createUser's carries a password.
			return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command { %s: %s }", req.DB, req.Name, req.First())
		}
	}
	return nil
}

// HasPrivilegeRule reports whether Authorize knows command name (a router
// checks that each of its commands has one).
func HasPrivilegeRule(name string) bool {
	_, ok := privilegeRules[name]
	if !ok {
		_, ok = routerRules[name]
	}
	return ok
}

// InternalSession is a session for the server's own commands (a shard's
// migrations, a config server's commits): it runs as the internal user
// __system@local when a keyFile is in use, so access control lets it do
// anything, as MongoDB's internal client does.
func InternalSession(env *Env) *Session {
	s := &Session{Env: env, Remote: "internal"}
	if env.Access != nil {
		if u, ok := env.Access.Users.Lookup(auth.SystemDB, auth.SystemUser); ok {
			s.auth.user = u
		}
	}
	return s
}

// emptyBacking stands in when admin.system.users cannot be read: no user
// can authenticate, and nothing is written.
type emptyBacking struct{}

func (emptyBacking) Load() ([]bson.Raw, error) { return nil, nil }
func (emptyBacking) Put(string, bson.Raw) error {
	return mongoerr.New(mongoerr.InternalError, "admin.system.users could not be read at startup")
}
func (emptyBacking) Delete(string) error {
	return mongoerr.New(mongoerr.InternalError, "admin.system.users could not be read at startup")
}

// startupWarnings warns, as mongod does, of a server that listens beyond
// this host without access control: anyone who reaches the port can read,
// change and drop everything. The lines are logged and kept for getLog in
// mongod's JSON log format (which mongosh prints at connect).
func startupWarnings(cfg Config, log *slog.Logger) []string {
	if cfg.Auth || loopbackOnly(cfg.BindIP) {
		return nil
	}
	msg := "Access control is not enabled for the database and the server listens on " + cfg.BindIP +
		": anyone who can reach it can read, change and drop all data. Start it with --auth (and create a user), or bind to 127.0.0.1 with --bind_ip"
	log.Warn(msg, "tags", []string{"startupWarnings"})
	line, _ := json.Marshal(map[string]any{
		"t": map[string]string{"$date": time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")}, "s": "W", "c": "CONTROL",
		"id": 22120, "ctx": "initandlisten", "msg": msg, "tags": []string{"startupWarnings"},
	})
	return []string{string(line)}
}

// loopbackOnly reports whether every address of a --bind_ip list is on
// this host ("" is the default, 127.0.0.1).
func loopbackOnly(bindIP string) bool {
	for _, a := range strings.Split(bindIP, ",") {
		a = strings.TrimSpace(a)
		if a == "" || a == "localhost" {
			continue
		}
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// userKey is the session user's "db.name", "" before authentication.
func (s *Session) userKey() string {
	if s.auth.user == nil {
		return ""
	}
	return s.auth.user.Key()
}

// ownCursor marks cur as opened by the session's user and in the
// command's logical session; every Cursors.Register is followed by it.
func (s *Session) ownCursor(cur *Cursor) {
	cur.owner = s.userKey()
	cur.lsid, cur.hasLSID = s.sess.id, s.sess.has
	cur.inTxn = s.sess.etx != nil
}

// ownsCursor reports whether the session may continue or kill cur: with
// --auth, only the user who opened it may (MongoDB's rule; killAnyCursor
// is not consulted yet).
func (s *Session) ownsCursor(cur *Cursor) bool {
	acc := s.Env.Access
	return acc == nil || !acc.Enabled || cur.owner == s.userKey()
}
