package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/metrics"
	"github.com/cairndb/cairn/internal/replset"
	"github.com/cairndb/cairn/internal/server"
)

// serveFlags are mongod-style flags, so scripts written for mongod read naturally.
type serveFlags struct {
	port     int
	bindIP   string
	dbPath   string
	sync     string
	logLevel string
	maxConns int
	idPrefix int
	// metricsAddr serves Prometheus metrics at /metrics when set.
	metricsAddr string
	slowMS      int
	auth        bool
	// cacheGB is --cacheSizeGB (mongod's --wiredTigerCacheSizeGB); 0 is
	// the default (storage.DefaultCacheSize).
	cacheGB float64
	// setParams are --setParameter name=value settings, in order.
	setParams []string
	// replSet is --replSet: the replica set this server is a member of
	// ("" for a standalone).
	replSet string
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&f.port, "port", 27017, "TCP port to listen on")
	fs.StringVar(&f.bindIP, "bind_ip", "127.0.0.1", "address to listen on (0.0.0.0 exposes the server to the network)")
	fs.StringVar(&f.dbPath, "dbpath", "./cairn-data", "data directory (created if missing)")
	fs.StringVar(&f.sync, "sync", "always", "'always': acknowledge a write once it is synced to disk: neither a crash nor a power cut loses it.\n"+
		"An interval such as 100ms: acknowledge once it is written to the operating system and sync the log that often\n"+
		"(faster): a crash of cairn (kill -9) still loses no acknowledged write; a power cut or an OS crash loses\n"+
		"at most the writes acknowledged in the last interval (plus one sync's duration)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&f.maxConns, "max-conns", server.DefaultMaxConns, "maximum concurrent client connections (mongod's --maxConns); past it a new connection is closed\n"+
		"without a reply, as mongod does: the refusal is logged with its reason and counted in serverStatus.connections.rejected")
	fs.BoolVar(&f.auth, "auth", false, "require clients to authenticate (SCRAM-SHA-256 or SCRAM-SHA-1) and check their roles' privileges;\n"+
		"with no user yet, a client on this host may create the first one (the localhost exception)")
	fs.IntVar(&f.idPrefix, "document-id-unique-prefix", -1, "0-65535: the prefix of this server's sequential document ids (persisted; give each server of a cluster its own); -1 keeps the stored value")
	fs.StringVar(&f.metricsAddr, "metricsAddr", "", "host:port to serve Prometheus metrics on at /metrics (off when empty)")
	fs.IntVar(&f.slowMS, "slowms", commands.DefaultSlowMS, "operations slower than this many milliseconds are logged (\"Slow query\") and, at profiling level 1, profiled")
	cacheUsage := "block cache size in GB, from 0.25 to 10000 (default: the larger of half of (memory - 1 GB) and 256 MB, as mongod's WiredTiger cache)"
	fs.Float64Var(&f.cacheGB, "cacheSizeGB", 0, cacheUsage)
	fs.Float64Var(&f.cacheGB, "wiredTigerCacheSizeGB", 0, "the same as --cacheSizeGB (mongod's name)")
	fs.StringVar(&f.replSet, "replSet", "", "run as a member of the named replica set (start it with rs.initiate() on one member); members talk on this same port")
	fs.Func("setParameter", "name=value: set a server parameter at startup, as mongod's --setParameter (repeatable); enableTestCommands=1 enables configureFailPoint", func(s string) error {
		f.setParams = append(f.setParams, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cairn serve [flags]\n\nRuns a Cairn node that MongoDB drivers and mongosh connect to.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.cacheGB != 0 && (f.cacheGB < 0.25 || f.cacheGB > 10000) {
		return f, fmt.Errorf("--cacheSizeGB must be from 0.25 to 10000, got %v", f.cacheGB)
	}
	return f, nil
}

func syncInterval(s string) (time.Duration, error) {
	if s == "always" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--sync must be 'always' or a positive interval like 100ms, got %q", s)
	}
	return d, nil
}

func logLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	if err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", s)
	}
	return l, nil
}

func runServe(args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags(args, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "cairn serve:", err)
		return 2
	}
	every, err := syncInterval(f.sync)
	if err != nil {
		fmt.Fprintln(stderr, "cairn serve:", err)
		return 2
	}
	level, err := logLevel(f.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "cairn serve:", err)
		return 2
	}
	ring := commands.NewLogRing(1024, slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: level}))
	log := slog.New(ring)
	if err := serve(f, every, log, ring); err != nil {
		log.Error("cairn serve failed", "err", err)
		return 1
	}
	return 0
}

func serve(f serveFlags, every time.Duration, log *slog.Logger, ring *commands.LogRing) error {
	dir, err := filepath.Abs(f.dbPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create data directory %s: %w", dir, err)
	}
	eng, err := engine.Open(dir, engine.Options{SyncInterval: every, CacheSize: int64(f.cacheGB * (1 << 30)), Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		if err := eng.Close(); err != nil {
			log.Error("closing the data directory failed", "err", err)
		}
	}()
	if f.idPrefix >= 0 {
		cfg := eng.IDConfig()
		if f.idPrefix > idgen.MaxPrefix {
			return fmt.Errorf("--document-id-unique-prefix must be from 0 to %d, got %d", idgen.MaxPrefix, f.idPrefix)
		}
		cfg.Prefix = uint16(f.idPrefix)
		if err := eng.SetIDConfig(cfg); err != nil {
			return err
		}
	}
	env := commands.NewEnv(eng, commands.Config{
		Port: f.port, BindIP: f.bindIP, DBPath: dir, Argv: os.Args, CairnVer: version, Auth: f.auth, ReplSetName: f.replSet,
	}, log)
	env.Logs = ring
	defer env.Close()
	var srvOpts server.Options
	if f.replSet != "" {
		member, err := replset.New(replset.Options{SetName: f.replSet, Dir: dir, Port: f.port, BindIP: f.bindIP, Engine: eng, Logger: log})
		if err != nil {
			return err
		}
		defer member.Close()
		env.SetReplicaSet(member)
		srvOpts.Members = member.ServeMember
	}
	if err := env.ApplyStartupParameters(f.setParams); err != nil {
		return err
	}
	env.Profiler.SetSlowMS(int64(f.slowMS))
	if f.metricsAddr != "" {
		ln, err := metrics.Serve(f.metricsAddr, env)
		if err != nil {
			return fmt.Errorf("cannot serve metrics on %s: %w", f.metricsAddr, err)
		}
		defer ln.Close()
		log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	srvOpts.MaxConns = f.maxConns
	srv := server.New(env, srvOpts)
	addr := net.JoinHostPort(f.bindIP, strconv.Itoa(f.port))
	if err := srv.Listen(addr); err != nil {
		return fmt.Errorf("cannot listen on %s: %w (is another server using the port? try --port)", addr, err)
	}
	log.Info("cairn is ready", "listen", srv.Addr().String(), "dbpath", dir, "sync", f.sync, "version", version, "mongodbCompat", commands.MongoVersion,
		"connect", "mongosh mongodb://"+srv.Addr().String())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		return nil
	case err := <-errc:
		return err
	}
}
