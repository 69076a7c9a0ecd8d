package router

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestRouterAccessControl: a router with a key reads the cluster's users
// from the config servers (an in-process standalone here): before
// authentication only the handshake runs; hello names a user's
// mechanisms; the localhost exception makes the first user on the config
// servers; a SASL conversation's id does not carry to another connection.
func TestRouterAccessControl(t *testing.T) {
	ctx := context.Background()
	key := []byte("c2VjcmV0IGtleQ==")
	r, err := New(Options{ConfigDB: startKeyedConfigServer(t, key), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	conn := func(remote string) *connAuth { return &connAuth{remote: remote} }
	run := func(a *connAuth, db string, cmd bson.D) bsoncore.Document {
		body := marshal(append(cmd, bson.E{Key: "$db", Value: db}))
		req := &request{name: cmd[0].Key, db: db, body: body, auth: a}
		return r.run(ctx, req)
	}
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
