package commands

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// This file holds configureFailPoint and MongoDB's failCommand fail point
// (its semantics are those of mongod's CommandHelpers::
// evaluateFailCommandFailPoint and the drivers' specifications). Both exist
// only when the server starts with --setParameter enableTestCommands=1.

const failCommandName = "failCommand"

// failGetMoreName is mongod's failGetMoreAfterCursorCheckout: a getMore
// that has checked its cursor out fails with data.errorCode (InternalError
// without one) and the cursor is deleted, as mongod deletes a cursor whose
// getMore fails after the pin. Its appName and namespace (the cursor's)
// filters are failCommand's, with failCommands fixed to getMore.
const failGetMoreName = "failGetMoreAfterCursorCheckout"

// onPrimaryTxnWrite is mongod's onPrimaryTransactionalWrite: it fires in
// the commit of each retryable-write statement (an insert command's
// documents commit together, so once per insert command) on the primary.
// data.closeConnection (default true) closes the connection instead of
// replying, whether or not the write commits;
// data.failBeforeCommitExceptionCode fails the statement with that code
// before its write commits, so nothing of it is stored.
const onPrimaryTxnWrite = "onPrimaryTransactionalWrite"

// failCommandMsg is the message of every error failCommand produces.
const failCommandMsg = "Failing command via 'failCommand' failpoint"

// closeConnectionCode is the code mongod raises internally when failCommand
// closes a connection; the client never sees it.
const closeConnectionCode = mongoerr.FailCommandCloseConnection

// cmdConfigureFailPoint sets a named fail point's mode and data and answers
// how many times the point had fired: {count, ok: 1}.
func cmdConfigureFailPoint(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'configureFailPoint.configureFailPoint' is the wrong type '%s', expected type 'string'", typeName(req.First().Type))
	}
	p, ok := s.Env.FailPoints.Lookup(name)
	if !ok {
		return nil, mongoerr.New(mongoerr.FailPointSetFailed, "%s not found", name)
	}
	cfg, err := parseFailPointConfig(req)
	if err != nil {
		return nil, err
	}
	if cfg.Mode != failpoint.Off {
		if err := checkFailPointData(name, cfg.Data); err != nil {
			return nil, err
		}
	}
	entered := p.Set(cfg)
	s.Env.Log.Warn("Set failpoint", "failPointName", name, "mode", req.Body.Lookup("mode").String())
	return NewReply(dst).Count("count", entered).Finish(), nil
}

// parseFailPointConfig reads mode and data as mongod's FailPoint::parseBSON.
func parseFailPointConfig(req *Request) (failpoint.Config, error) {
	var cfg failpoint.Config
	mode, ok := req.Arg("mode")
	if !ok {
		return cfg, mongoerr.New(mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'")
	}
	switch mode.Type {
	case bsoncore.TypeString:
		switch m := mode.StringValue(); m {
		case "off":
			cfg.Mode = failpoint.Off
		case "alwaysOn":
			cfg.Mode = failpoint.AlwaysOn
		default:
			return cfg, mongoerr.New(mongoerr.BadValue, "unknown mode: %s", m)
		}
	case bsoncore.TypeEmbeddedDocument:
		m := mode.Document()
		count := func(field string, md failpoint.Mode) error {
			v := m.Lookup(field)
			n, ok := numberAsInt(v)
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "\"%s\" had the wrong type. Expected number, found %s", field, typeName(v.Type))
			}
			if n < 0 {
				return mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' must be positive", field)
			}
			if n > 1<<31-1 {
				return mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' is too large", field)
			}
			cfg.Mode, cfg.N = md, n
			return nil
		}
		switch {
		case has(m, "times"):
			if err := count("times", failpoint.Times); err != nil {
				return cfg, err
			}
		case has(m, "skip"):
			if err := count("skip", failpoint.Skip); err != nil {
				return cfg, err
			}
		case has(m, "activationProbability"):
			p, ok := bsonx.AsFloat64(m.Lookup("activationProbability"))
			if !ok {
				return cfg, mongoerr.New(mongoerr.TypeMismatch, "the 'activationProbability' option to 'mode' must be a double between 0 and 1")
			}
			if p < 0 || p > 1 {
				return cfg, mongoerr.New(mongoerr.BadValue, "activationProbability must be between 0.0 and 1.0; found %v", p)
			}
			cfg.Mode, cfg.P = failpoint.Probability, p
		default:
			return cfg, mongoerr.New(mongoerr.BadValue, "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'")
		}
	default:
		return cfg, mongoerr.New(mongoerr.TypeMismatch, "'mode' must be a string or JSON object")
	}
	if v, ok := req.Arg("data"); ok {
		d, ok := v.DocumentOK()
		if !ok {
			return cfg, mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		cfg.Data = append([]byte(nil), d...)
	}
	return cfg, nil
}

func has(d bsoncore.Document, field string) bool {
	_, err := d.LookupErr(field)
	return err == nil
}

// failPointFields are the data fields each fail point the drivers' tests
// set honours. mongod ignores unknown fields; Cairn refuses them, so a
// test never runs believing a filter or an effect is in place when it is
// not ("never say yes and do nothing"). failInternalCommands and
// failLocalClients widen the filter to clients Cairn does not have (other
// servers' connections, in-process direct clients), so either value is
// honoured as given.
var failPointFields = map[string][]string{
	failCommandName: {"failCommands", "failAllCommands", "errorCode", "closeConnection", "blockConnection",
		"blockTimeMS", "writeConcernError", "errorLabels", "appName", "namespace",
		"errorExtraInfo", "failInternalCommands", "failLocalClients"},
	failGetMoreName:              {"errorCode", "appName", "namespace", "failInternalCommands", "failLocalClients"},
	onPrimaryTxnWrite:            {"closeConnection", "failBeforeCommitExceptionCode"},
	overrideBalanceRoundInterval: {"intervalMs"},
}

// overrideBalanceRoundInterval is shardsvr's point of that name: the
// balancer's wait between rounds, data {intervalMs: a positive number}.
const overrideBalanceRoundInterval = "overrideBalanceRoundInterval"

// checkFailPointData refuses data fields the point does not honour.
// Points without a list (the storage points) take none.
func checkFailPointData(name string, data bsoncore.Document) error {
	if name == overrideBalanceRoundInterval {
		if ms, ok := data.Lookup("intervalMs").AsInt64OK(); !ok || ms <= 0 {
			return mongoerr.New(mongoerr.BadValue, "%s needs data {intervalMs: a positive number of milliseconds}", name)
		}
	}
	if data == nil {
		return nil
	}
	elems, err := data.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.BadValue, "invalid %s data: %v", name, err)
	}
	fields, ok := failPointFields[name]
	if !ok {
		return nil
	}
	for _, el := range elems {
		if !slices.Contains(fields, el.Key()) {
			return mongoerr.New(mongoerr.BadValue, "%s data field '%s' is not supported by Cairn", name, el.Key())
		}
	}
	return nil
}

// commandAliases maps each alias to its command's canonical name: a
// failCommands entry names a command by any of its names, as mongod's
// Command::hasAlias does (hello, isMaster and ismaster are one command).
var commandAliases = map[string]string{
	"isMaster":      "hello",
	"ismaster":      "hello",
	"buildinfo":     "buildInfo",
	"dbstats":       "dbStats",
	"findandmodify": "findAndModify",
}

func canonicalCommand(name string) string {
	if c, ok := commandAliases[name]; ok {
		return c
	}
	return name
}

// failCommandMatches is mongod's shouldActivateFailCommandFailPoint: the
// command is named by failCommands (or failAllCommands), and the appName
// and namespace filters, when given, match this connection and command.
// configureFailPoint itself never fails.
func failCommandMatches(s *Session, req *Request, data bsoncore.Document) bool {
	name := canonicalCommand(req.Name)
	if name == "configureFailPoint" || !clientMatches(s, commandNamespace(req), data) {
		return false
	}
	if has(data, "failAllCommands") {
		return true
	}
	list, _ := data.Lookup("failCommands").ArrayOK()
	vals, _ := list.Values()
	for _, v := range vals {
		if n, ok := v.StringValueOK(); ok && canonicalCommand(n) == name {
			return true
		}
	}
	return false
}

// clientMatches applies a fail point's appName and namespace filters,
// when given, to this connection and namespace.
func clientMatches(s *Session, ns string, data bsoncore.Document) bool {
	if v, err := data.LookupErr("appName"); err == nil {
		if app, _ := v.StringValueOK(); app != s.AppName() {
			return false
		}
	}
	if v, err := data.LookupErr("namespace"); err == nil {
		if want, _ := v.StringValueOK(); want != ns {
			return false
		}
	}
	return true
}

// commandNamespace is the namespace mongod's invocation->ns() gives a
// command: db.collection for a collection command, the getMore's
// collection, or the database alone.
func commandNamespace(req *Request) string {
	if req.Name == "getMore" {
		if c, err := req.String("collection", ""); err == nil && c != "" {
			return req.DB + "." + c
		}
	}
	if c, ok := req.First().StringValueOK(); ok {
		return req.DB + "." + c
	}
	return req.DB
}

func dataBool(data bsoncore.Document, field string) bool {
	v, err := data.LookupErr(field)
	if err != nil {
		return false
	}
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	f, ok := bsonx.AsFloat64(v)
	return ok && f != 0
}

func dataErrorCode(data bsoncore.Document) (mongoerr.Code, bool) {
	v, err := data.LookupErr("errorCode")
	if err != nil {
		return 0, false
	}
	n, ok := numberAsInt(v)
	return mongoerr.Code(n), ok
}

// dataLabels is data.errorLabels as a BSON array of strings; nil without.
func dataLabels(data bsoncore.Document) bson.A {
	arr, ok := data.Lookup("errorLabels").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	labels := bson.A{}
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok {
			labels = append(labels, s)
		}
	}
	return labels
}

// runCommand runs cmd, applying failCommand around it when the point is on:
// before the command, a matching point with closeConnection, blockConnection
// or errorCode blocks, closes the connection or fails the command (its
// errorLabels replace any label the server would add); after a command that
// takes a write concern, a matching point with writeConcernError adds it
// (and errorLabels) to the reply. Each of the two is one evaluation of the
// point's mode, as in mongod.
func runCommand(ctx context.Context, s *Session, req *Request, cmd *command, dst []byte) (bsoncore.Document, error) {
	fp := s.Env.failCommand
	if !fp.Active() {
		return cmd.run(ctx, s, req, dst)
	}
	var labels bson.A
	data, fire := fp.Eval(func(d []byte) bool {
		data := bsoncore.Document(d)
		_, hasCode := dataErrorCode(data)
		return failCommandMatches(s, req, data) &&
			(hasCode || dataBool(data, "closeConnection") || dataBool(data, "blockConnection"))
	})
	if fire {
		d := bsoncore.Document(data)
		labels = dataLabels(d)
		s.labelsSet = has(d, "errorLabels")
		if dataBool(d, "blockConnection") {
			ms, ok := numberAsInt(d.Lookup("blockTimeMS"))
			if !ok {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
			}
			if ms < 0 {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "'blockTimeMS' must be non-negative")
			}
			s.Env.Log.Info("Blocking command via 'failCommand' failpoint", "command", req.Name, "blockTime", ms)
			if err := sleepCtx(ctx, time.Duration(ms)*time.Millisecond); err != nil {
				return nil, err
			}
		}
		if dataBool(d, "closeConnection") {
			s.hangUp = true
			return nil, mongoerr.New(closeConnectionCode, failCommandMsg)
		}
		if code, ok := dataErrorCode(d); ok {
			e := &mongoerr.Error{Code: code, Msg: failCommandMsg}
			if info, ok := d.Lookup("errorExtraInfo").DocumentOK(); ok {
				elems, _ := info.Elements()
				for _, el := range elems {
					e.Extra = append(e.Extra, mongoerr.Field{Name: el.Key(), Value: bson.RawValue{Type: bson.Type(el.Value().Type), Value: el.Value().Data}})
				}
			}
			return nil, withLabels(e, labels)
		}
	}
	out, err := cmd.run(ctx, s, req, dst)
	if labels != nil && err != nil {
		err = withLabels(err, labels)
	}
	if !takesWriteConcern(req.Name) {
		return out, err
	}
	data, fire = fp.Eval(func(d []byte) bool {
		return failCommandMatches(s, req, d) && has(d, "writeConcernError")
	})
	if !fire {
		return out, err
	}
	d := bsoncore.Document(data)
	wce := d.Lookup("writeConcernError")
	extra := []mongoerr.Field{{Name: "writeConcernError", Value: bson.RawValue{Type: bson.Type(wce.Type), Value: wce.Data}}}
	if l := dataLabels(d); len(l) > 0 {
		extra = append(extra, mongoerr.Field{Name: "errorLabels", Value: l})
	}
	s.labelsSet = s.labelsSet || has(d, "errorLabels")
	if err != nil {
		e, ok := mongoerr.As(err)
		if !ok {
			return out, err
		}
		cp := *e
		cp.Extra = append(append([]mongoerr.Field(nil), e.Extra...), extra...)
		return nil, &cp
	}
	return appendBeforeOK(dst, out, extra), nil
}

// withLabels returns err with errorLabels set to labels, replacing any the
// error carried; an empty list leaves the reply without errorLabels.
func withLabels(err error, labels bson.A) error {
	e, ok := mongoerr.As(err)
	if !ok {
		e = &mongoerr.Error{Code: mongoerr.InternalError, Msg: err.Error()}
	}
	cp := *e
	cp.Extra = nil
	for _, f := range e.Extra {
		if f.Name != "errorLabels" {
			cp.Extra = append(cp.Extra, f)
		}
	}
	if len(labels) > 0 {
		cp.Extra = append(cp.Extra, mongoerr.Field{Name: "errorLabels", Value: labels})
	}
	return &cp
}

// appendBeforeOK rebuilds reply (built just past the end of dst, in its
// spare capacity) at the end of dst with fields added before its ok field,
// where mongod appends them.
func appendBeforeOK(dst []byte, reply bsoncore.Document, fields []mongoerr.Field) bsoncore.Document {
	orig := append([]byte(nil), reply...) // the rebuild overwrites reply
	r := NewReply(dst)
	elems, _ := bsoncore.Document(orig).Elements()
	var ok bsoncore.Value
	hasOK := false
	for _, el := range elems {
		if el.Key() == "ok" {
			ok, hasOK = el.Value(), true
			continue
		}
		r.Value(el.Key(), el.Value())
	}
	for _, f := range fields {
		r.Any(f.Name, f.Value)
	}
	if hasOK {
		r.Value("ok", ok)
	}
	return r.End()
}

// takesWriteConcern lists the commands that accept a write concern, after
// which failCommand's writeConcernError applies.
func takesWriteConcern(name string) bool {
	switch canonicalCommand(name) {
	case "insert", "update", "delete", "findAndModify", "create", "drop", "dropDatabase",
		"createIndexes", "dropIndexes", "collMod", "renameCollection",
		"setFeatureCompatibilityVersion", "dropAllUsersFromDatabase":
		return true
	}
	return false
}

// sleepCtx waits d or until ctx ends, with why it ended (opctx.Err:
// maxTimeMS, killOp, a client gone).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return opctx.Err(ctx)
	}
}

// cmdWaitForFailPoint waits until a fail point has fired timesEntered times
// in all, within maxTimeMS (required, as in mongod; Run made it ctx's
// deadline).
func cmdWaitForFailPoint(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'waitForFailPoint.waitForFailPoint' is the wrong type '%s', expected type 'string'", typeName(req.First().Type))
	}
	if _, ok := req.Arg("timesEntered"); !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'waitForFailPoint.timesEntered' is missing but a required field")
	}
	target, err := req.Int("timesEntered", 0)
	if err != nil {
		return nil, err
	}
	if _, ok := req.Arg("maxTimeMS"); !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing maxTimeMS")
	}
	p, ok := s.Env.FailPoints.Lookup(name)
	if !ok {
		return nil, mongoerr.New(mongoerr.FailPointSetFailed, "%s not found", name)
	}
	for p.Entered() < target {
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return OK(dst), nil
}

// failGetMoreAfterCheckout evaluates failGetMoreAfterCursorCheckout for a
// getMore on a cursor of namespace ns that has passed its checks: the error
// to fail it with, or nil. The caller deletes the cursor on an error.
func failGetMoreAfterCheckout(s *Session, ns string) error {
	fp := s.Env.failGetMore
	if !fp.Active() {
		return nil
	}
	data, fire := fp.Eval(func(d []byte) bool { return clientMatches(s, ns, d) })
	if !fire {
		return nil
	}
	code := mongoerr.InternalError
	if c, ok := dataErrorCode(data); ok {
		code = c
	}
	return mongoerr.New(code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint")
}

// onPrimaryTransactionalWrite evaluates the point in the commit request of
// a retryable-write statement (from its rider): it may mark the connection
// for closing and may fail the statement before it commits.
func onPrimaryTransactionalWrite(s *Session) error {
	fp := s.Env.onPrimaryTxnWrite
	if !fp.Active() {
		return nil
	}
	data, fire := fp.Eval(nil)
	if !fire {
		return nil
	}
	d := bsoncore.Document(data)
	if !has(d, "closeConnection") || dataBool(d, "closeConnection") {
		s.hangUp = true
	}
	if v, err := d.LookupErr("failBeforeCommitExceptionCode"); err == nil {
		n, _ := numberAsInt(v)
		return mongoerr.New(mongoerr.Code(n), "Failing write due to the 'onPrimaryTransactionalWrite' failpoint. The write must not be reflected.")
	}
	return nil
}
