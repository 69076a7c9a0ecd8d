package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
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

// auditEvent writes one event for s's connection and user.
func auditEvent(s *Session, atype string, param bsoncore.Document, result mongoerr.Code) {
	l := s.Env.Audit
	if s.auditConn == ([16]byte{}) {
		s.auditConn = audit.NewConnUUID()
	}
	ev := audit.Event{AType: atype, Conn: s.auditConn, Remote: s.Remote, Param: param, Result: int32(result)}
	if u := s.auth.user; u != nil {
		ev.Users = []audit.Name{{Name: u.Name, DB: u.DB}}
		for _, r := range u.Roles {
			ev.Roles = append(ev.Roles, audit.Name{Name: r.Role, DB: r.DB})
		}
	}
	if err := l.Write(ev); err != nil {
		s.Env.Log.Error("cannot write to the audit log", "atype", atype, "err", err)
	}
}

// auditCommand writes the event of a finished command, if it is audited.
func auditCommand(s *Session, req *Request, reply bsoncore.Document) {
	if req.Name == "createIndexes" {
		auditCreateIndexes(s, req, reply)
		return
	}
	rule, ok := auditRules[req.Name]
	if !ok {
		return
	}
	auditEvent(s, rule.atype, rule.param(req), replyResult(reply))
}

// auditCreateIndexes writes a createIndex event per index of the request.
func auditCreateIndexes(s *Session, req *Request, reply bsoncore.Document) {
	coll, _ := req.First().StringValueOK()
	result := replyResult(reply)
	for _, v := range req.arrayValues("indexes") {
		spec, ok := v.DocumentOK()
		if !ok {
			continue
		}
		name, _ := spec.Lookup("name").StringValueOK()
		auditEvent(s, "createIndex", newDoc().AppendString("ns", req.DB+"."+coll).AppendString("indexName", name).
			AppendDocument("indexSpec", spec).Build(), result)
	}
}

// auditAuthCheck records a command refused by access control.
func auditAuthCheck(s *Session, req *Request, err error) {
	b := newDoc().AppendString("command", req.Name).AppendString("ns", req.DB)
	if coll, ok := req.First().StringValueOK(); ok {
		b = newDoc().AppendString("command", req.Name).AppendString("ns", req.DB+"."+coll)
	}
	if !secretCommands[req.Name] {
		b.AppendDocument("args", req.Body)
	}
	auditEvent(s, "authCheck", b.Build(), mongoerr.CodeOf(err))
}

// auditAuthenticate records an authentication attempt.
func auditAuthenticate(s *Session, user, db, mechanism string, err error) {
	if s.Env.Audit == nil {
		return
	}
	var result mongoerr.Code // 0: success
	if err != nil {
		result = mongoerr.CodeOf(err)
	}
	auditEvent(s, "authenticate", newDoc().AppendString("user", user).AppendString("db", db).AppendString("mechanism", mechanism).Build(), result)
}

// replyResult is a reply's result for the audit log: 0 or its code.
func replyResult(reply bsoncore.Document) mongoerr.Code {
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
		return 0
	}
	c, _ := reply.Lookup("code").AsInt64OK()
	return mongoerr.Code(c)
}
