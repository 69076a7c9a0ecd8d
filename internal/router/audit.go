package router

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/commands"
)

// The router's audit log (Options.Audit, `cairn router --auditDestination`),
// as mongos's: its clients' authentications, the commands its access
// control refuses (authCheck), and the user, role and DDL commands it
// runs for them — the same events, built by the same rules, as a server's
// (commands.AuditCommandEvents), stamped with the router's connection and
// the client's user. Each is written before the reply goes out (audit's
// "Written before answered"). With no audit log the cost is a nil check.

// auditWrite stamps ev with req's connection and user and writes it.
func (r *Router) auditWrite(req *request, ev audit.Event) {
	a := req.auth
	if a.auditConn == ([16]byte{}) {
		a.auditConn = audit.NewConnUUID()
	}
	if err := r.audit.Write(commands.AuditStamp(ev, a.auditConn, a.remote, a.user)); err != nil {
		r.log.Error("cannot write to the audit log", "atype", ev.AType, "err", err)
	}
}

// auditCommand writes the events of a finished command, if it is audited.
func (r *Router) auditCommand(req *request, reply bsoncore.Document) {
	if !commands.Audited(req.name) {
		return
	}
	creq, err := commands.NewRequest(req.body, req.db, req.seqs)
	if err != nil {
		return
	}
	for _, ev := range commands.AuditCommandEvents(creq, reply) {
		r.auditWrite(req, ev)
	}
}

// auditAuthCheck records a command refused by access control.
func (r *Router) auditAuthCheck(req *request, err error) {
	if r.audit == nil {
		return
	}
	creq, perr := commands.NewRequest(req.body, req.db, req.seqs)
	if perr != nil {
		return
	}
	r.auditWrite(req, commands.AuditAuthCheckEvent(creq, err))
}

// auditAuthenticate records an authentication attempt (err nil: success).
func (r *Router) auditAuthenticate(req *request, user, db, mechanism string, err error) {
	if r.audit != nil {
		r.auditWrite(req, commands.AuditAuthenticateEvent(user, db, mechanism, err))
	}
}
