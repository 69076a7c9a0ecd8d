package commands

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// This file owns what MongoDB's CurOp debug info is for: the figures of the
// command in progress (opStats, filled by the handlers that have them), the
// slow-operation log line ("Slow query", at info level, for a command slower
// than slowms) and the database profiler, which writes the same figures to
// <db>.system.profile for databases at level 1 (slow commands) or 2 (all).
//
// Invariant "Off costs one load": with no database profiled and no filter
// set, deciding that a command is neither logged nor profiled is a
// comparison of its duration with slowms and one atomic load; nothing is
// built.
//
// Deviations from MongoDB: system.profile is an ordinary collection that
// Cairn bounds itself (the oldest entries are deleted past profileCapBytes,
// MongoDB's default 1 MB), because capped collections are not on main yet;
// its entries therefore carry an _id. numYield is always 0 and locks is {}
// (Cairn has no yielding lock manager to report).

// DefaultSlowMS is MongoDB's slowms default.
const DefaultSlowMS = 100

// profileCapBytes is the size of the capped system.profile the profiler
// creates in a database that has none, MongoDB's default (1 MB). A user may
// create it first with another size, as in MongoDB.
const profileCapBytes = 1 << 20

// profileColl is the profiler's collection in each database.
const profileColl = engine.ProfileCollection

// opStats are the figures of one command that the slow-operation log and
// the profiler report; Run clears them before each command.
type opStats struct {
	plan                       *planner.Exec // the plan that ran (planSummary), if any
	express                    bool          // the find took the express path (express.go): IDHACK
	keysExamined, docsExamined int64
	nreturned                  int64
	reads                      bool // keysExamined, docsExamined, nreturned are set
	ninserted, ndeleted        int64
	nMatched, nModified        int64
	writes                     uint8 // which of the write counts are set (writeInserted…)
	cursorID                   int64
	cursorExhausted            bool
}

const (
	writeInserted uint8 = 1 << iota
	writeDeleted
	writeUpdated
)

// planOf is the planner.Exec under a cursor's source, if it is one.
func planOf(src agg.Source) *planner.Exec {
	switch s := src.(type) {
	case *planner.Exec:
		return s
	case *boundSource:
		return planOf(s.Source)
	}
	return nil
}

// readPlan records what a batch of n documents read from plan, given the
// figures the plan had reached before (a cursor's earlier batches).
func (st *opStats) readPlan(plan *planner.Exec, n int64, before [2]int64) (now [2]int64) {
	st.reads = true
	st.nreturned = n
	if plan == nil {
		return before
	}
	st.plan = plan
	keys, docs := plan.Examined()
	st.keysExamined, st.docsExamined = keys-before[0], docs-before[1]
	return [2]int64{keys, docs}
}

// Profiler holds the profiler settings: slowms and sampleRate are the
// server's, level and filter each database's (profile command).
type Profiler struct {
	slowMS     atomic.Int64
	sampleRate atomic.Uint64 // float64 bits
	// active counts databases with a level above 0 or a filter: with none,
	// observe decides from the duration alone.
	active atomic.Int32

	mu  sync.RWMutex
	dbs map[string]dbProfile
	// defaultLevel is the level of every database the profile command has
	// not set (--profile, operationProfiling.mode); dbs holds only the
	// databases that differ from it.
	defaultLevel int
}

// dbProfile is one database's profiler setting.
type dbProfile struct {
	level     int
	filter    *query.Filter
	filterDoc bsoncore.Document
}

func newProfiler() *Profiler {
	p := &Profiler{dbs: map[string]dbProfile{}}
	p.slowMS.Store(DefaultSlowMS)
	p.sampleRate.Store(math.Float64bits(1))
	return p
}

// SlowMS is the slow-operation threshold in milliseconds.
func (p *Profiler) SlowMS() int64 { return p.slowMS.Load() }

// SetSlowMS sets the slow-operation threshold (--slowms, profile's slowms).
func (p *Profiler) SetSlowMS(ms int64) { p.slowMS.Store(ms) }

// SampleRate is the fraction of slow operations logged and profiled.
func (p *Profiler) SampleRate() float64 { return math.Float64frombits(p.sampleRate.Load()) }

// SetSampleRate sets the fraction of slow operations logged and profiled.
func (p *Profiler) SetSampleRate(r float64) { p.sampleRate.Store(math.Float64bits(r)) }

// Setting is db's level and filter.
func (p *Profiler) Setting(db string) (level int, filter bsoncore.Document) {
	if p.active.Load() == 0 {
		return 0, nil
	}
	d := p.lookup(db)
	return d.level, d.filterDoc
}

// SetDefaultLevel sets the profiling level of every database the profile
// command has not set (mongod's --profile).
func (p *Profiler) SetDefaultLevel(level int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.defaultLevel = level
	p.storeActive()
}

// storeActive recounts active; p.mu is held.
func (p *Profiler) storeActive() {
	n := len(p.dbs)
	if p.defaultLevel > 0 {
		n++
	}
	p.active.Store(int32(n))
}

// Set changes db's level and, when setFilter, its filter (nil: none).
func (p *Profiler) Set(db string, level int, setFilter bool, filter bsoncore.Document) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.dbs[db]
	if !ok {
		d.level = p.defaultLevel
	}
	if setFilter {
		d.filter, d.filterDoc = nil, nil
		if filter != nil {
			own := append(bsoncore.Document(nil), filter...) // the request's buffer is reused
			f, err := query.Parse(own)
			if err != nil {
				return err
			}
			d.filter, d.filterDoc = f, own
		}
	}
	if level >= 0 {
		d.level = level
	}
	if d.level == p.defaultLevel && d.filter == nil {
		delete(p.dbs, db)
	} else {
		p.dbs[db] = d
	}
	p.storeActive()
	return nil
}

func (p *Profiler) lookup(db string) dbProfile {
	p.mu.RLock()
	d, ok := p.dbs[db]
	if !ok {
		d.level = p.defaultLevel
	}
	p.mu.RUnlock()
	return d
}

// observe is called by Run after every command: it counts the command
// (usage.go), logs it when it was slow and profiles it when its database's
// level asks for it.
func (e *Env) observe(ctx context.Context, s *Session, req *Request, cmd *command, dur time.Duration, reply bsoncore.Document, err error) {
	ns := countedNS(s.nsBuf, req, cmd)
	if ns != nil {
		s.nsBuf = ns
	}
	e.Usage.record(req.Name, classOf(req.Name), elapsedMicros(dur), ns, &s.stat, &s.usage)
	if err == nil && s.sampleShape() { // shapes.go
		if s.stat.express {
			e.Shapes.recordExpress(s, req, &s.stat)
		} else {
			e.Shapes.record(reqNS(req), req.Body, &s.stat)
		}
	}
	p := e.Profiler
	slow := dur.Milliseconds() > p.SlowMS()
	if !slow && p.active.Load() == 0 {
		return // invariant "Off costs one load"
	}
	var setting dbProfile
	if p.active.Load() != 0 {
		setting = p.lookup(req.DB)
	}
	logIt, profileIt := false, false
	if setting.filter != nil && !isProfileNS(req) {
		// A filter replaces slowms and sampleRate for both (profile's doc).
		entry := e.profileEntry(s, req, dur, reply, err)
		if setting.filter.Match(entry) {
			logIt, profileIt = true, setting.level > 0
			if profileIt {
				e.writeProfile(ctx, req.DB, entry)
			}
		}
		if logIt {
			e.logSlow(s, req, dur, reply, err)
		}
		return
	}
	sampled := slow && (p.SampleRate() >= 1 || rand.Float64() < p.SampleRate())
	logIt = sampled
	profileIt = setting.level == 2 || setting.level == 1 && sampled
	if profileIt && !isProfileNS(req) {
		e.writeProfile(ctx, req.DB, e.profileEntry(s, req, dur, reply, err))
	}
	if logIt {
		e.logSlow(s, req, dur, reply, err)
	}
}

// isProfileNS: commands on system.profile itself are not profiled (their
// entries would feed on themselves).
func isProfileNS(req *Request) bool {
	c, _ := req.First().StringValueOK()
	return c == profileColl
}

// reqNS is the namespace a command acts on, as the log and profiler name
// it: db.collection when its first field (or getMore's collection) names
// one, db.$cmd otherwise.
func reqNS(req *Request) string {
	c, _ := req.First().StringValueOK()
	if req.Name == "getMore" {
		c, _ = req.String("collection", "")
	}
	if c == "" {
		c = "$cmd"
	}
	return req.DB + "." + c
}

// profileOp is the profiler's op field: currentOp's kind (opKind).
func profileOp(name string) string { return opKind(name) }

// profileEntry builds the command's system.profile document, in MongoDB's
// field order; numbers are int32 when they fit, as mongod's appendNumber
// writes them (the shell shows a Long otherwise).
func (e *Env) profileEntry(s *Session, req *Request, dur time.Duration, reply bsoncore.Document, err error) bsoncore.Document {
	st := &s.stat
	r := NewReply(nil)
	r.String("op", profileOp(req.Name))
	r.String("ns", reqNS(req))
	r.Doc("command", req.Body)
	if st.cursorID != 0 {
		r.Int64("cursorid", st.cursorID)
	}
	if st.reads {
		r.Count("keysExamined", st.keysExamined)
		r.Count("docsExamined", st.docsExamined)
		if st.cursorExhausted {
			r.Bool("cursorExhausted", true)
		}
	}
	if st.writes&writeUpdated != 0 {
		r.Count("nMatched", st.nMatched)
		r.Count("nModified", st.nModified)
	}
	if st.writes&writeInserted != 0 {
		r.Count("ninserted", st.ninserted)
	}
	if st.writes&writeDeleted != 0 {
		r.Count("ndeleted", st.ndeleted)
	}
	r.Int32("numYield", 0)
	if st.reads {
		r.Count("nreturned", st.nreturned)
	}
	if p, ok := st.planSummary(); ok {
		r.String("planSummary", p)
	}
	r.Doc("locks", doc())
	if err != nil {
		code := mongoerr.CodeOf(err)
		r.Double("ok", 0)
		r.String("errMsg", err.Error())
		r.String("errName", code.Name())
		r.Int32("errCode", int32(code))
	}
	r.Int32("responseLength", int32(len(reply)))
	r.String("protocol", "op_msg")
	r.Count("millis", dur.Milliseconds())
	r.Any("ts", bson.DateTime(time.Now().UnixMilli()))
	r.String("client", clientHost(s.Remote))
	if app := s.AppName(); app != "" {
		r.String("appName", app)
	}
	r.Any("allUsers", bson.A{})
	r.String("user", "")
	return r.End()
}

// clientHost is the client's address without its port, as the profiler's
// client field shows it.
func clientHost(remote string) string {
	for i := len(remote) - 1; i >= 0; i-- {
		if remote[i] == ':' {
			return remote[:i]
		}
	}
	return remote
}

// writeProfile appends entry to db's system.profile, creating it capped
// (profileCapBytes) when the database has none, so the oldest entries leave
// in the insert's own commit. A failure is logged, never the command's.
func (e *Env) writeProfile(ctx context.Context, db string, entry bsoncore.Document) {
	d := make(bsoncore.Document, 0, len(entry)+17)
	i, d := bsoncore.AppendDocumentStart(d)
	d = bsoncore.AppendObjectIDElement(d, "_id", bson.NewObjectID())
	d = append(d, entry[4:len(entry)-1]...)
	d, _ = bsoncore.AppendDocumentEnd(d, i)
	ns := engine.Namespace{DB: db, Coll: profileColl}
	var err error
	if e.Engine.Catalog().Collection(ns.DB, ns.Coll) == nil {
		err = e.Engine.CreateCollection(ns, cappedOptionsDoc(profileCapBytes))
		if mongoerr.CodeOf(err) == mongoerr.NamespaceExists {
			err = nil // created meanwhile, by another entry or the user
		}
	}
	if err == nil {
		var res engine.InsertResult
		res, err = e.Exec.Insert(ns, []bsoncore.Document{d}, engine.InsertOptions{})
		if err == nil && len(res.WriteErrors) > 0 {
			err = res.WriteErrors[0].Err
		}
	}
	if err != nil {
		e.Log.Warn("profiler write failed", "ns", ns.String(), "error", err.Error())
	}
}

// logSlow writes the "Slow query" line, in MongoDB's structured shape: the
// attributes under attr, the component c and message id beside msg.
func (e *Env) logSlow(s *Session, req *Request, dur time.Duration, reply bsoncore.Document, err error) {
	st := &s.stat
	attrs := make([]any, 0, 24)
	attrs = append(attrs, slog.String("type", "command"), slog.String("ns", reqNS(req)))
	if app := s.AppName(); app != "" {
		attrs = append(attrs, slog.String("appName", app))
	}
	attrs = append(attrs, slog.Any("command", extJSON(req.Body)))
	if p, ok := st.planSummary(); ok {
		attrs = append(attrs, slog.String("planSummary", p))
	}
	if st.cursorID != 0 {
		attrs = append(attrs, slog.Int64("cursorid", st.cursorID))
	}
	if st.reads {
		attrs = append(attrs, slog.Int64("keysExamined", st.keysExamined), slog.Int64("docsExamined", st.docsExamined))
		if st.cursorExhausted {
			attrs = append(attrs, slog.Bool("cursorExhausted", true))
		}
	}
	if st.writes&writeUpdated != 0 {
		attrs = append(attrs, slog.Int64("nMatched", st.nMatched), slog.Int64("nModified", st.nModified))
	}
	if st.writes&writeInserted != 0 {
		attrs = append(attrs, slog.Int64("ninserted", st.ninserted))
	}
	if st.writes&writeDeleted != 0 {
		attrs = append(attrs, slog.Int64("ndeleted", st.ndeleted))
	}
	attrs = append(attrs, slog.Int("numYields", 0))
	if st.reads {
		attrs = append(attrs, slog.Int64("nreturned", st.nreturned))
	}
	if err != nil {
		code := mongoerr.CodeOf(err)
		attrs = append(attrs, slog.Int("ok", 0), slog.String("errMsg", err.Error()),
			slog.String("errName", code.Name()), slog.Int("errCode", int(code)))
	}
	attrs = append(attrs, slog.Int("reslen", len(reply)), slog.String("remote", s.Remote),
		slog.String("protocol", "op_msg"), slog.Int64("durationMillis", dur.Milliseconds()))
	e.Log.Info("Slow query", slog.String("c", "COMMAND"), slog.Int("id", 51803),
		slog.String("ctx", "conn"+strconv.FormatInt(s.ConnID, 10)), slog.Group("attr", attrs...))
}

// extJSON is d as relaxed Extended JSON, which the JSON log embeds as an
// object (MongoDB's log shows the command as a document).
func extJSON(d bsoncore.Document) json.RawMessage {
	b, err := bson.MarshalExtJSON(bson.Raw(d), false, false)
	if err != nil {
		return json.RawMessage(strconv.Quote(d.String()))
	}
	return b
}
