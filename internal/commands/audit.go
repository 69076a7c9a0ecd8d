package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// The audit log's events (package audit writes them; MongoDB Enterprise's
// auditing): authentication, authorization failures (authCheck), user and
// role changes, DDL and shutdown. Each is written before the reply of the
// command it describes is sent (audit's "Written before answered"), from
// Run, so a command's handler knows nothing of auditing. With no audit log
// (Env.Audit nil) the cost is one nil check per command.

// auditParam builds an audited command's param from its request.
type auditParam func(req *Request) bsoncore.Document

// auditRules are the commands audited when they finish, by name: the
// atype and the param, in MongoDB's shapes. createIndexes is audited per
// index (auditCreateIndexes).
var auditRules = map[string]struct {
	atype string
	param auditParam
}{
	"create":                   {"createCollection", nsParam},
	"drop":                     {"dropCollection", nsParam},
	"dropDatabase":             {"dropDatabase", func(r *Request) bsoncore.Document { return newDoc().AppendString("ns", r.DB).Build() }},
	"dropIndexes":              {"dropIndex", dropIndexParam},
	"renameCollection":         {"renameCollection", renameParam},
	"createUser":               {"createUser", userParam("user", "customData", "roles")},
	"updateUser":               {"updateUser", userParam("user", "customData", "roles")},
	"dropUser":                 {"dropUser", userParam("user")},
	"dropAllUsersFromDatabase": {"dropAllUsersFromDatabase", dbParam},
	"grantRolesToUser":         {"grantRolesToUser", userParam("user", "roles")},
	"revokeRolesFromUser":      {"revokeRolesFromUser", userParam("user", "roles")},
	"createRole":               {"createRole", userParam("role", "roles", "privileges")},
	"updateRole":               {"updateRole", userParam("role", "roles", "privileges")},
	"dropRole":                 {"dropRole", userParam("role")},
	"dropAllRolesFromDatabase": {"dropAllRolesFromDatabase", dbParam},
	"grantRolesToRole":         {"grantRolesToRole", userParam("role", "roles")},
	"revokeRolesFromRole":      {"revokeRolesFromRole", userParam("role", "roles")},
	"grantPrivilegesToRole":    {"grantPrivilegesToRole", userParam("role", "privileges")},
	"revokePrivilegesFromRole": {"revokePrivilegesFromRole", userParam("role", "privileges")},
	"shutdown":                 {"shutdown", func(*Request) bsoncore.Document { return nil }},
}

// secretCommands carry a password: an authCheck event leaves out their
// arguments (audit's "Secrets stay out").
var secretCommands = map[string]bool{"createUser": true, "updateUser": true, "saslStart": true, "saslContinue": true, "authenticate": true}

func newDoc() *bsoncore.DocumentBuilder { return bsoncore.NewDocumentBuilder() }

func nsParam(r *Request) bsoncore.Document {
	coll, _ := r.First().StringValueOK()
	return newDoc().AppendString("ns", r.DB+"."+coll).Build()
}

func dbParam(r *Request) bsoncore.Document { return newDoc().AppendString("db", r.DB).Build() }

func dropIndexParam(r *Request) bsoncore.Document {
	coll, _ := r.First().StringValueOK()
	b := newDoc().AppendString("ns", r.DB+"."+coll)
	if v, ok := r.Arg("index"); ok {
		b.AppendValue("indexName", v)
	}
	return b.Build()
}

func renameParam(r *Request) bsoncore.Document {
	from, _ := r.First().StringValueOK()
	to, _ := r.arg("to").StringValueOK()
	return newDoc().AppendString("old", from).AppendString("new", to).Build()
}

// userParam is {<name>: <the command's first value>, db, <fields>...}:
// the user's or role's name, its database and the listed fields as sent
// (never pwd).
func userParam(name string, fields ...string) auditParam {
	return func(r *Request) bsoncore.Document {
		n, _ := r.First().StringValueOK()
		b := newDoc().AppendString(name, n).AppendString("db", r.DB)
		for _, f := range fields {
			if v, ok := r.Arg(f); ok {
				b.AppendValue(f, v)
			}
		}
		return b.Build()
	}
}

// The event builders below make an event's atype, param and result; who
// and where (the connection, its client, the user and roles) are stamped
// by AuditStamp. A router audits its clients' commands with the same
// builders (package router), as mongos does.

// AuditStamp fills ev's connection, client address and, once
// authenticated, user and roles.
func AuditStamp(ev audit.Event, conn [16]byte, remote string, u *auth.User) audit.Event {
	ev.Conn, ev.Remote = conn, remote
	if u != nil {
		ev.Users = []audit.Name{{Name: u.Name, DB: u.DB}}
		for _, r := range u.Roles {
			ev.Roles = append(ev.Roles, audit.Name{Name: r.Role, DB: r.DB})
		}
	}
	return ev
}

// auditEvent writes one event for s's connection and user.
func auditEvent(s *Session, ev audit.Event) {
	if s.auditConn == ([16]byte{}) {
		s.auditConn = audit.NewConnUUID()
	}
	if err := s.Env.Audit.Write(AuditStamp(ev, s.auditConn, s.Remote, s.auth.user)); err != nil {
		s.Env.Log.Error("cannot write to the audit log", "atype", ev.AType, "err", err)
	}
}

// auditCommand writes the events of a finished command, if it is audited.
func auditCommand(s *Session, req *Request, reply bsoncore.Document) {
	for _, ev := range AuditCommandEvents(req, reply) {
		auditEvent(s, ev)
	}
}

// Audited reports whether a finished command named name makes audit
// events (so a caller parses the request only for those).
func Audited(name string) bool {
	_, ok := auditRules[name]
	return ok || name == "createIndexes"
}

// AuditCommandEvents are the events a finished command makes: none for
// most, one per index for createIndexes.
func AuditCommandEvents(req *Request, reply bsoncore.Document) []audit.Event {
	if req.Name == "createIndexes" {
		return auditCreateIndexes(req, reply)
	}
	rule, ok := auditRules[req.Name]
	if !ok {
		return nil
	}
	return []audit.Event{{AType: rule.atype, Param: rule.param(req), Result: int32(replyResult(reply))}}
}

// auditCreateIndexes is a createIndex event per index of the request.
func auditCreateIndexes(req *Request, reply bsoncore.Document) []audit.Event {
	coll, _ := req.First().StringValueOK()
	result := int32(replyResult(reply))
	var evs []audit.Event
	for _, v := range req.arrayValues("indexes") {
		spec, ok := v.DocumentOK()
		if !ok {
			continue
		}
		name, _ := spec.Lookup("name").StringValueOK()
		evs = append(evs, audit.Event{AType: "createIndex", Param: newDoc().AppendString("ns", req.DB+"."+coll).AppendString("indexName", name).
			AppendDocument("indexSpec", spec).Build(), Result: result})
	}
	return evs
}

// auditAuthCheck records a command refused by access control.
func auditAuthCheck(s *Session, req *Request, err error) {
	auditEvent(s, AuditAuthCheckEvent(req, err))
}

// AuditAuthCheckEvent is the event of a command refused by access control
// (its arguments left out when they carry a password).
func AuditAuthCheckEvent(req *Request, err error) audit.Event {
	b := newDoc().AppendString("command", req.Name).AppendString("ns", req.DB)
	if coll, ok := req.First().StringValueOK(); ok {
		b = newDoc().AppendString("command", req.Name).AppendString("ns", req.DB+"."+coll)
	}
	if !secretCommands[req.Name] {
		b.AppendDocument("args", req.Body)
	}
	return audit.Event{AType: "authCheck", Param: b.Build(), Result: int32(mongoerr.CodeOf(err))}
}

// auditAuthenticate records an authentication attempt.
func auditAuthenticate(s *Session, user, db, mechanism string, err error) {
	if s.Env.Audit == nil {
		return
	}
	auditEvent(s, AuditAuthenticateEvent(user, db, mechanism, err))
}

// AuditAuthenticateEvent is the event of an authentication attempt (err
// nil: it succeeded).
func AuditAuthenticateEvent(user, db, mechanism string, err error) audit.Event {
	var result mongoerr.Code // 0: success
	if err != nil {
		result = mongoerr.CodeOf(err)
	}
	return audit.Event{AType: "authenticate", Param: newDoc().AppendString("user", user).AppendString("db", db).AppendString("mechanism", mechanism).Build(), Result: int32(result)}
}

// replyResult is a reply's result for the audit log: 0 or its code.
func replyResult(reply bsoncore.Document) mongoerr.Code {
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
		return 0
	}
	c, _ := reply.Lookup("code").AsInt64OK()
	return mongoerr.Code(c)
}
