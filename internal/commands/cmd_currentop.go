package commands

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds currentOp and $currentOp: the operations in progress,
// from the engine's registry (engine.Ops), which holds both client
// commands (registered by Run) and the engine's own work (index builds).

// cmdCurrentOp lists operations in progress. Fields other than currentOp,
// $all, $ownOps and the generic command arguments form a filter on the
// listed documents ({"command.createIndexes": {$exists: true}}), as in
// MongoDB.
func cmdCurrentOp(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	elems, _ := req.Body.Elements()
	b := bsoncore.NewDocumentBuilder()
	idle := true
	for _, el := range elems[1:] {
		switch k := el.Key(); {
		case k == "idleSessions":
			v, ok := el.Value().BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'currentOp.idleSessions' is the wrong type '%s', expected type 'bool'", typeName(el.Value().Type))
			}
			idle = v
		case k == "$all" || k == "$ownOps" || isGeneric(k):
		case strings.HasPrefix(k, "$") && k != "$and" && k != "$or" && k != "$nor" && k != "$expr":
		default:
			b.AppendValue(k, el.Value())
		}
	}
	match, err := compileFilter(b.Build())
	if err != nil {
		return nil, err
	}
	var inprog []bsoncore.Document
	docs := inprogDocs(s)
	if idle {
		docs = append(docs, idleTxnDocs(s)...)
	}
	for _, d := range docs {
		if match(d) {
			inprog = append(inprog, d)
		}
	}
	return NewReply(dst).DocArray("inprog", inprog).Finish(), nil
}

// CurrentOp serves $currentOp, which MongoDB runs only as {aggregate: 1}
// against the admin database.
func (a aggStats) CurrentOp(bsoncore.Document) ([]bsoncore.Document, error) {
	if !a.collectionless || a.ns.DB != "admin" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	return inprogDocs(a.s), nil
}

// inprogDocs shapes every operation in progress as MongoDB's currentOp
// does: type, host, desc, connectionId, client, active, currentOpTime,
// opid, secs_running, microsecs_running, op, ns, command, and msg and
// progress {done, total} for a long operation.
func inprogDocs(s *Session) []bsoncore.Document {
	host := hostPort(s)
	now := time.Now()
	ops := s.Env.Engine.Ops().List()
	out := make([]bsoncore.Document, 0, len(ops))
	for _, op := range ops {
		out = append(out, inprogDoc(op, host, now))
	}
	return out
}

// idleTxnDocs are the open transactions no command runs in, as MongoDB's
// currentOp lists them with idleSessions (its default): type
// "idleSession", the lsid, and transaction {parameters: {txnNumber,
// autocommit}, startWallClockTime, timeOpenMicros, expiryTime}.
func idleTxnDocs(s *Session) []bsoncore.Document {
	host := hostPort(s)
	now := time.Now()
	var out []bsoncore.Document
	for _, it := range s.Env.Sessions.IdleTransactions() {
		r := NewReply(nil)
		r.String("type", "idleSession")
		r.String("host", host)
		r.String("desc", "inactive transaction")
		r.Bool("active", false)
		r.Doc("lsid", it.ID.Doc())
		r.Doc("transaction", doc(
			"parameters", doc("txnNumber", it.TxnNumber, "autocommit", false),
			"startWallClockTime", it.Started.Format("2006-01-02T15:04:05.000-07:00"),
			"timeOpenMicros", now.Sub(it.Started).Microseconds(),
			"expiryTime", it.Expires.Format("2006-01-02T15:04:05.000-07:00")))
		out = append(out, r.End())
	}
	return out
}

func inprogDoc(op engine.OpStatus, host string, now time.Time) bsoncore.Document {
	r := NewReply(nil)
	r.String("type", "op")
	r.String("host", host)
	r.String("desc", op.Desc)
	if op.ConnID != 0 {
		r.Int64("connectionId", op.ConnID)
		r.String("client", op.Client)
	}
	r.Bool("active", op.Active)
	r.String("currentOpTime", op.Started.Format("2006-01-02T15:04:05.000-07:00"))
	r.Int64("opid", op.ID)
	running := now.Sub(op.Started)
	r.Int64("secs_running", int64(running.Seconds()))
	r.Int64("microsecs_running", running.Microseconds())
	r.String("op", op.Op)
	r.String("ns", op.NS)
	if len(op.Command) > 0 {
		r.Doc("command", op.Command)
	} else {
		r.Doc("command", doc())
	}
	if op.HasProgress {
		r.String("msg", op.Msg)
		r.Doc("progress", doc("done", op.Done, "total", op.Total))
	}
	if op.KillPending {
		r.Bool("killPending", true)
	}
	r.Int64("numYields", 0)
	r.Doc("locks", doc())
	r.Bool("waitingForLock", false)
	return r.End()
}
