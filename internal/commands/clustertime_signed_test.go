package commands

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestSignedClusterTime: with --auth on a member, a client without
// advanceClusterTime gets $clusterTime signed by a key of
// admin.system.keys (made by the primary's loop), may send it back, and
// cannot advance the clock with a forged, stale, unsigned or unknown-key
// signature (TimeProofMismatch 204, KeyNotFound 211, NoSuchKey 4); the
// internal user gets zero signatures and advances the clock freely, as
// mongod's internal clients.
func TestSignedClusterTime(t *testing.T) {
	s := testSession(t, engine.Options{})
	env := s.Env
	env.Access.Enabled = true
	env.SetClusterTimes(true)
	deadline := time.Now().Add(10 * time.Second)
	for !env.Keys.Ready(env.Engine.Storage().Clock().Current()) {
		if time.Now().After(deadline) {
			t.Fatal("no signing keys within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	app := &auth.User{Name: "app", DB: "admin", Roles: []auth.RoleName{{Role: "readWrite", DB: "test"}}}
	if err := env.Access.Users.Create(app); err != nil {
		t.Fatal(err)
	}
	s.auth.user = app

	r := runDoc(t, s, "test", bson.D{{Key: "ping", Value: 1}})
	ct, ok := r.Lookup("$clusterTime").DocumentOK()
	if !ok {
		t.Fatalf("no $clusterTime: %s", r)
	}
	_, hash, _ := ct.Lookup("signature", "hash").BinaryOK()
	keyID, _ := ct.Lookup("signature", "keyId").Int64OK()
	if keyID == 0 || bytes.Equal(hash, make([]byte, 20)) {
		t.Fatalf("an ordinary user's $clusterTime is not signed: %s", ct)
	}
	ctT, ctI, _ := ct.Lookup("clusterTime").TimestampOK()
	if err := env.Keys.Validate(hlc.New(ctT, ctI), hash, keyID); err != nil {
		t.Fatalf("the server's own signature: %v", err)
	}
	// Echoing it back, as drivers do, is accepted.
	if c := replyCode(runDoc(t, s, "test", bson.D{{Key: "ping", Value: 1}, {Key: "$clusterTime", Value: bson.Raw(ct)}})); c != 0 {
		t.Fatalf("echoed $clusterTime: code %d", c)
	}

	now := env.Engine.Storage().Clock().Current()
	ahead := bson.Timestamp{T: now.T() + 100, I: 1}
	gossip := func(sig any) bsoncore.Document {
		d := bson.D{{Key: "clusterTime", Value: ahead}}
		if sig != nil {
			d = append(d, bson.E{Key: "signature", Value: sig})
		}
		return runDoc(t, s, "test", bson.D{{Key: "ping", Value: 1}, {Key: "$clusterTime", Value: d}})
	}
	sig := func(h []byte, id int64) bson.D {
		return bson.D{{Key: "hash", Value: bson.Binary{Data: h}}, {Key: "keyId", Value: id}}
	}
	for _, tc := range []struct {
		name string
		sig  any
		code mongoerr.Code
	}{
		{"an earlier time's signature", sig(hash, keyID), mongoerr.TimeProofMismatch},
		{"a forged hash", sig(bytes.Repeat([]byte{7}, 20), keyID), mongoerr.TimeProofMismatch},
		{"the zero signature", sig(make([]byte, 20), 0), mongoerr.KeyNotFound},
		{"an unknown key", sig(hash, keyID+12345), mongoerr.KeyNotFound},
		{"no signature", nil, mongoerr.NoSuchKey},
	} {
		r := gossip(tc.sig)
		if c := replyCode(r); c != int32(tc.code) {
			t.Errorf("%s: code %d, want %d (%s)", tc.name, c, tc.code, r)
		}
		if name, _ := r.Lookup("codeName").StringValueOK(); name != tc.code.Name() {
			t.Errorf("%s: codeName %q, want %q", tc.name, name, tc.code.Name())
		}
	}
	if cur := env.Engine.Storage().Clock().Current(); cur >= hlc.New(ahead.T, ahead.I) {
		t.Fatalf("a refused $clusterTime advanced the clock to %v", cur)
	}

	// The internal user: zero signatures out, any time in.
	sys, err := auth.NewSystemUser([]byte("c2VjcmV0a2V5"))
	if err != nil {
		t.Fatal(err)
	}
	env.Access.Users.SetSystemUser(sys)
	s.auth.user = sys
	r = gossip(sig(make([]byte, 20), 0))
	if c := replyCode(r); c != 0 {
		t.Fatalf("__system gossiping an unsigned time: %s", r)
	}
	if cur := env.Engine.Storage().Clock().Current(); cur < hlc.New(ahead.T, ahead.I) {
		t.Errorf("__system's $clusterTime did not advance the clock: %v", cur)
	}
	if id, _ := r.Lookup("$clusterTime", "signature", "keyId").Int64OK(); id != 0 {
		t.Errorf("__system got a signed $clusterTime (keyId %d)", id)
	}
}

// TestUsersAndKeysSurviveRestart: users and signing keys stored before a
// restart are read back by the next Env (reading admin.system.users once
// panicked in the planner, which needs a filter).
func TestUsersAndKeysSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	eng, err := engine.Open(dir, engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(eng, Config{}, log)
	u := &auth.User{Name: "app", DB: "admin", Roles: []auth.RoleName{{Role: "read", DB: "test"}}}
	if err := env.Access.Users.Create(u); err != nil {
		t.Fatal(err)
	}
	if err := env.Keys.Rotate(hlc.New(1000, 0), time.Hour); err != nil {
		t.Fatal(err)
	}
	env.Close()
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng, err = engine.Open(dir, engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	env = NewEnv(eng, Config{}, log)
	defer func() { env.Close(); _ = eng.Close() }()
	if _, ok := env.Access.Users.Lookup("admin", "app"); !ok {
		t.Error("the user is gone after a restart")
	}
	if !env.Keys.Ready(hlc.New(1000, 0)) {
		if err := env.Keys.Reload(); err != nil || !env.Keys.Ready(hlc.New(1000, 0)) {
			t.Errorf("the signing keys are gone after a restart (%v)", err)
		}
	}
}
