package commands

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Run executes req and returns the reply appended to dst. It never panics: a
// panic in a handler is recovered, logged with its stack and answered with
// InternalError, and the connection lives on.
func Run(ctx context.Context, s *Session, req *Request, dst []byte) (reply bsoncore.Document) {
	if s.Env.Audit != nil {
		defer func() { auditCommand(s, req, reply) }() // audit.go
	}
	s.labelsSet = false
	if !s.Env.ClusterTimes() {
		return withRetryableWriteLabel(run(ctx, s, req, dst), s, req) // errorlabels.go
	}
	// A replica-set member's clock and replies (clustertime.go).
	if err := observeClusterTime(s, req); err != nil {
		reply = ErrorReply(dst, err)
	} else {
		reply = run(ctx, s, req, dst)
	}
	return appendClusterTimes(withRetryableWriteLabel(reply, s, req), s)
}

func run(ctx context.Context, s *Session, req *Request, dst []byte) (reply bsoncore.Document) {
	start := len(dst)
	defer func() {
		if r := recover(); r != nil {
			s.Env.Log.Error("command panicked", "command", req.Name, "db", req.DB, "conn", s.ConnID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			reply = ErrorReply(dst[:start], mongoerr.New(mongoerr.InternalError, "internal error while running %s: %v", req.Name, r))
		}
	}()
	return runChecked(ctx, s, req, dst)
}

// run is split in steps, runChecked → runOp → runInSession → runAdmitted,
// each with at most one deferred call and few returns: Go runs a
// function's defers inline only while its returns times its defers stay
// within 15, and the deferred-call records it uses past that cost every
// command (a point read's ~800 instructions in run alone).

// writeWait is what a write waits for after it runs: its writeConcern (a
// replica set member's), or the unsatisfiable one it reports.
type writeWait struct {
	writes        bool
	w             bsoncore.Value
	timeout       time.Duration
	unsatisfiable error
}

// runChecked is run inside its recovery: the checks every command passes
// before it becomes an operation.
func runChecked(ctx context.Context, s *Session, req *Request, dst []byte) bsoncore.Document {
	start := len(dst)
	s.Env.Ops.Command.Add(1)
	cmd, ok := req.command()
	if ok && cmd.testOnly && !s.Env.TestCommands() {
		ok = false
	}
	if !ok {
		return ErrorReply(dst, mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", req.Name))
	}
	if err := catalog.ValidateCommandDB(req.DB); err != nil {
		return ErrorReply(dst, err)
	}
	// Access control, in one place and before any field is parsed: an
	// unauthenticated client reaches no command's parser beyond the
	// handshake's (auth.go, privileges.go).
	if err := authorize(s, req); err != nil {
		if s.Env.Audit != nil {
			auditAuthCheck(s, req, err)
		}
		return ErrorReply(dst, err)
	}
	// As in MongoDB: the command's fields are parsed first, then where it
	// may run, then the generic arguments (generic.go).
	elems := req.elems // split by Reset, or now
	if elems == nil {
		var err error
		if elems, err = elementsOf(req.elemBuf[:0], req.Body); err != nil {
			return ErrorReply(dst, err)
		}
		req.setFields(elems)
	}
	genericMask, err := checkFields(cmd, req.Name, elems)
	if err != nil {
		return ErrorReply(dst, err)
	}
	if err := checkNested(cmd, req.Name, req); err != nil {
		return ErrorReply(dst, err)
	}
	if cmd.adminOnly && req.DB != "admin" {
		return ErrorReply(dst, mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", req.Name))
	}
	if err := checkGeneric(s, cmd, req, elems, genericMask); err != nil {
		return ErrorReply(dst, err)
	}
	// One clock reading for the operation's entry, its $$NOW and its
	// duration.
	req.start = time.Now()
	if err := checkView(s, cmd, req); err != nil { // views.go
		return ErrorReply(dst, err)
	}
	var ww writeWait
	writes := cmd.kind == kindWrite || writesOutput(req)
	ww.writes = writes
	if rs := s.Env.Repl; rs != nil {
		// A replica set member: writes on the primary only, reads on a
		// secondary only when the client allows it (cmd_repl.go). An
		// aggregate with $out or $merge is a write.
		switch {
		case writes:
			if err := rs.CanWrite(); err != nil {
				return ErrorReply(dst, txnOutcome(s, req.Name, nil, err)) // a transaction's labels
			}
			ww.w, ww.timeout = replWriteConcern(req)
			if err := rs.CheckWriteConcern(ww.w); err != nil {
				// mongod finds a w no member set can satisfy (or an
				// unknown mode) while waiting for it, after the write:
				// the write applies and the reply carries the error as
				// its writeConcernError.
				switch mongoerr.CodeOf(err) {
				case mongoerr.UnsatisfiableWriteConcern, mongoerr.UnknownReplWriteConcern:
					ww.unsatisfiable = err
				default:
					return ErrorReply(dst, err)
				}
			}
		case cmd.kind == kindRead:
			if err := rs.CanRead(secondaryOk(req)); err != nil {
				return ErrorReply(dst, txnOutcome(s, req.Name, nil, err))
			}
		}
	}
	ctx, op, err := beginOp(ctx, s, req) // maxTimeMS, killOp, currentOp (operation.go)
	if err != nil {
		return ErrorReply(dst, err)
	}
	return runOp(ctx, s, req, cmd, op, dst, start, &ww)
}

// runOp runs an operation begun, and ends it.
func runOp(ctx context.Context, s *Session, req *Request, cmd *command, op operation, dst []byte, start int, ww *writeWait) bsoncore.Document {
	if s.Env.Repl != nil && cmd.kind == kindRead && linearizable(req) {
		if err := s.Env.Repl.Linearize(ctx); err != nil {
			op.end()
			return ErrorReply(dst, err)
		}
	}
	defer op.end()
	return runInSession(ctx, s, req, cmd, dst, start, ww)
}

// runInSession runs the operation in its logical session, if it names
// one, and releases the session.
func runInSession(ctx context.Context, s *Session, req *Request, cmd *command, dst []byte, start int, ww *writeWait) bsoncore.Document {
	if err := useSession(ctx, s); err != nil { // sessions.go
		releaseSession(s)
		return ErrorReply(dst, err)
	}
	defer releaseSession(s)
	if err := waitClusterTime(ctx, s, req); err != nil { // clustertime.go
		return ErrorReply(dst, err)
	}
	if err := useTransaction(s, req.Name); err != nil { // transactions.go: its snapshot follows afterClusterTime
		return ErrorReply(dst, txnOutcome(s, req.Name, nil, err))
	}
	return runAdmitted(ctx, s, req, cmd, dst, start, ww)
}

// runAdmitted runs the command's handler once a shard admits it, and
// answers.
func runAdmitted(ctx context.Context, s *Session, req *Request, cmd *command, dst []byte, start int, ww *writeWait) bsoncore.Document {
	writes := ww.writes
	if s.Env.Sharding != nil { // shard versions, migrations' critical sections (sharding.go)
		_, internal := shardingInternal[req.Name]
		release, err := admitSharded(ctx, s, req, cmd.kind == kindWrite && !internal)
		if reply, ok := staleWriteReply(dst, s, req, err); ok {
			return reply
		}
		if err != nil {
			return ErrorReply(dst, err)
		}
		if release != nil {
			defer release()
		}
	}
	s.stat = opStats{}
	s.scope.EnforcePrepare = enforcesPrepare(req, writes)
	out, err := runCommand(ctx, s, req, cmd, dst) // cmd_failpoint.go
	if err == nil && cmd.kind == kindWrite && s.Env.Repl != nil {
		err = replStateError(out)
	}
	err = txnOutcome(s, req.Name, out, err) // transactions.go
	took := time.Since(req.start)
	if s.Env.Log.Enabled(ctx, slog.LevelDebug) {
		s.Env.Log.Debug("command", "command", req.Name, "db", req.DB, "conn", s.ConnID,
			"durationMicros", took.Microseconds(), "code", int32(mongoerr.CodeOf(err)))
	}
	if err == nil && cmd.kind == kindWrite && journaled(req) {
		err = s.Env.Engine.Storage().SyncNow() // the interval mode syncs on request
	}
	s.Env.observe(ctx, s, req, cmd, took, out, err) // slow-operation log, profiler (profiler.go)
	if err != nil {
		s.Env.Ops.UserErrors.Add(1)
		return ErrorReply(dst[:start], err)
	}
	if ww.unsatisfiable != nil {
		return withWriteConcernError(nil, out, errorDoc(ww.unsatisfiable))
	}
	if writes && s.Env.Repl != nil && s.sess.etx == nil { // a transaction's statements wait at commit
		if wce := s.Env.Repl.WaitWriteConcern(ctx, ww.w, ww.timeout); wce != nil {
			return withWriteConcernError(nil, out, wce)
		}
	}
	return out
}

// journaled reports whether a write's writeConcern asks for the journal
// (j or the legacy fsync, true or a non-zero number): the reply then waits
// until the write is durable, whatever --sync says.
func journaled(req *Request) bool {
	d := argDoc(req, "writeConcern")
	if d == nil {
		return false
	}
	for _, f := range []string{"j", "fsync"} {
		if v, err := d.LookupErr(f); err == nil {
			if b, ok := v.BooleanOK(); ok && b {
				return true
			}
			if n, ok := numberAsInt(v); ok && n != 0 {
				return true
			}
		}
	}
	return false
}

// NewRequest builds a Request from a command body and its document
// sequences; db is the body's $db unless given (legacy OP_QUERY).
func NewRequest(body bsoncore.Document, db string, seqs map[string][]bsoncore.Document) (*Request, error) {
	r := new(Request)
	if err := r.Reset(body, db, seqs); err != nil {
		return nil, err
	}
	return r, nil
}

// Reset makes r the Request NewRequest builds, in r's own memory: a
// connection keeps one Request for all its commands (Run keeps none of it
// after it returns). It splits the body's fields once, for Run and every
// Arg after it. A known command's name is the registry's string, and a
// database named as the last request's keeps its string, so a steady
// stream of commands allocates neither.
func (r *Request) Reset(body bsoncore.Document, db string, seqs map[string][]bsoncore.Document) error {
	return r.reset(body, nil, false, db, seqs)
}

// ResetSplit is Reset of a body whose top-level elements the caller has
// split already, in order (wire.Msg.BodyElements: the wire's validation
// of the body split it), so that Reset need not split it again. elems
// must be exactly body's elements; they are copied.
func (r *Request) ResetSplit(body bsoncore.Document, elems []bsoncore.Element, db string, seqs map[string][]bsoncore.Document) error {
	return r.reset(body, elems, true, db, seqs)
}

func (r *Request) reset(body bsoncore.Document, split []bsoncore.Element, isSplit bool, db string, seqs map[string][]bsoncore.Document) error {
	lastDB, lastN := r.DB, len(r.elems)
	// Field by field rather than *r = Request{...}: elemBuf is refilled
	// below, and zeroing it whole (pointers, in a connection's heap
	// object) costs write barriers on every command.
	r.DB, r.Name, r.Body, r.Sequences = "", "", body, seqs
	r.elems, r.keyMask, r.start, r.named = nil, 0, time.Time{}, nil
	var elems []field
	var err error
	switch {
	case isSplit && len(split) <= len(r.elemBuf):
		// Filled in place, the key mask as it goes (setFields' work in
		// the same pass).
		elems = r.elemBuf[:len(split)]
		var mask uint64
		for i, el := range split {
			f := &elems[i]
			*f = fieldOf(el)
			k := f.key()
			mask |= keyBit(len(k), firstByte(k), lastByte(k))
		}
		r.elems, r.keyMask = elems, mask
	case isSplit:
		elems = make([]field, len(split))
		for i, el := range split {
			elems[i] = fieldOf(el)
		}
	default:
		elems, err = elementsOf(r.elemBuf[:0], body)
	}
	if n := len(elems); n < lastN && lastN <= len(r.elemBuf) {
		clear(r.elemBuf[n:lastN]) // keep no older request's buffer alive
	}
	if err != nil || len(elems) == 0 {
		// Malformed: read what can be read, as a lookup does; Run
		// refuses the rest when it splits the fields.
		r.elems, r.keyMask = nil, 0
		return r.resetMalformed(body, db)
	}
	if r.elems == nil {
		r.setFields(elems)
	}
	r.Name, r.named = commandName(elems[0].key())
	if db == "" {
		v := r.arg("$db")
		if v.Type == 0 {
			return mongoerr.New(mongoerr.FailedToParse, "OP_MSG requests require a $db argument")
		}
		if d := v.Data; v.Type == bsoncore.TypeString && len(d) > 4 && string(d[4:len(d)-1]) == lastDB {
			db = lastDB
		} else if db, err = dbName(v); err != nil {
			return err
		}
	}
	r.DB = db
	return nil
}

// resetMalformed is Reset of a body whose fields do not split.
func (r *Request) resetMalformed(body bsoncore.Document, db string) error {
	first, err := body.IndexErr(0)
	if err != nil {
		return mongoerr.New(mongoerr.FailedToParse, "empty command document")
	}
	if db == "" {
		v, err := body.LookupErr("$db")
		if err != nil {
			return mongoerr.New(mongoerr.FailedToParse, "OP_MSG requests require a $db argument")
		}
		if db, err = dbName(v); err != nil {
			return err
		}
	}
	r.DB, r.Name = db, first.Key()
	return nil
}

// dbName reads $db, a string.
func dbName(v bsoncore.Value) (string, error) {
	if stringIs(v, "admin") {
		return "admin", nil // commitTransaction's and the like's, without allocating
	}
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '$db' is the wrong type '%s', expected type 'string'", typeName(v.Type))
	}
	return s, nil
}
