package commands

import (
	"context"
	"net"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// ReplicaSet is a replica set member's part of the commands, implemented
// by package replset; Env.Repl is nil on a standalone, which answers the
// replSet commands with NoReplicationEnabled (76), as mongod started
// without --replSet does (monitoring tools such as mongodb_exporter read
// it as "standalone").
type ReplicaSet interface {
	// Hello is the member's part of hello: isWritablePrimary, secondary,
	// setName, hosts, primary, me, electionId, lastWrite and the like.
	Hello() bsoncore.Document
	// Topology is hello's topologyVersion counter and a channel closed
	// when it next changes (awaitable hello).
	Topology() (counter int64, changed <-chan struct{})
	// CanWrite is nil on the primary (NotWritablePrimary elsewhere);
	// CanRead is nil on the primary and, with secondaryOk, on a secondary.
	CanWrite() error
	CanRead(secondaryOk bool) error
	Initiate(ctx context.Context, cfg bsoncore.Document) error
	Reconfig(ctx context.Context, cfg bsoncore.Document, force bool) error
	StepDown(ctx context.Context, stepDownSecs, catchUpSecs int64) error
	Freeze(secs int64) (info string, err error)
	Status() (bsoncore.Document, error)
	ConfigDocument() (bsoncore.Document, error)
	// CheckWriteConcern refuses a w the set cannot satisfy before the
	// write runs; WaitWriteConcern waits after it as w and wtimeout ask
	// and returns the reply's writeConcernError (nil when satisfied).
	CheckWriteConcern(w bsoncore.Value) error
	// Linearize returns once this member, the primary, has applied every
	// write acknowledged before the call, confirmed by a quorum (read
	// concern linearizable); NotWritablePrimary elsewhere.
	Linearize(ctx context.Context) error
	WaitWriteConcern(ctx context.Context, w bsoncore.Value, wtimeout time.Duration) bsoncore.Document
}

func noReplication() error {
	return mongoerr.New(mongoerr.NoReplicationEnabled, "This node was not started with replication enabled.")
}

func cmdReplSetGetConfig(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
	}
	cfg, err := s.Env.Repl.ConfigDocument()
	if err != nil {
		return nil, err
	}
	r := NewReply(dst).Doc("config", cfg)
	if ok, err := req.Bool("commitmentStatus", false); err != nil {
		return nil, err
	} else if ok {
		// Every configuration is stored through the replicated log, so
		// the one a member holds is committed.
		r.Bool("commitmentStatus", true)
	}
	return r.Finish(), nil
}

func cmdReplSetGetStatus(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
	}
	st, err := s.Env.Repl.Status()
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	elems, _ := st.Elements()
	for _, el := range elems {
		r.Value(el.Key(), el.Value())
	}
	return r.Finish(), nil
}

// cmdReplSetInitiate: a configuration document, or none (rs.initiate()
// with no argument) for a set of this member alone, as mongod makes one.
func cmdReplSetInitiate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, noReplication()
	}
	cfg, _ := req.Body.Index(0).Value().DocumentOK()
	if len(cfg) <= 5 {
		host := s.Env.Config.BindIP
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		cfg = bsoncore.NewDocumentBuilder().
			AppendString("_id", s.Env.Config.ReplSetName).
			AppendArray("members", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
				AppendInt32("_id", 0).AppendString("host", net.JoinHostPort(host, strconv.Itoa(s.Env.Config.Port))).Build()).Build()).
			Build()
	}
	if err := s.Env.Repl.Initiate(ctx, cfg); err != nil {
		return nil, err
	}
	return NewReply(dst).Finish(), nil
}

func cmdReplSetReconfig(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, noReplication()
	}
	cfg, ok := req.Body.Index(0).Value().DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'replSetReconfig' is the wrong type, expected type 'object'")
	}
	force, err := req.Bool("force", false)
	if err != nil {
		return nil, err
	}
	if err := s.Env.Repl.Reconfig(ctx, cfg, force); err != nil {
		return nil, err
	}
	return NewReply(dst).Finish(), nil
}

func cmdReplSetStepDown(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, noReplication()
	}
	secs := int64(60)
	if v := req.Body.Index(0).Value(); v.Type != bsoncore.TypeBoolean {
		n, ok := numberAsInt(v)
		if !ok || n < 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "replSetStepDown takes a number of seconds, got %s", v)
		}
		if n > 0 {
			secs = n
		}
	}
	force, err := req.Bool("force", false)
	if err != nil {
		return nil, err
	}
	// As mongod: without secondaryCatchUpPeriodSecs, force waits for no
	// catch-up and a plain step-down waits up to 10 seconds.
	defCatchUp := int64(10)
	if force {
		defCatchUp = 0
	}
	catchUp, err := req.Int("secondaryCatchUpPeriodSecs", defCatchUp)
	if err != nil {
		return nil, err
	}
	if err := s.Env.Repl.StepDown(ctx, secs, catchUp); err != nil {
		if force && mongoerr.CodeOf(err) == mongoerr.ExceededTimeLimit {
			// mongod with force steps down even with no caught-up
			// secondary; a Raft leader steps down only by handing
			// leadership to a voter that has its log, so Cairn cannot.
			return nil, mongoerr.New(mongoerr.ExceededTimeLimit, "%v (force: true cannot step down without a caught-up voter to hand over to: Cairn's primary is the Raft leader)", err)
		}
		return nil, err
	}
	return NewReply(dst).Finish(), nil
}

func cmdReplSetFreeze(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Repl == nil {
		return nil, noReplication()
	}
	secs, ok := numberAsInt(req.Body.Index(0).Value())
	if !ok || secs < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "replSetFreeze takes a number of seconds")
	}
	info, err := s.Env.Repl.Freeze(secs)
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	if info != "" {
		r.String("info", info)
	}
	return r.Finish(), nil
}

// secondaryOk reports whether a command's $readPreference lets a
// secondary serve it: any mode but primary.
func secondaryOk(req *Request) bool {
	rp := argDoc(req, "$readPreference")
	if len(rp) == 0 {
		return false // (Lookup in a nil document allocates its error)
	}
	mode := rp.Lookup("mode")
	return mode.Type == bsoncore.TypeString && !stringIs(mode, "") && !stringIs(mode, "primary")
}

// argDoc is the document field name of req, nil when it is absent or not
// a document (the generic checks refused a wrong type already).
func argDoc(req *Request, name string) bsoncore.Document {
	v, ok := req.Arg(name)
	if !ok {
		return nil
	}
	d, _ := v.DocumentOK()
	return d
}

// withWriteConcernError returns reply with writeConcernError appended.
func withWriteConcernError(dst []byte, reply, wce bsoncore.Document) bsoncore.Document {
	r := NewReply(dst)
	elems, _ := reply.Elements()
	for _, el := range elems {
		r.Value(el.Key(), el.Value())
	}
	r.Doc("writeConcernError", wce)
	return r.Finish()
}

// errorDoc is err as a writeConcernError document: {code, codeName,
// errmsg}.
func errorDoc(err error) bsoncore.Document {
	code, msg := mongoerr.CodeOf(err), err.Error()
	if e, ok := mongoerr.As(err); ok {
		msg = e.Msg
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt32("code", int32(code)).
		AppendString("codeName", code.Name()).
		AppendString("errmsg", msg).
		Build()
}

// replWriteConcern reads w and wtimeout of a write's writeConcern.
func replWriteConcern(req *Request) (w bsoncore.Value, wtimeout time.Duration) {
	d := argDoc(req, "writeConcern")
	if d == nil {
		return bsoncore.Value{}, 0
	}
	w = d.Lookup("w")
	if n, ok := numberAsInt(d.Lookup("wtimeout")); ok && n > 0 {
		wtimeout = time.Duration(n) * time.Millisecond
	}
	return w, wtimeout
}

// replStateError finds, among a write reply's writeErrors, one a change
// of the member's state caused (it stopped being primary, or lost
// leadership with the outcome unknown) and returns it as the command's
// error, as MongoDB fails the whole command there: drivers retry on these
// codes and labels at the top level only.
func replStateError(reply bsoncore.Document) error {
	arr, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		d, _ := v.DocumentOK()
		code, _ := d.Lookup("code").AsInt64OK()
		msg, _ := d.Lookup("errmsg").StringValueOK()
		switch c := mongoerr.Code(code); c {
		case mongoerr.NotWritablePrimary, mongoerr.InterruptedAtShutdown:
			return mongoerr.New(c, "%s", msg)
		case mongoerr.InterruptedDueToReplStateChange:
			e := mongoerr.New(c, "%s", msg)
			e.Extra = []mongoerr.Field{{Name: "errorLabels", Value: bson.A{"RetryableWriteError"}}}
			return e
		}
	}
	return nil
}

// linearizable reports whether a command asks for readConcern
// linearizable.
func linearizable(req *Request) bool {
	rc := argDoc(req, "readConcern")
	return len(rc) > 0 && stringIs(rc.Lookup("level"), "linearizable") // without a string or an error allocated
}
