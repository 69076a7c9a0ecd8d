package smoke

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/testpki"
)

// A gap is a feature Cairn does not have yet: the script must report it as
// "expected-gap <name>: <code>", failing with exactly that MongoDB code.
type gap struct {
	name string
	code int
}

// client is one smoke script, how to run it, and what it must print, check
// by check, in order.
type client struct {
	name   string
	script string
	// argv is the command line, given the node binary, the smoke directory
	// and the server's host:port.
	argv   func(node, dir, addr string) []string
	checks []string
	gaps   []gap
	// warnings are the prefixes of lines the client itself prints for a
	// helper MongoDB deprecates (mongosh's DeprecationWarning), which the
	// script cannot silence; any other line outside the protocol fails.
	warnings []string
}

var clients = []client{
	{
		name:   "node",
		script: "node_smoke.mjs",
		argv: func(node, _, addr string) []string {
			return []string{node, "node_smoke.mjs", "mongodb://" + addr + "/"}
		},
		checks: []string{
			"connect", "ping", "hello", "streaming-hello", "buildInfo",
			"insertOne-driver-id", "insertOne-server-id", "insertOne-explicit-id",
			"insertMany-explicit-ids", "insertMany-driver-ids",
			"findOne-by-id", "find-batched-getMore", "find-query-language", "find-equality-filter",
			"replaceOne", "replaceOne-no-match", "replaceOne-upsert-by-id", "replaceOne-upsert-server-id",
			"duplicate-key-insertOne", "duplicate-key-insertMany",
			"deleteOne", "deleteMany", "estimatedDocumentCount",
			"listCollections", "listDatabases", "unknown-command", "drop",
			"updateOne-operators", "createIndex-unique", "aggregate-and-countDocuments",
			"dropDatabase", "monitoring-stable",
		},
	},
	{
		name:   "mongosh",
		script: "mongosh_smoke.js",
		argv: func(_, dir, addr string) []string {
			return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"),
				"mongodb://" + addr + "/smoke_mongosh", "--quiet", "--norc", "--file", "mongosh_smoke.js"}
		},
		checks: []string{
			"db.version", "adminCommand-ping", "db.hello", "startup-banners", "diagnostics",
			"insertOne", "insertOne-explicit-id", "insertMany", "findOne-by-id",
			"find-toArray", "find-equality-filter", "find-query-language", "replaceOne", "replaceOne-upsert",
			"duplicate-key", "deleteOne", "deleteMany", "estimatedDocumentCount",
			"getCollectionNames", "getDBNames", "unknown-command", "drop",
			"createIndex", "aggregate", "validator", "capped", "profiler",
			"versioned-seed-scenario", "dropDatabase",
		},
	},
}

// Time limits, generous for a loaded 2-core CI machine: a normal run takes a
// few seconds once node_modules and the Go build cache are warm.
const (
	npmCITimeout  = 8 * time.Minute
	buildTimeout  = 3 * time.Minute
	readyTimeout  = 30 * time.Second
	clientTimeout = 2 * time.Minute
	stopTimeout   = 15 * time.Second
)

// TestClients builds cairn, starts `cairn serve` on a free loopback port with
// an empty data directory, and runs every client script against it at once,
// each in its own database.
func TestClients(t *testing.T) {
	dir, err := os.Getwd() // go test runs a package's tests in its directory
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join(dir, "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found two levels above %s: %v", dir, err)
	}
	node := tool(t, "node")
	installClients(t, dir)
	readInputs(t, root)
	srv := startServer(t, buildCairn(t, root))

	env := clientEnv(t)
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, err := run(t, dir, env, c.argv(node, dir, srv.addr))
			c.verify(t, stdout, stderr, err)
			if c.name == "mongosh" {
				checkMongoshLog(t, env)
			}
		})
	}
}

// tool finds a program the smoke tests cannot run without. A missing tool
// fails the test: a skip would let `make test` pass without ever talking to a
// real client.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: the smoke tests run mongosh and the MongoDB Node.js driver, "+
			"so they need Node.js >= 20.19 and npm (and the npm registry, once, for `npm ci`): %v", name, err)
	}
	return p
}

// installClients runs `npm ci` unless node_modules already holds what
// package.json, package-lock.json and .npmrc ask for. A stamp holding their
// hash is written after a successful install, so an interrupted install or a
// changed pin installs again.
func installClients(t *testing.T, dir string) {
	t.Helper()
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json", ".npmrc"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	want := hex.EncodeToString(h.Sum(nil)) + "\n"
	stamp := filepath.Join(dir, "node_modules", ".cairn-smoke-installed")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	npm := tool(t, "npm")
	ctx, cancel := context.WithTimeout(context.Background(), npmCITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci") // options in .npmrc
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("`npm ci` in %s failed after %s, so mongosh and the Node.js driver are not installed: %v\n%s",
			dir, time.Since(start).Round(time.Second), err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("npm ci installed the smoke clients in %s", time.Since(start).Round(time.Second))
}

// readInputs reads the module's Go sources and this package's scripts.
// The test itself needs none of them, but go test caches a passing result
// until a file the test opened changes, and the server under test is a
// separate binary it would otherwise never look at.
func readInputs(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".mod", ".sum", ".js", ".mjs", ".json":
			_, err := os.ReadFile(path)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cairnBin is the server binary the smoke tests share, built once per test
// process (a link took 10–30 s under make test's load) and removed by
// TestMain.
var cairnBin struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cairnBin.dir != "" {
		os.RemoveAll(cairnBin.dir)
	}
	os.Exit(code)
}

// buildCairn builds the server binary once per test run.
func buildCairn(t *testing.T, root string) string {
	t.Helper()
	cairnBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-smokebin-")
		if err != nil {
			cairnBin.err = err
			return
		}
		cairnBin.dir, cairnBin.path = dir, filepath.Join(dir, "cairn")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", cairnBin.path, "./cmd/cairn")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cairnBin.err = fmt.Errorf("go build ./cmd/cairn: %v\n%s", err, out)
		}
	})
	if cairnBin.err != nil {
		t.Fatal(cairnBin.err)
	}
	return cairnBin.path
}

// server is a running `cairn serve` child process.
type server struct {
	addr string
	cmd  *exec.Cmd
	log  *lockedBuffer // everything the server printed
	done chan struct{} // closed when the process has exited and its output is read
	err  error         // Wait's result, valid once done is closed
}

// startServer starts cairn serve on a kernel-chosen loopback port and waits
// for its ready line. The server is stopped, and its log checked, when the
// test and all its subtests have finished, whether they passed or not.
func startServer(t *testing.T, bin string, flags ...string) *server {
	t.Helper()
	s := &server{log: &lockedBuffer{}, done: make(chan struct{})}
	args := append([]string{"serve", "--bind_ip", "127.0.0.1", "--port", "0", "--dbpath", t.TempDir(), "--log-level", "debug"}, flags...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.SysProcAttr = serverSysProcAttr()
	s.cmd.Stderr = s.log
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	ready := make(chan string, 1)
	go func() {
		s.scan(stdout, ready)
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })

	select {
	case s.addr = <-ready:
		return s
	case <-s.done:
		t.Fatalf("cairn serve exited before it was ready (%v); its output:\n%s", s.err, s.log)
	case <-time.After(readyTimeout):
		t.Fatalf("cairn serve printed no \"cairn is ready\" line within %s; its output:\n%s", readyTimeout, s.log)
	}
	return nil
}

// scan copies the server's JSON log lines into s.log and sends the address
// from the ready line. It reads to the end, so the server never blocks on a
// full pipe.
func (s *server) scan(stdout io.Reader, ready chan<- string) {
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadBytes('\n')
		s.log.Write(line)
		var entry struct {
			Msg    string `json:"msg"`
			Listen string `json:"listen"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "cairn is ready" && entry.Listen != "" {
			select {
			case ready <- entry.Listen:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// stop shuts the server down as an operator would (SIGTERM), kills it if it
// does not exit in time, and fails the test if it did not exit cleanly or
// logged an error (a recovered panic, say) while the clients ran.
func (s *server) stop(t *testing.T) {
	select {
	case <-s.done:
		if s.addr != "" { // startServer has already reported an exit before ready
			t.Errorf("cairn serve exited while the clients were running (%v)", s.err)
		}
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
			if s.err != nil {
				t.Errorf("cairn serve did not shut down cleanly on SIGTERM: %v", s.err)
			}
		case <-time.After(stopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.done
			t.Errorf("cairn serve did not exit within %s of SIGTERM; killed it", stopTimeout)
		}
	}
	var errs []string
	for line := range strings.Lines(s.log.String()) {
		var entry struct {
			Level string `json:"level"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level == "ERROR" {
			errs = append(errs, strings.TrimSpace(line))
		}
	}
	if len(errs) > 0 {
		t.Errorf("cairn serve logged %d error(s):\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if t.Failed() {
		t.Logf("cairn serve output:\n%s", s.log)
	}
}

// clientEnv isolates the clients from the user's setup: mongosh keeps its
// config, logs and history under HOME, and the global config stops it from
// calling MongoDB's telemetry and update-check endpoints.
func clientEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	conf := filepath.Join(home, "mongosh.conf")
	err := os.WriteFile(conf, []byte("mongosh:\n  forceDisableTelemetry: true\n  updateURL: ''\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, k := range []string{"HOME=", "NODE_OPTIONS=", "MONGOSH_"} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
	return append(env, "HOME="+home, "MONGOSH_GLOBAL_CONFIG_FILE_FOR_TESTING="+conf, "NO_COLOR=1")
}

func homeOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	return ""
}

// run runs a client to completion in dir and returns what it printed.
func run(t *testing.T, dir string, env, argv []string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %s: %w", clientTimeout, err)
	}
	t.Logf("%s %s: %s", filepath.Base(argv[0]), strings.Join(argv[1:], " "), time.Since(start).Round(time.Millisecond))
	return out.String(), errOut.String(), err
}

// verify compares a script's report with the checks and gaps it must list.
func (c client) verify(t *testing.T, stdout, stderr string, runErr error) {
	t.Helper()
	var ok []string
	gaps := map[string]int{}
	var other []string
	for line := range strings.Lines(stdout) {
		line = strings.TrimRight(line, "\r\n")
		if name, found := strings.CutPrefix(line, "ok "); found {
			ok = append(ok, name)
			continue
		}
		if rest, found := strings.CutPrefix(line, "expected-gap "); found {
			name, code, found := strings.Cut(rest, ": ")
			if n, err := strconv.Atoi(code); found && err == nil {
				gaps[name] = n
				continue
			}
		}
		if line != "" && !slices.ContainsFunc(c.warnings, func(p string) bool { return strings.HasPrefix(line, p) }) {
			other = append(other, line)
		}
	}
	// A script stops at its first failure, so that line says it all; the
	// checks after it are only counted.
	failed := ""
	for line := range strings.Lines(stdout + stderr) {
		if strings.HasPrefix(line, "FAIL ") {
			failed = strings.TrimSpace(line)
			break
		}
	}

	var problems []string
	switch {
	case failed != "":
		problems = append(problems, fmt.Sprintf("%s stopped at its first failure (%d of %d checks passed before it):\n    %s",
			c.script, len(ok), len(c.checks), failed))
	case runErr != nil:
		problems = append(problems, fmt.Sprintf("%s exited with %v", c.script, runErr))
	}
	if failed == "" {
		for _, name := range c.checks {
			if !slices.Contains(ok, name) {
				problems = append(problems, fmt.Sprintf("check %q did not print \"ok %s\"", name, name))
			}
		}
		for _, g := range c.gaps {
			got, found := gaps[g.name]
			switch {
			case !found:
				problems = append(problems, fmt.Sprintf("expected gap %q was not reported", g.name))
			case got != g.code:
				problems = append(problems, fmt.Sprintf("expected gap %q failed with code %d, want %d", g.name, got, g.code))
			}
		}
		if len(other) > 0 {
			problems = append(problems, fmt.Sprintf("%s printed lines outside the ok/expected-gap protocol (errors or warnings at connect?)", c.name))
		}
		if strings.TrimSpace(stderr) != "" {
			problems = append(problems, fmt.Sprintf("%s printed on stderr", c.name))
		}
	}
	for _, name := range ok {
		if !slices.Contains(c.checks, name) {
			problems = append(problems, fmt.Sprintf("check %q is not in smoke_test.go's list for %s; add it there", name, c.name))
		}
	}
	if len(problems) == 0 && !slices.Equal(ok, c.checks) {
		problems = append(problems, fmt.Sprintf("checks ran in a different order than smoke_test.go lists them: %v", ok))
	}
	for name := range gaps {
		if !slices.ContainsFunc(c.gaps, func(g gap) bool { return g.name == name }) {
			problems = append(problems, fmt.Sprintf("gap %q is not in smoke_test.go's list for %s; add it there", name, c.name))
		}
	}
	if len(problems) > 0 {
		t.Errorf("%s smoke failed:\n  %s\nstdout:\n%s\nstderr:\n%s", c.name, strings.Join(problems, "\n  "), stdout, stderr)
	}
}

// checkMongoshLog fails on errors and warnings in mongosh's own log (under
// the isolated HOME): mongosh swallows some failures at connect, such as a
// startup probe the server answered badly, and only logs them. Optional
// native modules it can live without (Kerberos, client-side encryption,
// native DNS; npm ci skips building them) are expected to be missing.
func checkMongoshLog(t *testing.T, env []string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(homeOf(env), ".mongodb", "mongosh", "*_log"))
	if len(logs) == 0 {
		t.Errorf("mongosh wrote no log under %s", homeOf(env))
		return
	}
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		for line := range strings.Lines(string(b)) {
			var entry struct {
				S   string `json:"s"`
				Ctx string `json:"ctx"`
				Msg string `json:"msg"`
			}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Errorf("%s: unreadable log line %q: %v", path, line, err)
				continue
			}
			if entry.S != "E" && entry.S != "W" && entry.S != "F" {
				continue
			}
			if entry.Ctx == "mongosh-deps" && entry.Msg == "Missing optional dependency" {
				continue
			}
			t.Errorf("mongosh logged a problem: %s", strings.TrimSpace(line))
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the reader goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// authClients run against `cairn serve --auth`, in order: the Node.js
// driver makes the first user over the localhost exception, then mongosh
// logs in with each SCRAM mechanism.
var authClients = []client{
	{
		name: "node-auth", script: "auth_smoke.mjs",
		argv: func(node, _, addr string) []string { return []string{node, "auth_smoke.mjs", addr} },
		checks: []string{"unauthenticated-refused", "localhost-exception-first-user",
			"auth-SCRAM-SHA-256", "wrong-password-SCRAM-SHA-256", "auth-SCRAM-SHA-1", "wrong-password-SCRAM-SHA-1", "auth-negotiated"},
	},
	mongoshAuth("SCRAM-SHA-256"),
	mongoshAuth("SCRAM-SHA-1"),
}

func mongoshAuth(mech string) client {
	return client{
		name: "mongosh-" + mech, script: "auth_mongosh.js",
		argv: func(_, dir, addr string) []string {
			return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"),
				"mongodb://smoke:sm0ke%20pass@" + addr + "/admin?authMechanism=" + mech, "--quiet", "--norc", "--file", "auth_mongosh.js"}
		},
		checks: []string{"connectionStatus", "insert-find"},
	}
}

// TestClientsAuth is TestClients against a server started with --auth.
func TestClientsAuth(t *testing.T) {
	dir, node, bin := prepare(t)
	srv := startServer(t, bin, "--auth")
	env := clientEnv(t)
	for _, c := range authClients {
		stdout, stderr, err := run(t, dir, env, c.argv(node, dir, srv.addr))
		t.Run(c.name, func(t *testing.T) { c.verify(t, stdout, stderr, err) })
	}
}

// TestClientsTLS runs the Node.js driver and mongosh against `cairn serve
// --tlsMode requireTLS` with a certificate made for the test (testpki).
func TestClientsTLS(t *testing.T) {
	dir, node, bin := prepare(t)
	ca := testpki.New(t, "Cairn smoke CA")
	_, serverPEM := ca.Issue(t, "localhost", x509.ExtKeyUsageServerAuth)
	srv := startServer(t, bin, "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", serverPEM)
	env := clientEnv(t)
	for _, c := range []client{
		{
			name: "node-tls", script: "tls_smoke.mjs",
			argv:   func(node, _, addr string) []string { return []string{node, "tls_smoke.mjs", addr, ca.CAFile} },
			checks: []string{"tls-insert-find", "plain-refused", "untrusted-ca-refused"},
		},
		{
			name: "mongosh-tls", script: "tls_mongosh.js",
			argv: func(_, dir, addr string) []string {
				return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"), "mongodb://" + addr + "/?tls=true",
					"--tlsCAFile", ca.CAFile, "--quiet", "--norc", "--file", "tls_mongosh.js"}
			},
			checks: []string{"tls-ping", "tls-insert-find"},
		},
	} {
		stdout, stderr, err := run(t, dir, env, c.argv(node, dir, srv.addr))
		t.Run(c.name, func(t *testing.T) { c.verify(t, stdout, stderr, err) })
	}
}

// TestClientsChangeStreams runs the Node.js driver's collection.watch() and
// mongosh's db.coll.watch() against `cairn serve --replSet rs0` (change
// streams need a replica set member); the Node.js script initiates the
// one-member set first.
func TestClientsChangeStreams(t *testing.T) {
	dir, node, bin := prepare(t)
	// A member must find its own host:port in the configuration, so it
	// listens on a port chosen here rather than an ephemeral one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	srv := startServer(t, bin, "--replSet", "rs0", "--port", port)
	env := clientEnv(t)
	for _, c := range []client{
		{
			name: "node-changestreams", script: "changestream_smoke.mjs",
			argv:   func(node, _, addr string) []string { return []string{node, "changestream_smoke.mjs", addr} },
			checks: []string{"replSetInitiate", "watch-insert-update", "resumeAfter", "pipeline-and-events"},
		},
		{
			name: "mongosh-changestreams", script: "changestream_mongosh.js",
			argv: func(_, dir, addr string) []string {
				return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"), "mongodb://" + addr + "/?replicaSet=rs0",
					"--quiet", "--norc", "--file", "changestream_mongosh.js"}
			},
			checks: []string{"watch-insert", "watch-update", "resume-token"},
		},
	} {
		stdout, stderr, err := run(t, dir, env, c.argv(node, dir, srv.addr))
		t.Run(c.name, func(t *testing.T) { c.verify(t, stdout, stderr, err) })
	}
}

// prepare readies a client test: the smoke directory, node, the installed
// clients, the inputs read and cairn built.
func prepare(t *testing.T) (dir, node, bin string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "..", "..")
	node = tool(t, "node")
	installClients(t, dir)
	readInputs(t, root)
	return dir, node, buildCairn(t, root)
}
