package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
)

// Target names, as reports show them.
const (
	TargetCairn         = "cairn"
	TargetCompare       = "compare"
	TargetFloorProtocol = "floor-protocol"
	TargetFloorPebble   = "floor-pebble"
	// TargetFloorPebbleOplog is the Pebble floor writing an oplog entry
	// with each write, as Cairn does.
	TargetFloorPebbleOplog = "floor-pebble-oplog"
	TargetFloorProxy       = "floor-proxy"
	TargetFloorDurable     = "floor-durable"
)

// Floor names, as --floor takes them.
const (
	FloorProtocol = "protocol"
	FloorPebble   = "pebble"
	// FloorPebbleOplog: the Pebble floor with an oplog entry per write.
	FloorPebbleOplog = "pebble-oplog"
	FloorProxy       = "proxy"
	FloorDurable     = "durable"
)

// target is one system measured in an invocation.
type target struct {
	name  string
	about string // how it runs, for the report
	floor bool
	// uri is the server to connect the driver to, for each phase; an
	// in-process target has db instead.
	uri string
	db  db
	// database, when set, holds this target's records instead of
	// Config.Database (the proxy floor's server is cairn's: its records
	// are kept apart).
	database string

	// Server CPU comes from process pid when it is > 0; from this
	// process minus the harness's own cost when inProcess; otherwise it
	// is unknown.
	pid       int
	also      *target // a target whose server CPU counts too (the proxy floor's server)
	inProcess bool
	cpuHow    string

	keys *keySequence // the record set's key numbers, after load
	// renew replaces the target's store with a fresh one (fresh.go); nil
	// when the harness cannot (a --uri server's, the proxy floor's).
	renew func(context.Context) error
	// dir is the current store's directory, when it has one.
	dir string
	// loaded: a load has run into the current store; loadedPIDs are the
	// server processes any load reached.
	loaded     bool
	loadedPIDs []int
	failed     map[string]string // workload -> why its runs stopped
	stop       []func() error    // in order
	pebble     *pebbleFloor      // the in-process floor, to wait for its compactions
}

func (t *target) serverCPU() (time.Duration, bool) {
	if t.pid <= 0 {
		return 0, false
	}
	d, err := processCPU(t.pid)
	if err != nil {
		return 0, false
	}
	if t.also != nil {
		d2, ok := t.also.serverCPU()
		if !ok {
			return 0, false
		}
		d += d2
	}
	return d, true
}

func (t *target) close(ctx context.Context) error {
	var errs []error
	if t.db != nil {
		errs = append(errs, t.db.close(ctx))
	}
	for _, f := range t.stop {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// SelfCommand returns a command that runs this program (the cairn binary)
// with args: `serve …` starts a Cairn server, `bench FloorServerArg …` the
// protocol floor. Tests substitute their own binary.
type SelfCommand func(args ...string) *exec.Cmd

// child is a server the harness started as a child process.
type child struct {
	what    string
	cmd     *exec.Cmd
	out     *tailWriter
	exited  chan struct{}
	waitErr error
}

// startChild runs self(args...) and waits until addr accepts connections.
func startChild(ctx context.Context, what string, self SelfCommand, args, env []string, addr string) (*child, error) {
	if self == nil {
		return nil, fmt.Errorf("bench: cannot start %s: no way to run the cairn binary (Config.Self)", what)
	}
	cmd := self(args...)
	if env != nil {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, env...)
	}
	tail := &tailWriter{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = tail, tail
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: cannot start %s: %w", what, err)
	}
	c := &child{what: what, cmd: cmd, out: tail, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = nc.Close()
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("bench: %s exited before listening on %s (%v); its output:\n%s", what, addr, c.waitErr, tail)
		case <-ctx.Done():
			_ = c.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			return nil, fmt.Errorf("bench: %s did not listen on %s within 30s; its output:\n%s", what, addr, tail)
		}
	}
}

// stop asks the child to shut down (SIGTERM, as an operator would) and
// kills it if it has not exited after 15 seconds.
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("bench: %s ignored SIGTERM for 15s and was killed", c.what)
	}
	if c.waitErr != nil {
		return fmt.Errorf("bench: %s: %v; its output:\n%s", c.what, c.waitErr, c.out)
	}
	return nil
}

// tailWriter keeps the last max bytes written to it: a child's output,
// shown when it fails.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startEmbedded starts `cairn serve` on a free loopback port with a fresh
// data directory, removed when the target closes; the target's renew
// restarts it on the same port with a new directory.
func startEmbedded(ctx context.Context, cfg *Config) (*target, string, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	var env []string
	if cfg.ProfileDir != "" { // profiling.go: the server's endpoint on a port of its own
		paddr, err := freeLoopbackAddr()
		if err != nil {
			return nil, "", err
		}
		env, cfg.ProfileURL = []string{"CAIRN_PPROF=" + paddr}, "http://"+paddr
	}
	s := &childServer{
		what: "cairn serve", self: cfg.Self, env: env, addr: addr, dirPattern: "cairn-bench-data-",
		args: func(dir string) []string {
			return []string{"serve", "--port", port, "--dbpath", dir, "--sync", cfg.Sync}
		},
	}
	if err := s.start(ctx); err != nil {
		return nil, "", err
	}
	t := &target{
		name:   TargetCairn,
		about:  fmt.Sprintf("cairn serve --sync %s, child process, a fresh data directory per load", cfg.Sync),
		cpuHow: "the server process's /proc/<pid>/stat",
	}
	s.own(t)
	return t, "mongodb://" + addr + "/", nil
}

// startProtocolFloorChild starts the protocol floor as a child process,
// so its CPU is accounted exactly as Cairn's is; durable makes it the
// durable floor, its log in a fresh directory (removed afterwards). The
// target's renew restarts it (a new map; the durable floor's log in a new
// directory).
func startProtocolFloorChild(ctx context.Context, cfg *Config, durable bool) (*target, string, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	s := &childServer{what: "protocol floor", self: cfg.Self, addr: addr,
		args: func(string) []string { return []string{"bench", FloorServerArg, "--port", port} }}
	name, about := TargetFloorProtocol, "wire protocol over a Go map, no durability"
	if durable {
		s.what, s.dirPattern = "durable floor", "cairn-bench-durable-floor-"
		s.args = func(dir string) []string { return []string{"bench", FloorServerArg, "--port", port, "--wal", dir} }
		name, about = TargetFloorDurable, "the protocol floor, every write synced to a log (group commit, fdatasync) before its reply"
	}
	if err := s.start(ctx); err != nil {
		return nil, "", err
	}
	t := &target{
		name:   name,
		about:  about + ", child process, restarted for each load",
		floor:  true,
		cpuHow: "the floor process's /proc/<pid>/stat",
	}
	s.own(t)
	return t, "mongodb://" + addr + "/", nil
}

// uriTarget describes a server the user runs; its CPU is known when it
// listens on loopback and its process is visible in /proc.
func uriTarget(name, uri string) (*target, error) {
	cs, err := connstring.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("bench: %s URI %q: %w", name, redactURI(uri), err)
	}
	t := &target{name: name, about: "server at " + redactURI(uri)}
	if len(cs.Hosts) == 1 {
		host, portStr, err := net.SplitHostPort(cs.Hosts[0])
		if err != nil {
			host, portStr = cs.Hosts[0], "27017"
		}
		port, _ := strconv.Atoi(portStr)
		if isLoopback(host) {
			if pid := listeningPID(port); pid > 0 && pid != os.Getpid() {
				t.pid = pid
				t.about += fmt.Sprintf(", pid %d", pid)
				t.cpuHow = "the server process's /proc/<pid>/stat (found listening on the port)"
			}
		}
	}
	if t.pid == 0 {
		t.cpuHow = "unknown (the server is not a separate process visible on this machine)"
	}
	return t, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// redactURI hides a password in a URI shown in reports.
func redactURI(uri string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return uri
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 && at < strings.IndexAny(rest+"/", "/?") {
		if user, _, hasPass := strings.Cut(rest[:at], ":"); hasPass {
			return scheme + "://" + user + ":***" + rest[at:]
		}
	}
	return uri
}

// startProxyFloorChild starts the proxy floor as a child process
// forwarding to behind, the server of target cairn (its URI cairnURI):
// the target's CPU is the proxy's and that server's together, so that it
// reads against cairn's as what a separate process in front of the server
// costs.
func startProxyFloorChild(ctx context.Context, cfg *Config, behind *target, cairnURI string) (*target, string, error) {
	cs, err := connstring.Parse(cairnURI)
	if err != nil {
		return nil, "", err
	}
	if len(cs.Hosts) != 1 || cs.SSL || cs.LoadBalanced {
		return nil, "", fmt.Errorf("bench: the proxy floor forwards to one server over plain TCP: %s names %d hosts (tls %v)", redactURI(cairnURI), len(cs.Hosts), cs.SSL)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	c, err := startChild(ctx, "proxy floor", cfg.Self, []string{"bench", ProxyFloorServerArg, "--port", port, "--to", cs.Hosts[0]}, nil, addr)
	if err != nil {
		return nil, "", err
	}
	// The client's URI with the proxy for the host; directConnection, as
	// the server's hello names itself, not the proxy.
	uri := strings.Replace(cairnURI, cs.Hosts[0], addr, 1)
	if !cs.DirectConnectionSet {
		if strings.Contains(uri, "?") {
			uri += "&directConnection=true"
		} else {
			if !strings.HasSuffix(uri, "/") {
				uri += "/"
			}
			uri += "?directConnection=true"
		}
	}
	t := &target{
		name:     TargetFloorProxy,
		about:    fmt.Sprintf("a proxy forwarding each message to %s (headers only), child process pid %d", cs.Hosts[0], c.cmd.Process.Pid),
		database: cfg.Database + "_viaproxy",
		stop:     []func() error{c.stop},
		cpuHow:   "unknown (the server behind the proxy is not a process visible on this machine)",
	}
	if behind.pid > 0 {
		t.pid, t.also = c.cmd.Process.Pid, behind
		t.cpuHow = "the proxy's and the server's /proc/<pid>/stat together"
	}
	return t, uri, nil
}
