package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/config"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/metrics"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/replset"
	"github.com/cairndb/cairn/internal/server"
	"github.com/cairndb/cairn/internal/shardsvr"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/tlsconn"
	"github.com/cairndb/cairn/internal/wire"
)

const serveLong = `Runs a Cairn server that MongoDB drivers, mongosh and the database tools
connect to. The flags are mongod's where mongod has them (--port, --bind_ip,
--dbpath, --logpath, --auth, --setParameter, ...); a mongod flag that Cairn
does not support is refused with the reason, never ignored.

By default the server listens on 127.0.0.1:27017 only, keeps its data in
./cairn-data and acknowledges a write once it is synced to disk.

Options can also come from mongod's YAML config file (--config or -f);
flags given as well override it. For example:

  net:
    port: 27017
    bindIp: 127.0.0.1
  storage:
    dbPath: /var/lib/cairn
  systemLog:
    destination: file
    path: /var/log/cairn/cairn.log
    logAppend: true
  security:
    authorization: enabled

Signals: SIGINT and SIGTERM shut the server down cleanly (operations in
progress get 15 s to finish); SIGUSR1 rotates the log file as the logRotate
command does; SIGHUP logs that it was received and reopens the log file.`

// flagValue records a flag as the command line gives it; config.Load applies
// the recorded flags after the config file, so flags win.
type flagValue struct {
	flag     config.Flag
	settings *[]config.Setting
}

func (v *flagValue) String() string { return "" }

func (v *flagValue) Type() string {
	switch {
	case v.flag.Bool:
		return "bool"
	case v.flag.Count:
		return "count"
	}
	return v.flag.Arg
}

// Set checks the value at once (so the error names the flag as given) and
// records it.
func (v *flagValue) Set(s string) error {
	scratch := config.Defaults()
	if err := config.SetFlag(&scratch, v.flag.Name, s); err != nil {
		return err
	}
	*v.settings = append(*v.settings, config.Setting{Flag: v.flag.Name, Value: s})
	return nil
}

func serveCommand(stdout, stderr io.Writer) *cobra.Command {
	var settings []config.Setting
	var configFile string
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run a Cairn server that MongoDB clients connect to",
		Long:  serveLong,
		Example: `  cairn serve
  cairn serve --dbpath /var/lib/cairn --bind_ip_all --auth
  cairn serve -f /etc/cairn.conf --port 27018`,
		Args: noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			opts, err := config.Load(configFile, settings)
			if err != nil {
				return usageError{err}
			}
			if code := serveFunc(opts, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVarP(&configFile, "config", "f", "", "read options from this mongod-style YAML config file; flags given as well override it")
	sections := map[string]*pflag.FlagSet{}
	for _, f := range config.Flags() {
		fl := fs.VarPF(&flagValue{flag: f, settings: &settings}, f.Name, f.Short, f.Usage)
		switch {
		case f.Bool:
			fl.NoOptDefVal = "true"
		case f.Count:
			fl.NoOptDefVal = "+1"
		}
		if sections[f.Section] == nil {
			sections[f.Section] = pflag.NewFlagSet(f.Section, pflag.ContinueOnError)
			sections[f.Section].SortFlags = false
		}
		sections[f.Section].AddFlag(fl)
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n\nExamples:\n%s\n\nGeneral options:\n", c.UseLine(), c.Example)
		general := pflag.NewFlagSet("general", pflag.ContinueOnError)
		general.AddFlag(fs.Lookup("config"))
		general.AddFlag(c.Flags().Lookup("help"))
		fmt.Fprint(w, general.FlagUsages())
		for _, s := range helpSections {
			if set := sections[s.section]; set != nil {
				fmt.Fprintf(w, "\n%s options [%s]:\n%s", s.title, s.section, set.FlagUsages())
			}
		}
		return nil
	})
	return cmd
}

// helpSections order and title serve's options by config file section, as
// mongod's help groups them.
var helpSections = []struct{ section, title string }{
	{"net", "Net"}, {"storage", "Storage"}, {"systemLog", "Log"}, {"security", "Security"}, {"auditLog", "Audit (MongoDB Enterprise's)"},
	{"replication", "Replication"}, {"sharding", "Sharding"}, {"operationProfiling", "Profiling"}, {"setParameter", "Server parameter"}, {"processManagement", "Process"},
	{"cairn", "Cairn"},
}

// flagError explains a flag the command line does not know: mongod's flags
// that Cairn does not support with the reason, others with the nearest
// valid flag.
func flagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return usageError{err}
	}
	if e := config.UnsupportedFlag(name); e != nil {
		return usageError{e}
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if n := config.Nearest(name, names); n != "" {
		return usageError{fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, n)}
	}
	return usageError{fmt.Errorf("unknown flag --%s", name)}
}

// serveFunc runs a server; tests of the command line replace it to see the
// options it would run with.
var serveFunc = runServe

// runServe runs the server with opts until a signal or the shutdown command
// stops it, and returns the exit status.
func runServe(opts config.Options, stdout, stderr io.Writer) int {
	var out io.Writer = stdout
	var file *logFile
	if opts.LogPath != "" {
		var err error
		if file, err = openLogFile(opts.LogPath, opts.LogAppend); err != nil {
			fmt.Fprintln(stderr, "cairn serve:", err)
			return 1
		}
		defer file.Close()
		out = file
	}
	level := slog.LevelInfo
	if err := level.UnmarshalText([]byte(opts.LogLevel)); err != nil {
		fmt.Fprintln(stderr, "cairn serve:", err)
		return 2
	}
	if opts.Verbosity > 0 {
		level = slog.LevelDebug
	}
	var h slog.Handler = slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level})
	if opts.Quiet {
		h = quietHandler{h}
	}
	ring := commands.NewLogRing(1024, h)
	log := slog.New(ring)
	if err := serve(opts, log, ring, file); err != nil {
		log.Error("cairn serve failed", "err", err)
		return 1
	}
	return 0
}

// quietHandler drops connection events (--quiet, systemLog.quiet), as
// mongod's quiet mode does, at every level.
type quietHandler struct{ slog.Handler }

// connectionEvents are the log messages of internal/server that --quiet
// leaves out.
var connectionEvents = map[string]bool{
	"connection accepted": true, "connection closed": true, "closing connection": true,
	"client went away during a command": true,
}

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if connectionEvents[r.Message] {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return quietHandler{q.Handler.WithAttrs(a)}
}

func (q quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{q.Handler.WithGroup(name)}
}

// stopRequest is a shutdown asked for by a signal or the shutdown command.
type stopRequest struct {
	why     string
	force   bool
	timeout time.Duration
}

// process is commands.Process for `cairn serve`.
type process struct {
	stop   chan stopRequest
	file   *logFile // nil: logging to standard output
	rotate string   // rename or reopen
	log    *slog.Logger
}

func (p *process) Shutdown(force bool, timeout time.Duration) {
	select {
	case p.stop <- stopRequest{why: "shutdown command", force: force, timeout: timeout}:
	default: // a shutdown is under way already
	}
}

func (p *process) RotateLog() (bool, error) {
	if p.file == nil {
		p.log.Info("log rotation asked for, but the log goes to standard output: nothing to rotate")
		return false, nil
	}
	if p.rotate == "reopen" {
		p.log.Info("log rotation initiated: reopening the log file", "path", p.file.path)
		return true, p.file.Reopen()
	}
	p.log.Info("log rotation initiated", "path", p.file.path)
	to, err := p.file.Rotate()
	if err != nil {
		return false, err
	}
	p.log.Info("log file rotated", "previous", to)
	return true, nil
}

// setMemoryLimit gives the Go runtime the soft memory limit the cache's
// size implies (storage.HeapLimit: documents bytes of it are the document
// cache, on the Go heap), so that the process stays within the cache plus
// that limit; GOMEMLIMIT, when set, is left to rule (GOMEMLIMIT=off for
// none).
func setMemoryLimit(cache, documents int64, log *slog.Logger) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		log.Info("Go memory limit from GOMEMLIMIT", "GOMEMLIMIT", env)
		return
	}
	limit := storage.HeapLimit(cache, documents)
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set from the cache size", "limitMB", limit>>20, "cacheMB", cache>>20, "documentCacheMB", documents>>20)
}

// setHeapFloor keeps the collector's heap goal at least gcHeapFloor(cache)
// (gcfloor.go) until the returned stop is called; GOGC, when set, is left
// to rule.
func setHeapFloor(cache int64, log *slog.Logger) (stop func()) {
	if env := os.Getenv("GOGC"); env != "" {
		log.Info("Go collector's percentage from GOGC", "GOGC", env)
		return func() {}
	}
	floor := gcHeapFloor(cache)
	log.Info("Go collector's heap floor set from the block cache size", "floorMB", floor>>20, "cacheMB", cache>>20)
	return startHeapFloor(floor)
}

// signaledShutdownTimeout is how long a SIGINT or SIGTERM shutdown lets
// operations in progress finish (mongod's
// shutdownTimeoutMillisForSignaledShutdown).
const signaledShutdownTimeout = 15 * time.Second

func serve(opts config.Options, log *slog.Logger, ring *commands.LogRing, file *logFile) error {
	// Catch the signals first: one that arrives while starting (or just
	// after the ready line, which a supervisor may act on) is handled,
	// never the default death.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	every, err := config.SyncInterval(opts.Sync)
	if err != nil {
		return err
	}
	if opts.TimeZoneInfo != "" {
		if st, err := os.Stat(opts.TimeZoneInfo); err != nil || !st.IsDir() {
			return fmt.Errorf("--timeZoneInfo %s is not a directory", opts.TimeZoneInfo)
		}
		// The time package reads its zone database from ZONEINFO first.
		os.Setenv("ZONEINFO", opts.TimeZoneInfo)
	}
	dir, err := filepath.Abs(opts.DBPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create data directory %s: %w", dir, err)
	}
	if opts.PIDFilePath != "" {
		if err := os.WriteFile(opts.PIDFilePath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("cannot write the pid file: %w", err)
		}
		defer os.Remove(opts.PIDFilePath)
	}
	key, systemUser, err := readKeyFile(opts.KeyFile)
	if err != nil {
		return err
	}
	listenTLS, memberTLS, err := loadTLS(opts.TLS)
	if err != nil {
		return err
	}
	auditLog, err := audit.Open(audit.Options{Destination: opts.Audit.Destination, Format: opts.Audit.Format, Path: opts.Audit.Path,
		Filter: opts.Audit.Filter, Local: net.JoinHostPort(opts.ListenIPs()[0], strconv.Itoa(opts.Port))})
	if err != nil {
		return err
	}
	defer auditLog.Close()
	eng, err := engine.Open(dir, engine.Options{SyncInterval: every, CacheSize: int64(opts.CacheSizeGB * (1 << 30)), DocumentCacheSize: documentCacheBytes(opts.DocumentCacheSizeMB), OplogSize: opts.OplogSizeMB << 20, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		if err := eng.Close(); err != nil {
			log.Error("closing the data directory failed", "err", err)
		}
	}()
	setMemoryLimit(eng.Storage().CacheCapacity(), eng.Storage().DocumentCacheCapacity(), log)
	defer setHeapFloor(eng.Storage().CacheCapacity(), log)()
	if opts.IDPrefix >= 0 {
		cfg := eng.IDConfig()
		if opts.IDPrefix > idgen.MaxPrefix {
			return fmt.Errorf("--document-id-unique-prefix must be from 0 to %d, got %d", idgen.MaxPrefix, opts.IDPrefix)
		}
		cfg.Prefix = uint16(opts.IDPrefix)
		if err := eng.SetIDConfig(cfg); err != nil {
			return err
		}
	}
	env := commands.NewEnv(eng, commands.Config{
		Port: opts.Port, BindIP: opts.ListenIP(), DBPath: dir, Argv: os.Args, CairnVer: version, Auth: opts.AuthEnabled(), Given: opts.Given,
		ReplSetName: opts.ReplSetName,
	}, log)
	env.Logs = ring
	defer env.Close()
	if key != nil {
		env.Access.Users.SetSystemUser(systemUser)
	}
	env.Audit = auditLog
	var member *replset.Member
	if opts.ClusterRole == "configsvr" && opts.ReplSetName == "" {
		return fmt.Errorf("cannot start a config server (--configsvr) as a standalone server: give --replSet")
	}
	if opts.ReplSetName != "" {
		m, err := replset.New(replset.Options{SetName: opts.ReplSetName, ConfigSvr: opts.ClusterRole == "configsvr", Dir: dir, Port: opts.Port, BindIP: opts.ListenIP(), Engine: eng, Logger: log,
			OnPromote: env.Sessions.Forget, OnStepDown: env.Sessions.AbortTransactions, Key: key, TLS: memberTLS})
		if err != nil {
			return err
		}
		defer m.Close()
		eng.SetOplogTerm(m.Term)
		env.SetReplicaSet(m)
		member = m
	}
	defineShardParams(env)
	if err := env.ApplyStartupParameters(opts.SetParameters); err != nil {
		return err
	}
	env.Profiler.SetSlowMS(int64(opts.SlowMS))
	env.Profiler.SetSampleRate(opts.SlowSampleRate)
	env.Profiler.SetDefaultLevel(opts.Profile)
	proc := &process{stop: make(chan stopRequest, 1), file: file, rotate: opts.LogRotate, log: log}
	env.Process = proc
	if opts.MetricsAddr != "" {
		ln, err := metrics.Serve(opts.MetricsAddr, env)
		if err != nil {
			return fmt.Errorf("cannot serve metrics on %s: %w", opts.MetricsAddr, err)
		}
		defer ln.Close()
		log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	compressors := []wire.Compressor{}
	for _, name := range opts.Compressors {
		c, _ := wire.CompressorByName(name)
		compressors = append(compressors, c)
	}
	srvOpts := server.Options{MaxConns: opts.MaxConns, Compressors: compressors}
	if member != nil {
		srvOpts.Members = member.ServeMember // members talk on the client port
	}
	srvOpts.TLS = listenTLS
	srv := server.New(env, srvOpts)
	if opts.ShardSvr || opts.ReplSetName != "" {
		node, err := startSharding(opts, env, member, key, memberTLS, log)
		if err != nil {
			return err
		}
		defer node.Close()
	}
	for _, ip := range opts.ListenIPs() {
		addr := net.JoinHostPort(ip, strconv.Itoa(opts.Port))
		if err := srv.Listen(addr); err != nil {
			return fmt.Errorf("cannot listen on %s: %w (is another server using the port? try --port)", addr, err)
		}
	}
	var addrs []string
	for _, a := range srv.Addrs() {
		addrs = append(addrs, a.String())
	}
	log.Info("cairn is ready", "listen", srv.Addr().String(), "addresses", addrs, "dbpath", dir, "sync", opts.Sync, "tlsMode", opts.TLS.Mode, "version", version, "mongodbCompat", commands.MongoVersion,
		"config", opts.ConfigFile, "connect", "mongosh mongodb://"+srv.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				log.Info("SIGHUP received: reopening the log file; the server goes on", "logpath", opts.LogPath)
				if file != nil {
					if err := file.Reopen(); err != nil {
						log.Error("reopening the log file failed", "err", err)
					}
				}
			case syscall.SIGUSR1:
				if _, err := proc.RotateLog(); err != nil {
					log.Error("log rotation failed", "err", err)
				}
			default:
				select {
				case proc.stop <- stopRequest{why: "signal " + sig.String(), timeout: signaledShutdownTimeout}:
				default: // a shutdown is asked for already
				}
			}
		case req := <-proc.stop:
			log.Info("shutting down", "reason", req.why, "force", req.force, "timeout", req.timeout.String())
			env.ReleaseFsyncLock()
			ctx, cancel := context.WithTimeout(context.Background(), req.timeout)
			if req.force {
				cancel() // interrupt what is running at once
			}
			_ = srv.Shutdown(ctx)
			cancel()
			log.Info("connections closed; closing the data directory")
			return nil
		case err := <-errc:
			return err
		}
	}
}

// readKeyFile reads --keyFile (nil, nil with none) and makes the internal
// user __system@local from it. A file with group or other permissions, or
// a key outside mongod's format, stops the server before it opens the data.
func readKeyFile(path string) ([]byte, *auth.User, error) {
	if path == "" {
		return nil, nil, nil
	}
	key, err := auth.ReadKeyFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--keyFile (security.keyFile): %w", err)
	}
	u, err := auth.NewSystemUser(key)
	if err != nil {
		return nil, nil, err
	}
	return key, u, nil
}

// startSharding gives the server its sharding role (package shardsvr): a
// shard with --shardsvr; on a replica set member, the config server's
// commit of migrations and its balancer. With a keyFile (key), the node
// reaches other members as __system and runs its own commands as it.
func startSharding(opts config.Options, env *commands.Env, member *replset.Member, key []byte, memberTLS *tls.Config, log *slog.Logger) (*shardsvr.Node, error) {
	if opts.AuthEnabled() && key == nil {
		// mongod's rule: members must prove themselves to each other.
		what := "replica sets"
		if opts.ShardSvr {
			what = "sharding (--shardsvr)"
		}
		return nil, fmt.Errorf("security.keyFile is required when authorization is enabled with %s: give --keyFile", what)
	}
	host := opts.ListenIP()
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	isPrimary := func() bool { return true }
	if member != nil {
		isPrimary = func() bool { return member.CanWrite() == nil }
	}
	node := shardsvr.New(shardsvr.Options{
		Local: func(ctx context.Context, db string, body bsoncore.Document) bsoncore.Document {
			req, err := commands.NewRequest(body, db, nil)
			if err != nil {
				return commands.ErrorReply(nil, err)
			}
			return commands.Run(ctx, commands.InternalSession(env), req, nil)
		},
		Key: key, TLS: memberTLS, Self: net.JoinHostPort(host, strconv.Itoa(opts.Port)), ShardSvr: opts.ShardSvr, IsPrimary: isPrimary, Log: log,
		ConfigServer: func() bool { return env.Engine.Catalog().Collection("config", "shards") != nil },
		FailPoints:   env.FailPoints,
		Sessions:     env.Sessions,
	})
	env.Sharding = node
	return node, nil
}

// defineShardParams defines mongod's migrationLockAcquisitionMaxWaitMS
// (500 by default): how long a chunk migration's critical section waits
// for the writes and open transactions holding its collection before the
// migration gives up with LockTimeout (package shardsvr). It is process
// wide, as mongod's.
func defineShardParams(env *commands.Env) {
	env.Params.DefineLive("migrationLockAcquisitionMaxWaitMS", func() any {
		return int32(shardsvr.MigrationLockWait().Milliseconds())
	}, func(v bsoncore.Value) (any, error) {
		n, ok := v.AsInt64OK()
		if !ok {
			if f, isDouble := v.DoubleOK(); isDouble && f == float64(int64(f)) {
				n, ok = int64(f), true
			}
		}
		if !ok || n < 0 || n > math.MaxInt32 {
			return nil, mongoerr.New(mongoerr.BadValue, "migrationLockAcquisitionMaxWaitMS must be a non-negative integer, got %s", v)
		}
		shardsvr.SetMigrationLockWait(time.Duration(n) * time.Millisecond)
		return int32(n), nil
	})
}

// loadTLS reads net.tls's files: the listener's configuration (nil with
// --tlsMode disabled) and, under preferTLS and requireTLS, the one this
// process dials other members with (nil: plain), as mongod and mongos
// connect to each other.
func loadTLS(t config.TLS) (*tlsconn.Listener, *tls.Config, error) {
	if t.Mode == config.TLSDisabled || t.Mode == "" {
		return nil, nil, nil
	}
	files := tlsconn.Files{CertificateKeyFile: t.CertificateKeyFile, CAFile: t.CAFile,
		AllowInvalidCertificates:            t.AllowInvalidCertificates,
		AllowConnectionsWithoutCertificates: t.AllowConnectionsWithoutCertificates}
	cfg, err := tlsconn.LoadServer(files)
	if err != nil {
		return nil, nil, err
	}
	var member *tls.Config
	if tlsconn.DialsTLS(t.Mode) {
		if member, err = tlsconn.Member(files); err != nil {
			return nil, nil, err
		}
	}
	return &tlsconn.Listener{Mode: t.Mode, Config: cfg}, member, nil
}

// documentCacheBytes is engine.Options.DocumentCacheSize for
// --documentCacheSizeMB: -1 (not given) the default share, 0 none.
func documentCacheBytes(mb int64) int64 {
	switch {
	case mb < 0:
		return 0
	case mb == 0:
		return -1
	}
	return mb << 20
}
