package commands

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// SASL authentication (the drivers' authentication specification): a
// saslStart with the mechanism and the client's first message, then
// saslContinue until done. Only SCRAM-SHA-1 and SCRAM-SHA-256.

var errAuthFailed = mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")

func cmdSaslStart(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	mech, err := req.String("mechanism", "")
	if err != nil {
		return nil, err
	}
	payload, err := SASLPayload(req.Body)
	if err != nil {
		return nil, err
	}
	skip := false
	if opts, err := req.Document("options"); err != nil {
		return nil, err
	} else if opts != nil {
		if v, err := opts.LookupErr("skipEmptyExchange"); err == nil {
			skip = v.Type == bsoncore.TypeBoolean && v.Boolean()
		}
	}
	r := NewReply(dst)
	if err := saslStart(s, req.DB, mech, payload, skip, r); err != nil {
		return nil, err
	}
	return r.Finish(), nil
}

// saslStart begins a conversation and appends its first reply's fields to
// r (shared by saslStart and hello's speculativeAuthenticate).
func saslStart(s *Session, dbName, mech string, payload []byte, skipEmpty bool, r *Reply) error {
	conv, err := s.Env.Access.Users.Start(mech, dbName)
	if errors.Is(err, auth.ErrUnknownMechanism) {
		return mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	if err != nil {
		return err
	}
	a := &s.auth
	a.convID++
	a.conv, a.skipEmpty, a.finished = conv, skipEmpty, false
	return saslStep(s, payload, r)
}

func saslStep(s *Session, payload []byte, r *Reply) error {
	a := &s.auth
	if a.finished {
		// The client's empty last message of a conversation without
		// skipEmptyExchange.
		a.conv = nil
		r.Int32("conversationId", a.convID).Bool("done", true).Any("payload", bson.Binary{Data: []byte{}})
		return nil
	}
	out, done, err := a.conv.Step(payload)
	if err != nil {
		auditAuthenticate(s, a.conv.Username(), a.conv.DB(), a.conv.Mechanism, errAuthFailed)
		a.conv = nil
		s.Env.Log.Info("authentication failed", "conn", s.ConnID, "remote", s.Remote, "mechanism", "SCRAM")
		return errAuthFailed
	}
	if done {
		u := a.conv.User()
		a.user, a.gen = u, s.Env.Access.Users.Gen()
		a.privs, _ = s.Env.Access.Users.Resolve(u.Roles)
		s.Env.Log.Info("authenticated", "conn", s.ConnID, "user", u.Name, "db", u.DB, "mechanism", a.conv.Mechanism)
		auditAuthenticate(s, u.Name, u.DB, a.conv.Mechanism, nil)
		if a.skipEmpty {
			a.conv = nil
		} else {
			a.finished, done = true, false
		}
	}
	r.Int32("conversationId", a.convID).Bool("done", done).Any("payload", bson.Binary{Data: out})
	return nil
}

func cmdSaslContinue(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	id, err := req.Int("conversationId", 0)
	if err != nil {
		return nil, err
	}
	payload, err := SASLPayload(req.Body)
	if err != nil {
		return nil, err
	}
	// A conversation belongs to its connection: an id from another one
	// (a replayed conversation) finds nothing here.
	if s.auth.conv == nil || id != int64(s.auth.convID) {
		return nil, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	r := NewReply(dst)
	if err := saslStep(s, payload, r); err != nil {
		return nil, err
	}
	return r.Finish(), nil
}

// SASLPayload reads a SASL command's payload: binary data, or a string
// (as mongod takes). The router reads its clients' with it too.
func SASLPayload(body bsoncore.Document) ([]byte, error) {
	v, err := body.LookupErr("payload")
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'payload' is missing but a required field")
	}
	if _, data, ok := v.BinaryOK(); ok {
		return data, nil
	}
	if s, ok := v.StringValueOK(); ok {
		return []byte(s), nil
	}
	return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'payload' is the wrong type '%s', expected types '[string, binData]'", typeName(v.Type))
}

// speculativeAuth answers hello's speculativeAuthenticate: a saslStart
// carried by the handshake. A failure only leaves the field out of the
// reply; the driver then authenticates the ordinary way and sees the error.
func speculativeAuth(s *Session, req *Request, r *Reply) {
	d, err := req.Document("speculativeAuthenticate")
	if err != nil || d == nil {
		return
	}
	mech, _ := d.Lookup("mechanism").StringValueOK()
	dbName, _ := d.Lookup("db").StringValueOK()
	if mech == MechanismX509 {
		user, _ := d.Lookup("user").StringValueOK()
		sub := NewReply(nil)
		if authenticateX509(s, dbName, user, sub) == nil {
			r.Doc("speculativeAuthenticate", sub.End())
		}
		return
	}
	payload, err := SASLPayload(d)
	if err != nil || mech == "" || dbName == "" {
		return
	}
	sub := NewReply(nil)
	if err := saslStart(s, dbName, mech, payload, true, sub); err != nil {
		return
	}
	r.Doc("speculativeAuthenticate", sub.End())
}

// cmdLogout ends the connection's authentication (and any conversation).
func cmdLogout(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	s.auth = sessionAuth{convID: s.auth.convID}
	return OK(dst), nil
}

// cmdConnectionStatus reports who the connection is: its user and roles
// and, with showPrivileges, their privileges.
func cmdConnectionStatus(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	show, err := req.Bool("showPrivileges", false)
	if err != nil {
		return nil, err
	}
	users, roles := bson.A{}, bson.A{}
	var privs auth.Privileges
	if u := s.auth.user; u != nil {
		privs = s.privileges()
		if u = s.auth.user; privs != nil || len(u.Roles) == 0 {
			users = append(users, bson.D{{Key: "user", Value: u.Name}, {Key: "db", Value: u.DB}})
			roles = auth.RolesDoc(u.Roles)
		}
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: roles}}
	if show {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: auth.PrivilegesDoc(privs)})
	}
	r := NewReply(dst)
	r.Any("authInfo", info)
	return r.Finish(), nil
}
