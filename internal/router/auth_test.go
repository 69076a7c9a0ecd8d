package router

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// keyedRouter is a router with a key whose config server (an in-process
// standalone) holds the same key.
func keyedRouter(tb testing.TB) *Router {
	tb.Helper()
	key := []byte("c2VjcmV0IGtleQ==")
	r, err := New(Options{ConfigDB: startKeyedConfigServer(tb, key), Key: key})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// runAs runs cmd on db as the connection a.
func runAs(r *Router, a *connAuth, db string, cmd bson.D) bsoncore.Document {
	return r.run(context.Background(), &request{name: cmd[0].Key, db: db, auth: a, body: marshal(append(cmd, bson.E{Key: "$db", Value: db}))})
}

// TestRouterAccessControl: a router with a key reads the cluster's users
// from the config servers (an in-process standalone here): before
// authentication only the handshake runs; hello names a user's
// mechanisms; the localhost exception makes the first user on the config
// servers; a SASL conversation's id does not carry to another connection.
func TestRouterAccessControl(t *testing.T) {
	r := keyedRouter(t)
	conn := func(remote string) *connAuth { return &connAuth{remote: remote} }
	run := func(a *connAuth, db string, cmd bson.D) bsoncore.Document { return runAs(r, a, db, cmd) }
	code := func(reply bsoncore.Document) mongoerr.Code { return mongoerr.CodeOf(memberclient.Err(reply)) }

	local, remote := conn("127.0.0.1:5000"), conn("10.1.2.3:5000")
	if c := code(run(local, "admin", bson.D{{Key: "hello", Value: 1}})); c != 0 {
		t.Fatalf("hello before authentication: code %d", c)
	}
	if c := code(run(local, "test", bson.D{{Key: "find", Value: "c"}})); c != mongoerr.Unauthorized {
		t.Fatalf("find before authentication: code %d, want 13", c)
	}
	createRoot := bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}
	if c := code(run(remote, "admin", createRoot)); c != mongoerr.Unauthorized {
		t.Fatalf("the first user from another host: code %d, want 13", c)
	}
	if reply := run(local, "admin", createRoot); code(reply) != 0 {
		t.Fatalf("the first user from loopback: %s", reply)
	}
	if c := code(run(local, "admin", bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}})); c != mongoerr.Unauthorized {
		t.Fatalf("a second user without authentication: code %d, want 13", c)
	}
	hello := run(local, "admin", bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.root"}})
	mechs, _ := hello.Lookup("saslSupportedMechs").ArrayOK()
	if vals, _ := mechs.Values(); len(vals) != 2 {
		t.Fatalf("saslSupportedMechs of root: %s", hello)
	}
	if c := code(run(remote, "admin", bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: bson.Binary{}}})); c != mongoerr.ProtocolError {
		t.Fatalf("saslContinue without a conversation: code %d, want 17", c)
	}
	if c := code(run(remote, "admin", bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "PLAIN"}, {Key: "payload", Value: bson.Binary{}}})); c != mongoerr.MechanismUnavailable {
		t.Fatalf("saslStart PLAIN: code %d, want 334", c)
	}
}

// BenchmarkAuthorize is the router's access check of a find by a
// readWrite user: parsing the command and checking its privileges.
func BenchmarkAuthorize(b *testing.B) {
	ctx := context.Background()
	r := keyedRouter(b)
	a := &connAuth{remote: "127.0.0.1:1"}
	reply := runAs(r, a, "app", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	if err := memberclient.Err(reply); err != nil {
		b.Fatal(err)
	}
	users, err := r.userStore(ctx, true)
	if err != nil {
		b.Fatal(err)
	}
	a.user, _ = users.Lookup("app", "u")
	req := &request{name: "find", db: "app", auth: a, body: marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 7}}}, {Key: "$db", Value: "app"}})}
	if err := r.authorize(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.authorize(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRouterAuthMatrix: every command of the router, sent by an
// unauthenticated client (not on loopback), by a user with read on another
// database, and by root: refused (13) but the handshake, refused (13) but
// the handshake and a user's own cursors and sessions, and never refused
// for root.
func TestRouterAuthMatrix(t *testing.T) {
	ctx := context.Background()
	r := keyedRouter(t)
	run := func(a *connAuth, db string, cmd bson.D) bsoncore.Document { return runAs(r, a, db, cmd) }
	// root through the localhost exception, then reader as root.
	local := &connAuth{remote: "127.0.0.1:1"}
	if err := memberclient.Err(run(local, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}})); err != nil {
		t.Fatal(err)
	}
	users, _ := r.userStore(ctx, true)
	rootUser, _ := users.Lookup("admin", "root")
	local.user = rootUser
	if err := memberclient.Err(run(local, "admin", bson.D{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "other"}}}}})); err != nil {
		t.Fatal(err)
	}
	reader, ok := users.Lookup("admin", "reader")
	if !ok {
		t.Fatal("reader, made through the router, is not among the router's users")
	}
	pre := map[string]bool{"hello": true, "isMaster": true, "ismaster": true, "ping": true, "buildInfo": true, "buildinfo": true,
		"saslStart": true, "saslContinue": true, "logout": true, "connectionStatus": true, "authenticate": true}
	anyUser := map[string]bool{"getMore": true, "killCursors": true, "endSessions": true, "whatsmyuri": true, "getLastError": true,
		// a user's own sessions and transactions (privileges.go, as mongod)
		"startSession": true, "refreshSessions": true, "killSessions": true, "commitTransaction": true, "abortTransaction": true}
	for name := range handlers {
		if name == "logout" {
			continue // it would log the next rows' users out
		}
		db := "app"
		cmd := bson.D{{Key: name, Value: "c"}}
		if strings.Contains(name, "hard") || strings.Contains(name, "alancer") || strings.Contains(name, "Zone") || name == "split" ||
			name == "mergeChunks" || strings.HasPrefix(name, "move") || name == "refineCollectionShardKey" || name == "flushRouterConfig" ||
			name == "listDatabases" || name == "getParameter" || name == "getCmdLineOpts" || name == "setAllowMigrations" {
			db, cmd = "admin", bson.D{{Key: name, Value: "app.c"}}
		}
		if name == "updateUser" { // it needs what it changes
			cmd = append(cmd, bson.E{Key: "pwd", Value: "x"})
		}
		for _, row := range []struct {
			who     string
			a       *connAuth
			refused bool
		}{
			{"nobody", &connAuth{remote: "10.0.0.1:1"}, !pre[name]},
			{"read on other", &connAuth{remote: "10.0.0.1:1", user: reader}, !pre[name] && !anyUser[name]},
			{"root", &connAuth{remote: "10.0.0.1:1", user: rootUser}, false},
		} {
			reply := run(row.a, db, cmd)
			got := mongoerr.CodeOf(memberclient.Err(reply)) == mongoerr.Unauthorized
			if got != row.refused {
				t.Errorf("%s by %s: %s, want refused %v", name, row.who, reply, row.refused)
			}
		}
	}
}

// TestRouterSCRAM: a whole SCRAM-SHA-256 conversation at a router without
// a key (clients may authenticate, nothing is enforced, as a mongod without
// --auth): the user made through the router on the config servers proves
// its password, connectionStatus names it, a wrong password is 18.
func TestRouterSCRAM(t *testing.T) {
	r, err := New(Options{ConfigDB: startConfigServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a := &connAuth{remote: "10.0.0.1:1"}
	if err := memberclient.Err(runAs(r, a, "app", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"read"}}})); err != nil {
		t.Fatal(err)
	}
	login := func(a *connAuth, password string) error { return scramLogin(t, r, a, "app", "u", password) }
	if err := login(&connAuth{remote: "10.0.0.1:2"}, "nope"); mongoerr.CodeOf(err) != mongoerr.AuthenticationFailed {
		t.Fatalf("a wrong password: %v, want 18", err)
	}
	if err := login(a, "pw"); err != nil {
		t.Fatal(err)
	}
	status := runAs(r, a, "admin", bson.D{{Key: "connectionStatus", Value: 1}})
	if u, _ := status.Lookup("authInfo", "authenticatedUsers", "0", "user").StringValueOK(); u != "u" {
		t.Fatalf("connectionStatus after the conversation: %s", status)
	}
}

// scramLogin runs a SCRAM-SHA-256 conversation for user@db with password
// on connection a of r and returns the server's error, if any.
func scramLogin(t *testing.T, r *Router, a *connAuth, db, user, password string) error {
	t.Helper()
	client, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	msg, _ := conv.Step("")
	reply := runAs(r, a, db, bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte(msg)}}})
	for {
		if err := memberclient.Err(reply); err != nil {
			return err
		}
		_, data, _ := reply.Lookup("payload").BinaryOK()
		if done, _ := reply.Lookup("done").BooleanOK(); done {
			return nil
		}
		if msg, err = conv.Step(string(data)); err != nil {
			t.Fatal(err)
		}
		reply = runAs(r, a, db, bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: reply.Lookup("conversationId").Int32()},
			{Key: "payload", Value: bson.Binary{Data: []byte(msg)}}})
	}
}

// TestRouterAudit: a router with an audit log records, as mongos, its
// clients' authentications (failed with 18, then succeeded), a command its
// access control refuses (authCheck, 13), and the user and DDL commands it
// runs for them, each with the client's address and, once authenticated,
// user and roles — never a password.
func TestRouterAudit(t *testing.T) {
	key := []byte("c2VjcmV0IGtleQ==")
	path := filepath.Join(t.TempDir(), "audit.json")
	log, err := audit.Open(audit.Options{Destination: audit.DestFile, Path: path, Local: "127.0.0.1:27017"})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	r, err := New(Options{ConfigDB: startKeyedConfigServer(t, key), Key: key, Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	local := &connAuth{remote: "127.0.0.1:5000"}
	if err := memberclient.Err(runAs(r, local, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "s3cret"}, {Key: "roles", Value: bson.A{"root"}}})); err != nil {
		t.Fatal(err)
	}
	remote := &connAuth{remote: "10.0.0.9:6000"}
	if c := mongoerr.CodeOf(memberclient.Err(runAs(r, remote, "app", bson.D{{Key: "find", Value: "c"}}))); c != mongoerr.Unauthorized {
		t.Fatalf("find before authentication: code %d", c)
	}
	if err := scramLogin(t, r, remote, "admin", "root", "wrong"); mongoerr.CodeOf(err) != mongoerr.AuthenticationFailed {
		t.Fatalf("wrong password: %v", err)
	}
	if err := scramLogin(t, r, remote, "admin", "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	// Refused by the config server (no shards yet) or not: the event
	// carries the outcome either way.
	runAs(r, remote, "app", bson.D{{Key: "create", Value: "c"}})

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "wrong") {
		t.Errorf("the audit log holds a password:\n%s", raw)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev struct {
			AType  string `json:"atype"`
			Remote struct {
				IP string `json:"ip"`
			} `json:"remote"`
			Users []struct {
				User string `json:"user"`
			} `json:"users"`
			Param  map[string]any `json:"param"`
			Result int            `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		user := "-"
		if len(ev.Users) > 0 {
			user = ev.Users[0].User
		}
		got = append(got, fmt.Sprintf("%s %s %s %v %v", ev.AType, ev.Remote.IP, user, ev.Result, ev.Param["user"] != nil || ev.Param["ns"] != nil))
	}
	want := []string{
		"createUser 127.0.0.1 - 0 true",
		"authCheck 10.0.0.9 - 13 true",
		"authenticate 10.0.0.9 - 18 true",
		"authenticate 10.0.0.9 root 0 true",
		"createCollection 10.0.0.9 root",
	}
	if len(got) != len(want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d: %q, want %q…", i, got[i], want[i])
		}
	}
}

// BenchmarkRunAccess is the router's command path (parse, check, a
// handler that answers at once: buildInfo) without and with access
// control, for the ratio the check adds to a command; the find it would
// route costs far more than either.
func BenchmarkRunAccess(b *testing.B) {
	keyed := keyedRouter(b)
	users, err := keyed.userStore(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	sys, _ := users.Lookup("local", "__system")
	open, err := New(Options{ConfigDB: "cfg/127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	defer open.Close()
	body := marshal(bson.D{{Key: "buildInfo", Value: 1}, {Key: "$db", Value: "admin"}})
	for _, bc := range []struct {
		name string
		r    *Router
		a    *connAuth
	}{{"open", open, &connAuth{}}, {"keyFile", keyed, &connAuth{remote: "127.0.0.1:1", user: sys}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if reply := bc.r.run(context.Background(), &request{name: "buildInfo", db: "admin", body: body, auth: bc.a}); memberclient.Err(reply) != nil {
					b.Fatal(memberclient.Err(reply))
				}
			}
		})
	}
}
