package commands

import (
	"crypto/x509"
	"encoding/binary"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/clusterkeys"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/history"
	"github.com/cairndb/cairn/internal/periodic"
	"github.com/cairndb/cairn/internal/session"
	"github.com/cairndb/cairn/internal/ttl"
)

// Compatibility: what Cairn tells drivers it is (DESIGN.md §6). Drivers and
// mongosh switch features on these numbers, so they must tell the truth.
const (
	MongoVersion      = "7.0.14"
	MaxWireVersion    = 21
	MinWireVersion    = 0
	MaxBSONObjectSize = 16 * 1024 * 1024
	MaxMessageSize    = 48_000_000
	MaxWriteBatchSize = 100_000
	// LogicalSessionTimeoutMinutes is MongoDB's default; drivers need a
	// number here to use sessions (never null).
	LogicalSessionTimeoutMinutes = 30
)

// MongoVersionArray is MongoVersion as buildInfo's versionArray.
var MongoVersionArray = []int32{7, 0, 14, 0}

// Config is what the process was started with, for getCmdLineOpts,
// hostInfo and hello.
type Config struct {
	Port        int
	BindIP      string
	DBPath      string
	Argv        []string
	Compressors []string // in preference order, e.g. snappy, zstd, zlib
	CairnVer    string
	// Auth enforces access control (--auth): users must authenticate and
	// hold the privileges a command needs (auth.go).
	Auth bool
	// Given are the options given in the config file and as flags, each
	// as its config file path and value as given, in order
	// (getCmdLineOpts's parsed; "config" is the file's own path).
	Given [][2]string
	// ReplSetName is --replSet ("" on a standalone).
	ReplSetName string
}

// Env is the process-wide state commands share: the engine, cursors,
// parameters, counters. One per server.
type Env struct {
	Engine *engine.Engine
	// Exec runs reads and writes over Engine and owns the plan cache.
	Exec    *exec.Env
	Cursors *Cursors
	Params  *Params
	Config  Config
	Log     *slog.Logger
	Started time.Time
	// ProcessID identifies this server run in hello's topologyVersion.
	ProcessID bson.ObjectID

	// Profiler holds slowms, sampleRate and each database's profiling
	// level (profiler.go).
	Profiler *Profiler
	// Usage counts every command: latencies, documents, per-collection
	// time (usage.go).
	Usage Usage
	// Shapes is the sampled record of query shapes the advisor reads
	// (shapes.go).
	Shapes *QueryShapes

	Connections ConnCounters
	Ops         OpCounters
	Network     NetCounters
	// Logs keeps recent log lines for getLog (nil: none kept).
	Logs *LogRing
	// TTL is the TTL monitor, started with the Env (params.go).
	TTL *ttl.Monitor
	// History is the retention monitor of versioned collections, started
	// with the Env on the TTL monitor's period (params.go).
	History *history.Monitor
	// Keys sign and validate cluster times (clustertime.go); keyLoop makes
	// them on the primary.
	Keys    *clusterkeys.Keys
	keyLoop *periodic.Loop
	// userLoop reloads users and roles on a secondary.
	userLoop *periodic.Loop
	// Audit is the audit log (nil: none; audit.go). Set it before serving.
	Audit *audit.Log
	// FailPoints are the server's named fail points (the engine's and
	// failCommand), set by configureFailPoint when test commands are on.
	FailPoints        *failpoint.Registry
	failCommand       *failpoint.Point
	failGetMore       *failpoint.Point // failGetMoreAfterCursorCheckout
	onPrimaryTxnWrite *failpoint.Point // onPrimaryTransactionalWrite
	// startupParams are the --setParameter settings, name and value as
	// given, for getCmdLineOpts (params_startup.go).
	startupParams [][2]string
	// Repl is the replica set member this server is (cmd_repl.go); nil
	// on a standalone. Set with SetReplicaSet, before the server serves.
	Repl ReplicaSet
	// Sharding is this server's shard or config server role (sharding.go);
	// nil on a server that is neither. Set before the server serves.
	Sharding Sharding
	repl     atomic.Value // Repl, for the TTL monitor's goroutine
	// Access is the users and whether access control is on (auth.go).
	Access *Access
	// Sessions is the logical session table (package session, sessions.go).
	Sessions *session.Table
	// clusterTimes: replies carry cluster times, as a replica-set
	// member's do (clustertime.go).
	clusterTimes atomic.Bool
	// startupWarnings are getLog's startupWarnings lines (auth.go).
	startupWarnings []string
	// Process stops the server and rotates its log (nil: embedded).
	Process Process
	// fsync counts the fsync locks held (cmd_fsync.go).
	fsync fsyncLock
	// noExpress turns the express path of a find off (express.go; tests
	// compare the two paths), and expressReads, when set, counts the finds
	// it answered (tests).
	noExpress    bool
	expressReads *atomic.Int64
	// changeStreams counts the open change stream cursors, for their
	// getMores' pace (changestream.go).
	changeStreams atomic.Int64
	// paceTicks are the times the paced getMores of change streams wait
	// for, shared so that their batches go together (changestream.go).
	paceTicks paceTicks
	// largeEventsSplit and largeEventsFailed are serverStatus'
	// metrics.changeStreams: the events $changeStreamSplitLargeEvent split,
	// and those that failed a stream for their size (changestream.go).
	largeEventsSplit, largeEventsFailed atomic.Int64
	// preImageLoop removes expired change stream pre-images
	// (cmd_clusterparameter.go).
	preImageLoop *periodic.Loop
}

// SetReplicaSet makes the server the member rs (before it serves).
func (e *Env) SetReplicaSet(rs ReplicaSet) {
	e.Repl = rs
	e.repl.Store(rs)
	// A member serves snapshot reads of plain collections at a cluster
	// time (engine snapshot_history.go); a standalone refuses them.
	e.Engine.AllowSnapshotHistory()
	// A member's replies carry operationTime and $clusterTime, and it
	// takes afterClusterTime (clustertime.go), as a replica set member does.
	e.SetClusterTimes(true)
}

// ConnCounters count client connections for serverStatus.
type ConnCounters struct {
	Current      atomic.Int64
	TotalCreated atomic.Int64
	Available    atomic.Int64
	// Rejected counts connections closed at accept because the server was
	// at its limit (--max-conns), serverStatus.connections.rejected.
	Rejected atomic.Int64
}

// NetCounters count wire traffic for serverStatus.network: messages and
// their bytes as the protocol sees them (before compression).
type NetCounters struct {
	BytesIn, BytesOut, NumRequests atomic.Int64
}

// Request counts one received message of n bytes.
func (n *NetCounters) Request(bytes int64) {
	n.BytesIn.Add(bytes)
	n.NumRequests.Add(1)
}

// OpCounters count operations for serverStatus.opcounters.
type OpCounters struct {
	Insert, Query, Update, Delete, GetMore, Command atomic.Int64
	// UserErrors counts commands answered with an error (serverStatus
	// asserts.user, which mongod counts the same way).
	UserErrors atomic.Int64
}

// NewEnv assembles the shared state for a server over eng.
func NewEnv(eng *engine.Engine, cfg Config, log *slog.Logger) *Env {
	if log == nil {
		log = slog.Default()
	}
	if cfg.DBPath == "" {
		cfg.DBPath, _ = os.Getwd()
	}
	params := NewParams()
	defineIDParams(params, eng)
	env := &Env{
		Engine:    eng,
		Exec:      exec.New(eng),
		Cursors:   NewCursors(),
		Params:    params,
		Config:    cfg,
		Log:       log,
		Started:   time.Now(),
		ProcessID: bson.NewObjectID(),
		Profiler:  newProfiler(),
		Shapes:    newQueryShapes(),
	}
	env.Usage.initCommands()
	env.Sessions = session.NewTable(eng, nil)
	env.Sessions.OnKill(env.Cursors.closeSessionCursors)
	defineTxnParams(env)
	env.FailPoints = eng.FailPoints()
	env.failCommand = env.FailPoints.Define(failCommandName)
	env.FailPoints.Define(backupPauseFailPoint) // cmd_createbackup.go
	env.failGetMore = env.FailPoints.Define(failGetMoreName)
	env.onPrimaryTxnWrite = env.FailPoints.Define(onPrimaryTxnWrite)
	// The TTL monitor and history retention delete on the primary only,
	// as MongoDB's TTL monitor does: only the primary's writes replicate.
	// The session table is flushed there only too (a secondary's write of
	// config.system.sessions would be refused and logged every refresh).
	primaryOnly := func() bool {
		rs, _ := env.repl.Load().(ReplicaSet)
		return rs == nil || rs.CanWrite() == nil
	}
	env.Sessions.Run(session.RefreshInterval, log, primaryOnly)
	env.TTL = startTTLMonitor(eng, params, log, primaryOnly)
	env.History = history.Start(eng, history.Options{Logger: log, Period: ttlPeriod(params), Active: primaryOnly})
	env.preImageLoop = startPreImageRemover(eng, params, log, primaryOnly)
	env.Keys = clusterkeys.New(keysBacking{env})
	env.keyLoop = env.startKeyRotation(primaryOnly)
	users, err := auth.Open(usersBacking{env, usersNS}, usersBacking{env, rolesNS})
	if err != nil {
		// Unreadable users must not open the server unprotected.
		log.Error("cannot load admin.system.users", "err", err)
		users, _ = auth.Open(emptyBacking{}, emptyBacking{})
		cfg.Auth = true
		env.Config.Auth = true
	}
	env.Access = &Access{Enabled: cfg.Auth, Users: users}
	// A secondary learns users and roles by replication, not through the
	// store: it reads them again every second.
	env.userLoop = periodic.Start(nil, time.Second, func() bool { return env.ClusterTimes() && !primaryOnly() }, func() {
		if _, err := env.Access.Users.Reload(); err != nil {
			log.Warn("cannot read the replicated users and roles", "err", err)
		}
	})
	env.startupWarnings = startupWarnings(env.Config, log)
	return env
}

// Close releases what the Env holds (the TTL and retention monitors, open cursors); call
// it before closing the engine.
func (e *Env) Close() {
	e.Sessions.Stop()
	if err := e.Sessions.Flush(); err != nil {
		e.Log.Warn("cannot write the session table to config.system.sessions", "err", err)
	}
	e.TTL.Stop()
	e.History.Stop()
	e.preImageLoop.Stop()
	e.keyLoop.Stop()
	e.userLoop.Stop()
	e.Cursors.CloseAll()
}

// Session is one client connection's view: who it is and its own state.
type Session struct {
	Env    *Env
	ConnID int64
	Remote string
	Client bson.Raw // the handshake's client metadata, if any
	// ClientCert is the TLS client certificate the server verified against
	// its CA file (nil: none, or not verified), for MONGODB-X509.
	ClientCert *x509.Certificate

	// ShortWait, when set (by the server), is told that the command in
	// progress begins (true) or ends (false) a short wait that a timer
	// ends whatever the client does: a change stream's pace, at most
	// maxPace. The server does not watch the socket for a client gone
	// meanwhile (server's watch.go: that read costs more than the wait).
	ShortWait func(waiting bool)

	// hangUp asks the server to close the connection instead of replying
	// (failCommand's closeConnection); see TakeHangUp.
	hangUp bool
	// labelsSet: a fail point gave this command's reply its errorLabels,
	// which the server must not add to (errorlabels.go).
	labelsSet bool

	// auth is who the connection authenticated as (auth.go).
	auth sessionAuth
	// auditConn is the connection's UUID in audit events (made on the
	// first one).
	auditConn [16]byte

	// running is the operation of the command in progress (nil between
	// commands), for Interrupt.
	running atomic.Pointer[engine.Op]
	// opSlot is the Op the connection's commands begin in, one after the
	// other (beginOp); opBusy while a command holds it.
	opSlot engine.Op
	opBusy bool
	// interrupt is Interrupt as a func, which the session table keeps
	// while a command holds a session (useSession).
	interrupt func(error)

	// stat is the command in progress's figures for the slow-operation
	// log and the profiler (profiler.go).
	stat opStats
	// nsBuf is scratch for the namespace a command is counted under.
	nsBuf []byte
	// usage remembers the counters of the namespace counted last.
	usage usageCache
	// shapeTick counts the connection's commands for QueryShapes'
	// sampling (sampleShape).
	shapeTick uint64
	shapeMemo shapeMemo // the last express find's namespace and shape key (recordExpress)
	// lastColl is the collection name a find named last (collName).
	lastColl string
	// sess is the logical session of the command in progress (sessions.go).
	sess cmdSession
	// scope narrows the command in progress's execution environment
	// (Session.x, with the session's transaction): Owned filters the
	// reads of a command that carries a shardVersion to the documents of
	// chunks this shard owns (sharding.go); EnforcePrepare makes it wait
	// on prepare conflicts (enforcesPrepare).
	scope exec.Scope
}

// Interrupt cancels the command in progress on the session, if any, with
// cause: the server calls it when the client goes away mid-command. (A
// session's commands derive their context from the server's, which is
// never cancelled, so no context is linked to a parent per command.)
func (s *Session) Interrupt(cause error) {
	if op := s.running.Load(); op != nil {
		op.Interrupt(cause)
	}
}

// TakeHangUp reports whether the last command asked for the connection to
// be closed without a reply, and clears the request. The server checks it
// after every command.
func (s *Session) TakeHangUp() bool {
	h := s.hangUp
	s.hangUp = false
	return h
}

// AppName is the application name the client gave in its handshake, or "".
func (s *Session) AppName() string {
	if s.Client == nil {
		return ""
	}
	name, _ := s.Client.Lookup("application", "name").StringValueOK()
	return name
}

// collName is v.StringValueOK() for a find's collection name, without a
// new string when the connection's previous find named the same one (a
// driver's connection reads one collection over and over; each string
// was an allocation a read).
func (s *Session) collName(v bsoncore.Value) (string, bool) {
	if v.Type != bsoncore.TypeString || len(v.Data) < 5 {
		return v.StringValueOK()
	}
	if b := v.Data[4 : len(v.Data)-1]; string(b) == s.lastColl && int(binary.LittleEndian.Uint32(v.Data)) == len(b)+1 {
		return s.lastColl, true
	}
	name, ok := v.StringValueOK()
	if ok {
		s.lastColl = name
	}
	return name, ok
}
