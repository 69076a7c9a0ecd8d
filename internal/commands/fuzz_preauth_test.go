package commands

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/engine"
)

// FuzzPreAuth sends arbitrary messages to an unauthenticated connection of
// a server with --auth and a user, before and in the middle of a SASL
// conversation. What must hold whatever arrives: no panic, a valid reply
// with ok, no command but the handshake's succeeds, and the connection
// never becomes authenticated (nobody here knows the password).
func FuzzPreAuth(f *testing.F) {
	seeds := []bson.D{
		{{Key: "find", Value: "c"}},
		{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: bson.Binary{Data: []byte("c=biws,r=x,p=AAAA")}}},
		{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: int64(1)}, {Key: "payload", Value: "c=biws,r=fyko,p=="}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte("n,,n=ann,r=abc")}}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-1"}, {Key: "payload", Value: bson.Binary{Data: []byte("p=tls-unique,,n=ann,r=abc")}}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: 7}, {Key: "payload", Value: 1}},
		{{Key: "hello", Value: 1}, {Key: "speculativeAuthenticate", Value: bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "db", Value: "admin"}, {Key: "payload", Value: bson.Binary{Data: []byte("n,,n=ann,r=a")}}}}},
		{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.ann"}},
		{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{"root"}}},
		{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}},
		{{Key: "logout", Value: 1}},
		{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}},
	}
	for i, s := range seeds {
		b, _ := bson.Marshal(s)
		next, _ := bson.Marshal(seeds[(i+1)%len(seeds)])
		f.Add(b, next, "admin", i%2 == 0)
	}
	var panics atomic.Int64
	log := slog.New(panicCounter{slog.DiscardHandler, &panics})
	eng, err := engine.Open(f.TempDir(), engine.Options{Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	env := NewEnv(eng, Config{Auth: true}, log)
	f.Cleanup(func() { env.Close(); _ = eng.Close() })
	creds := map[string]auth.Credential{}
	for _, m := range allMechanisms {
		if creds[m], err = auth.NewCredential(m, "ann", "secret"); err != nil {
			f.Fatal(err)
		}
	}
	if err := env.Access.Users.Create(&auth.User{Name: "ann", DB: "admin", Credentials: creds, Roles: []auth.RoleName{{Role: "root", DB: "admin"}}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, second []byte, db string, converse bool) {
		// A fresh connection from loopback: the localhost exception must
		// stay closed, a user existing.
		sess := &Session{Env: env, ConnID: 1, Remote: "127.0.0.1:5000"}
		if converse {
			// The client-first message of a real SCRAM client, so the
			// fuzzed messages arrive mid-conversation.
			c, _ := scram.SHA256.NewClient("ann", "not the password", "")
			msg, _ := c.NewConversation().Step("")
			start, _ := bson.Marshal(bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: auth.SCRAMSHA256}, {Key: "payload", Value: bson.Binary{Data: []byte(msg)}}})
			if reply := runRaw(t, sess, start, "admin", &panics); !replyOK(reply) {
				t.Fatalf("saslStart refused: %s", reply)
			}
		}
		for _, body := range [][]byte{first, second} {
			reply := runRaw(t, sess, body, db, &panics)
			if reply == nil {
				continue
			}
			name := bsoncore.Document(body).Index(0).Key()
			if replyOK(reply) && !preAuthCommands[name] {
				t.Fatalf("%s ran before authentication: %s", bsoncore.Document(body), reply)
			}
			if sess.auth.user != nil {
				t.Fatalf("the connection authenticated after %s", bsoncore.Document(body))
			}
		}
	})
}

// preAuthCommands are the commands that may succeed before authentication:
// the handshake list, plus connectionStatus (which MongoDB answers
// unauthenticated too). Written out here, not read from privileges.go, so a
// rule that opens another command fails the fuzz seeds.
var preAuthCommands = map[string]bool{
	"hello": true, "isMaster": true, "ismaster": true, "buildInfo": true, "buildinfo": true, "ping": true,
	"saslStart": true, "saslContinue": true, "logout": true, "connectionStatus": true,
}

// runRaw runs body as a command, nil when it is not one (the wire layer
// refuses invalid BSON), failing on a panic or an invalid reply.
func runRaw(t *testing.T, sess *Session, body []byte, db string, panics *atomic.Int64) bsoncore.Document {
	t.Helper()
	if bsoncore.Document(body).Validate() != nil {
		return nil
	}
	req, err := NewRequest(body, db, nil)
	if err != nil {
		return nil
	}
	before := panics.Load()
	reply := Run(context.Background(), sess, req, nil)
	if panics.Load() != before {
		t.Fatalf("command %s panicked on %s", req.Name, bsoncore.Document(body))
	}
	if err := reply.Validate(); err != nil {
		t.Fatalf("invalid reply to %s: %v", bsoncore.Document(body), err)
	}
	return reply
}

func replyOK(reply bsoncore.Document) bool {
	v, err := reply.LookupErr("ok")
	if err != nil {
		return false
	}
	f, ok := v.AsFloat64OK()
	return ok && f == 1
}
