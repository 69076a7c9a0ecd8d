package server_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/commands"
)

// startAuthServer runs a server with --auth (and test commands, so the
// matrix reaches every registered command).
func startAuthServer(t *testing.T) *testServer {
	t.Helper()
	srv, addr := startConfiguredServer(t, discard(), commands.Config{CairnVer: "test", Auth: true})
	if err := srv.env.ApplyStartupParameters([]string{"enableTestCommands=1"}); err != nil {
		t.Fatal(err)
	}
	return &testServer{addr: addr, env: srv.env}
}

// as connects as user (of database source) with mechanism mech.
func (s *testServer) as(t *testing.T, source, user, pwd, mech string) *mongo.Client {
	t.Helper()
	return s.client(t, options.Client().SetAuth(options.Credential{AuthMechanism: mech, AuthSource: source, Username: user, Password: pwd}))
}

func codeOf(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return 0
}

// runCmd runs cmd with the driver's own server selection timeout (30 s) as
// its deadline: under CI's load a fresh server's first hello was once later
// than the 10 s this had (TestAuthSessionUID's first createUser, session 8).
func runCmd(c *mongo.Client, db string, cmd bson.D) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Database(db).RunCommand(ctx, cmd).Err()
}

func TestAuthLocalhostExceptionAndSCRAM(t *testing.T) {
	s := startAuthServer(t)
	anon := s.client(t)
	if code := codeOf(runCmd(anon, "test", bson.D{{Key: "find", Value: "c"}})); code != 13 {
		t.Fatalf("find before any user: code %d, want 13", code)
	}
	// The localhost exception: the first user, and nothing else.
	root := bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "s3cret"}, {Key: "roles", Value: bson.A{"root"}}}
	if err := runCmd(anon, "admin", root); err != nil {
		t.Fatalf("first user over the localhost exception: %v", err)
	}
	second := bson.D{{Key: "createUser", Value: "two"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}
	if code := codeOf(runCmd(anon, "admin", second)); code != 13 {
		t.Fatalf("second user without authenticating: code %d, want 13", code)
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-1"} {
		c := s.as(t, "admin", "root", "s3cret", mech)
		if err := runCmd(c, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "m", Value: mech}}}}}); err != nil {
			t.Fatalf("%s: insert as root: %v", mech, err)
		}
		var st struct {
			AuthInfo struct {
				Users []struct{ User, DB string } `bson:"authenticatedUsers"`
				Roles []struct{ Role, DB string } `bson:"authenticatedUserRoles"`
			} `bson:"authInfo"`
		}
		if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "connectionStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if len(st.AuthInfo.Users) != 1 || st.AuthInfo.Users[0].User != "root" || len(st.AuthInfo.Roles) != 1 || st.AuthInfo.Roles[0].Role != "root" {
			t.Errorf("%s: connectionStatus %+v", mech, st.AuthInfo)
		}
		bad := s.as(t, "admin", "root", "wrong", mech)
		if code := codeOf(runCmd(bad, "admin", bson.D{{Key: "ping", Value: 1}})); code != 18 {
			t.Errorf("%s: wrong password: code %d, want 18 (AuthenticationFailed)", mech, code)
		}
	}
	// The stored document is MongoDB's shape, with no password in it.
	c := s.as(t, "admin", "root", "s3cret", "SCRAM-SHA-256")
	u, err := c.Database("admin").Collection("system.users").FindOne(context.Background(), bson.D{{Key: "_id", Value: "admin.root"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if u.Lookup("user").StringValue() != "root" || u.Lookup("db").StringValue() != "admin" ||
		u.Lookup("credentials", "SCRAM-SHA-256", "iterationCount").Int32() != 15000 ||
		u.Lookup("credentials", "SCRAM-SHA-1", "iterationCount").Int32() != 10000 ||
		len(u.Lookup("credentials", "SCRAM-SHA-256", "storedKey").StringValue()) != 44 || u.Lookup("pwd").Type != 0 {
		t.Errorf("admin.system.users document: %v", u)
	}
	// A new client authenticates against users stored before: and logout
	// ends it (on a direct connection, so the same socket runs both).
	direct := s.client(t, options.Client().SetDirect(true).SetMaxPoolSize(1).SetAuth(options.Credential{Username: "root", Password: "s3cret"}))
	if err := runCmd(direct, "admin", bson.D{{Key: "logout", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if code := codeOf(runCmd(direct, "test", bson.D{{Key: "find", Value: "c"}})); code != 13 {
		t.Errorf("find after logout: code %d, want 13", code)
	}
}

// matrixRole is the built-in role the matrix grants to run a command, and
// the database the command is sent to. Every registered command must be
// listed: a new command without an entry fails TestAuthMatrix.
type matrixRole struct {
	role, db string
	// "": a handshake command anyone runs; "any": any authenticated user.
}

var matrix = map[string]matrixRole{
	"abortTransaction": {"any", "admin"}, "commitTransaction": {"any", "admin"}, "endSessions": {"any", "admin"},
	"getMore": {"any", "test"}, "killCursors": {"any", "test"}, "killSessions": {"any", "admin"},
	"startSession": {"any", "admin"}, "refreshSessions": {"any", "admin"},
	"listCommands": {"any", "test"}, "whatsmyuri": {"any", "admin"},

	"hello": {"", "admin"}, "isMaster": {"", "admin"}, "ismaster": {"", "admin"}, "buildInfo": {"", "admin"},
	"buildinfo": {"", "admin"}, "ping": {"", "admin"}, "saslStart": {"", "admin"}, "saslContinue": {"", "admin"},
	"logout": {"", "admin"}, "connectionStatus": {"", "admin"}, "authenticate": {"", "admin"},

	"find": {"read", "test"}, "count": {"read", "test"}, "distinct": {"read", "test"}, "aggregate": {"read", "test"},
	"listIndexes": {"read", "test"}, "collStats": {"read", "test"}, "advise": {"read", "test"}, "dataSize": {"read", "test"}, "explain": {"read", "test"},
	"dbStats": {"read", "test"}, "dbstats": {"read", "test"}, "listCollections": {"read", "test"},

	"insert": {"readWrite", "test"}, "update": {"readWrite", "test"}, "delete": {"readWrite", "test"},
	"findAndModify": {"readWrite", "test"}, "findandmodify": {"readWrite", "test"}, "create": {"readWrite", "test"},
	"createIndexes": {"readWrite", "test"}, "drop": {"readWrite", "test"}, "dropIndexes": {"readWrite", "test"},
	"renameCollection": {"readWrite", "admin"}, "revertDocument": {"readWrite", "test"},

	"collMod": {"dbAdmin", "test"}, "compact": {"dbAdmin", "test"}, "validate": {"dbAdmin", "test"},
	"planCacheClear": {"dbAdmin", "test"}, "dropDatabase": {"dbAdmin", "test"},

	"createUser": {"userAdmin", "test"}, "updateUser": {"userAdmin", "test"}, "dropUser": {"userAdmin", "test"},
	"usersInfo": {"userAdmin", "test"}, "grantRolesToUser": {"userAdmin", "test"}, "revokeRolesFromUser": {"userAdmin", "test"},
	"dropAllUsersFromDatabase": {"userAdmin", "test"},
	"createRole":               {"userAdmin", "test"}, "updateRole": {"userAdmin", "test"}, "dropRole": {"userAdmin", "test"},
	"rolesInfo": {"userAdmin", "test"}, "grantPrivilegesToRole": {"userAdmin", "test"}, "revokePrivilegesFromRole": {"userAdmin", "test"},

	"currentOp": {"clusterMonitor", "admin"}, "getLog": {"clusterMonitor", "admin"}, "getCmdLineOpts": {"clusterMonitor", "admin"},
	"getParameter": {"clusterMonitor", "admin"}, "hostInfo": {"clusterMonitor", "admin"}, "serverStatus": {"clusterMonitor", "admin"},
	"listDatabases": {"clusterMonitor", "admin"},

	"shutdown": {"hostManager", "admin"}, "logRotate": {"hostManager", "admin"}, "fsync": {"hostManager", "admin"},
	"fsyncUnlock": {"hostManager", "admin"}, "createBackup": {"hostManager", "admin"},
	"killOp": {"hostManager", "admin"}, "setParameter": {"hostManager", "admin"}, "killAllSessions": {"hostManager", "admin"},
	"killAllSessionsByPattern": {"hostManager", "admin"},
	"configureFailPoint":       {"hostManager", "admin"}, "waitForFailPoint": {"hostManager", "admin"},
	"setFeatureCompatibilityVersion": {"clusterManager", "admin"},
	"setClusterParameter":            {"clusterManager", "admin"}, "getClusterParameter": {"clusterMonitor", "admin"},

	"convertToCapped": {"readWrite", "test"}, "cloneCollectionAsCapped": {"readWrite", "test"},
	"profile": {"dbAdmin", "test"},
	"top":     {"clusterMonitor", "admin"}, "getDiagnosticData": {"clusterMonitor", "admin"},
	"replSetGetConfig": {"clusterMonitor", "admin"}, "replSetGetStatus": {"clusterMonitor", "admin"},
	"replSetInitiate": {"clusterManager", "admin"}, "replSetReconfig": {"clusterManager", "admin"},
	"replSetStepDown": {"clusterManager", "admin"}, "replSetFreeze": {"clusterManager", "admin"},
	"_addShard":                      {"internal", "admin"},
	"_configsvrCommitChunkMigration": {"internal", "admin"},
	"_configsvrBalancerStatus":       {"internal", "admin"},
	"_historyInstall":                {"internal", "test"},
	"_historyPurge":                  {"internal", "test"},
	"_historyRead":                   {"internal", "test"},
	"_flushRoutingTableCacheUpdates": {"internal", "admin"},
	"_migrateClone":                  {"internal", "admin"},
	"_recvChunkAbort":                {"internal", "admin"},
	"_recvChunkCommit":               {"internal", "admin"},
	"_recvChunkReleaseCritSec":       {"internal", "admin"},
	"_recvChunkStart":                {"internal", "admin"},
	"_recvChunkStatus":               {"internal", "admin"},
	"_shardsvrChunkSizes":            {"internal", "admin"},
	"_shardsvrMoveRange":             {"internal", "admin"},
	"_shardsvrParticipantBlock":      {"internal", "admin"},
	"_transferMods":                  {"internal", "admin"},
	"coordinateCommitTransaction":    {"internal", "admin"},
	"prepareTransaction":             {"internal", "admin"},
}

// matrixBody is a command as the matrix sends it: its name and a
// collection (namespaces for the commands that take one), plus what makes
// the privilege check see the interesting case.
func matrixBody(name string) bson.D {
	switch name {
	case "dataSize":
		return bson.D{{Key: name, Value: "test.c"}}
	case "shutdown":
		// A bad timeoutSecs fails after the privilege check, so the
		// allowed case does not stop the matrix's server.
		return bson.D{{Key: name, Value: 1}, {Key: "timeoutSecs", Value: "soon"}}
	case "renameCollection":
		return bson.D{{Key: name, Value: "test.c"}, {Key: "to", Value: "test.d"}}
	case "createUser":
		return bson.D{{Key: name, Value: "made"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}
	case "updateUser":
		return bson.D{{Key: name, Value: "made"}, {Key: "pwd", Value: "y"}}
	case "createRole":
		return bson.D{{Key: name, Value: "made_r"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}
	case "updateRole":
		return bson.D{{Key: name, Value: "made_r"}, {Key: "roles", Value: bson.A{}}}
	case "grantPrivilegesToRole", "revokePrivilegesFromRole":
		return bson.D{{Key: name, Value: "made_r"}, {Key: "privileges", Value: bson.A{}}}
	case "grantRolesToUser", "revokeRolesFromUser":
		return bson.D{{Key: name, Value: "made"}, {Key: "roles", Value: bson.A{"read"}}}
	}
	return bson.D{{Key: name, Value: "c"}}
}

// TestAuthMatrix is the matrix: every registered command sent by an
// unauthenticated client, by a user with read on another database, and by
// a user with the role the command needs: refused, refused, allowed (the
// handshake commands run for all three; the session and cursor commands for
// any authenticated user). "Allowed" means not Unauthorized: the command
// may still fail on its arguments.
func TestAuthMatrix(t *testing.T) {
	s := startAuthServer(t)
	anon := s.client(t)
	if err := runCmd(anon, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}); err != nil {
		t.Fatal(err)
	}
	root := s.as(t, "admin", "root", "pw", "")
	users := map[string]*mongo.Client{}
	user := func(role, db string) *mongo.Client {
		key := role + "@" + db
		if c, ok := users[key]; ok {
			return c
		}
		name := "u_" + role + "_" + db
		if err := runCmd(root, "admin", bson.D{{Key: "createUser", Value: name}, {Key: "pwd", Value: "pw"},
			{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: role}, {Key: "db", Value: db}}}}}); err != nil {
			t.Fatal(err)
		}
		users[key] = s.as(t, "admin", name, "pw", "")
		return users[key]
	}
	other := user("read", "other")

	surface, _ := commands.Surface()
	var names []string
	for n := range surface {
		names = append(names, n)
	}
	sort.Strings(names)
	// logout last: it ends the pooled connections' authentication.
	if i := slices.Index(names, "logout"); i >= 0 {
		names = append(slices.Delete(names, i, i+1), "logout")
	}
	for _, name := range names {
		m, ok := matrix[name]
		if !ok {
			t.Errorf("%s: no entry in the auth matrix: give the command a privilege rule and a role here", name)
			continue
		}
		if err := runCmd(root, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}); err != nil {
			t.Fatal(err)
		}
		body := matrixBody(name)
		var allowed *mongo.Client
		wantAnon, wantOther := true, true // refused?
		switch m.role {
		case "":
			allowed, wantAnon, wantOther = root, false, false
		case "any":
			allowed, wantOther = other, false
		case "internal":
			// Members' commands: no built-in role but __system (which
			// Cairn does not grant) has the internal action.
			allowed = nil
		default:
			roleDB := "test"
			if m.db == "admin" && m.role != "readWrite" {
				roleDB = "admin"
			}
			allowed = user(m.role, roleDB)
		}
		for _, tc := range []struct {
			who     string
			c       *mongo.Client
			refused bool
		}{{"unauthenticated", anon, wantAnon}, {"read@other", other, wantOther}, {m.role + " user", allowed, false}} {
			if tc.c == nil {
				continue
			}
			code := codeOf(runCmd(tc.c, m.db, body))
			if (code == 13) != tc.refused {
				t.Errorf("%s sent by %s: code %d, want refused=%v", name, tc.who, code, tc.refused)
			}
		}
	}
}

// TestStartupWarningExposed: listening beyond loopback without --auth is
// warned of, in getLog startupWarnings (what mongosh prints at connect).
func TestStartupWarningExposed(t *testing.T) {
	for _, tc := range []struct {
		bind  string
		auth  bool
		lines int
	}{{"0.0.0.0", false, 1}, {"127.0.0.1,10.1.2.3", false, 1}, {"0.0.0.0", true, 0}, {"127.0.0.1,::1,localhost", false, 0}, {"", false, 0}} {
		srv, addr := startConfiguredServer(t, discard(), commands.Config{CairnVer: "test", BindIP: tc.bind, Auth: tc.auth})
		s := &testServer{addr: addr, env: srv.env}
		var c *mongo.Client
		if tc.auth {
			c = s.client(t)
			if err := runCmd(c, "admin", bson.D{{Key: "createUser", Value: "r"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}); err != nil {
				t.Fatal(err)
			}
			c = s.as(t, "admin", "r", "pw", "")
		} else {
			c = s.client(t)
		}
		var r struct {
			Log []string `bson:"log"`
		}
		if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "getLog", Value: "startupWarnings"}}).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if len(r.Log) != tc.lines {
			t.Errorf("bind %q auth %v: startupWarnings %q, want %d lines", tc.bind, tc.auth, r.Log, tc.lines)
		}
	}
}

// TestAuthCursorOwner: under --auth only the user who opened a cursor may
// continue or kill it, even one with the privileges to read the collection.
func TestAuthCursorOwner(t *testing.T) {
	s := startAuthServer(t)
	anon := s.client(t)
	if err := runCmd(anon, "admin", bson.D{{Key: "createUser", Value: "ann"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}); err != nil {
		t.Fatal(err)
	}
	ann := s.as(t, "admin", "ann", "pw", "")
	if err := runCmd(ann, "admin", bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "test"}}}}}); err != nil {
		t.Fatal(err)
	}
	bob := s.as(t, "admin", "bob", "pw", "")
	if err := runCmd(ann, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}, bson.D{}, bson.D{}, bson.D{}}}}); err != nil {
		t.Fatal(err)
	}
	open := func() int64 {
		raw, err := ann.Database("test").RunCommand(context.Background(), bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw.Lookup("cursor", "id").Int64()
	}
	id := open()
	if code := codeOf(runCmd(bob, "test", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})); code != 13 {
		t.Errorf("getMore of another user's cursor: code %d, want 13", code)
	}
	raw, err := bob.Database("test").RunCommand(context.Background(), bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Raw()
	if killed, _ := raw.Lookup("cursorsKilled").Array().Values(); err != nil || len(killed) != 0 {
		t.Errorf("killCursors of another user's cursor: %v %v", raw, err)
	}
	// (context.Background: a deadline would make the driver send maxTimeMS.)
	if err := ann.Database("test").RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}}).Err(); err != nil {
		t.Errorf("getMore by the cursor's owner: %v", err)
	}
}

// TestAuthSessionUID: an lsid's uid is the client's own, unless the client
// may impersonate (MongoDB's impersonate action: __system, as a router
// forwards its clients' sessions): then the session is the named user's —
// a retryable insert sent under bob's uid by an impersonating client is
// the same statement bob's own retry names, and runs once.
func TestAuthSessionUID(t *testing.T) {
	s := startAuthServer(t)
	anon := s.client(t)
	if err := runCmd(anon, "admin", bson.D{{Key: "createUser", Value: "ann"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}); err != nil {
		t.Fatal(err)
	}
	ann := s.as(t, "admin", "ann", "pw", "")
	for _, cmd := range []bson.D{
		{{Key: "createRole", Value: "imp"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"impersonate"}}}}}, {Key: "roles", Value: bson.A{}}},
		{{Key: "createUser", Value: "imp"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"imp", bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "test"}}}}},
		{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "test"}}}}},
	} {
		if err := runCmd(ann, "admin", cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	// The driver puts its own lsid on every command: these go over raw
	// connections authenticated by SCRAM.
	id := bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}
	bobUID := sha256.Sum256([]byte("bob@admin"))
	insert := func(lsid bson.D) bson.D {
		return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}},
			{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "test"}}
	}
	asBob := bson.D{{Key: "id", Value: id}, {Key: "uid", Value: bson.Binary{Data: bobUID[:]}}}
	code := func(reply bsoncore.Document) int32 { c, _ := reply.Lookup("code").AsInt32OK(); return c }
	if c := code(roundTrip(t, scramConn(t, s, "ann", "pw"), command(t, insert(asBob)))); c != 13 {
		t.Errorf("root naming bob's uid: code %d, want 13 (root may not impersonate)", c)
	}
	if reply := roundTrip(t, scramConn(t, s, "imp", "pw"), command(t, insert(asBob))); code(reply) != 0 {
		t.Fatalf("an impersonating client naming bob's uid: %s", reply)
	}
	if reply := roundTrip(t, scramConn(t, s, "bob", "pw"), command(t, insert(bson.D{{Key: "id", Value: id}}))); code(reply) != 0 {
		t.Fatalf("bob's retry of the same statement: %s", reply)
	}
	n, err := ann.Database("test").Collection("c").CountDocuments(context.Background(), bson.D{})
	if err != nil || n != 1 {
		t.Errorf("%d documents (%v), want 1: the impersonated statement and bob's retry are one", n, err)
	}
}

// scramConn is a raw connection to s authenticated as user@admin with
// SCRAM-SHA-256 (for commands the driver would add its own fields to).
func scramConn(t *testing.T, s *testServer, user, pwd string) net.Conn {
	t.Helper()
	nc := dial(t, s)
	client, err := scram.SHA256.NewClient(user, pwd, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	payload, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	cmd := bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(payload)}}, {Key: "$db", Value: "admin"}}
	for range 4 {
		reply := roundTrip(t, nc, command(t, cmd))
		if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("SCRAM as %s: %s", user, reply)
		}
		if done, _ := reply.Lookup("done").BooleanOK(); done {
			return nc
		}
		_, data := reply.Lookup("payload").Binary()
		if payload, err = conv.Step(string(data)); err != nil {
			t.Fatal(err)
		}
		cid, _ := reply.Lookup("conversationId").AsInt64OK()
		cmd = bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: int32(cid)},
			{Key: "payload", Value: bson.Binary{Data: []byte(payload)}}, {Key: "$db", Value: "admin"}}
	}
	t.Fatalf("SCRAM as %s did not finish", user)
	return nil
}
