package main

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/testnet"
	"github.com/cairndb/cairn/internal/testpki"
)

// cairnProc is this test binary run as `cairn serve`, logging to a file.
type cairnProc struct {
	cmd     *exec.Cmd
	logPath string
	addr    string
	exited  chan error
}

// startCairn runs `cairn serve --port 0 --dbpath <tmp> --logpath <tmp>
// args...` and waits for its "cairn is ready" line.
func startCairn(t *testing.T, args ...string) *cairnProc {
	t.Helper()
	dir := t.TempDir()
	p := &cairnProc{logPath: filepath.Join(dir, "cairn.log"), exited: make(chan error, 1)}
	all := append([]string{"serve", "--port", "0", "--dbpath", filepath.Join(dir, "data"), "--logpath", p.logPath}, args...)
	p.cmd = exec.Command(os.Args[0], all...)
	p.cmd.Env = append(os.Environ(), "CAIRN_TEST_AS_CAIRN=1")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	line := p.waitLog(t, "cairn is ready", 20*time.Second)
	p.addr, _ = line["listen"].(string)
	return p
}

// lines reads the log file's JSON lines.
func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// waitLog waits for a line whose msg starts with msg in the current log
// file.
func (p *cairnProc) waitLog(t *testing.T, msg string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, l := range readLog(t, p.logPath) {
			if s, _ := l["msg"].(string); strings.HasPrefix(s, msg) {
				return l
			}
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("cairn exited (%v) before logging %q", err, msg)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %q line in the log within %s", msg, within)
	return nil
}

func (p *cairnProc) client(t *testing.T) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr).SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The server may be gone: then the driver's Disconnect waits for
		// its monitor, which nothing here needs.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

func (p *cairnProc) waitExit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("cairn did not exit within 20 s")
		return nil
	}
}

// rotated lists the files the log was rotated to.
func rotated(t *testing.T, logPath string) []string {
	t.Helper()
	m, err := filepath.Glob(logPath + ".*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSignalsAndLogRotation: SIGHUP is logged and reopens the log file (a
// file moved away by an outside tool is replaced), the server goes on;
// logRotate and SIGUSR1 rename the file aside and start a new one; the
// shutdown command ends the process cleanly and removes its pid file.
func TestSignalsAndLogRotation(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "cairn.pid")
	p := startCairn(t, "--pidfilepath", pidFile)
	ctx := context.Background()
	c := p.client(t)
	if pid, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(p.cmd.Process.Pid) {
		t.Fatalf("pid file %q (err %v), want %d", pid, err, p.cmd.Process.Pid)
	}

	// An outside logrotate moves the file; SIGHUP makes cairn reopen it.
	moved := p.logPath + ".moved"
	if err := os.Rename(p.logPath, moved); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p.logPath); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !hasMsg(readLog(t, moved), "SIGHUP received") {
		t.Error("SIGHUP was not logged")
	}
	if err := c.Ping(ctx, nil); err != nil {
		t.Fatalf("the server did not survive SIGHUP: %v", err)
	}
	if _, err := c.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	// logRotate renames the file aside and starts a new one.
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "logRotate", Value: 1}}).Err(); err != nil {
		t.Fatalf("logRotate: %v", err)
	}
	if n := len(rotated(t, p.logPath)); n != 2 {
		t.Fatalf("after logRotate, rotated files %v; want the moved one and one renamed", rotated(t, p.logPath))
	}
	p.waitLog(t, "log file rotated", 5*time.Second)

	// SIGUSR1 does the same.
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for len(rotated(t, p.logPath)) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(rotated(t, p.logPath)); n != 3 {
		t.Fatalf("after SIGUSR1, rotated files %v", rotated(t, p.logPath))
	}

	// shutdown: no reply (the connection closes), a clean exit.
	err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shutdown", Value: 1}, {Key: "timeoutSecs", Value: 5}}).Err()
	if err == nil {
		t.Error("shutdown replied; mongod closes the connection instead")
	}
	if err := p.waitExit(t); err != nil {
		t.Fatalf("cairn exited with %v after shutdown", err)
	}
	if !hasMsg(readLog(t, p.logPath), "shutting down") {
		t.Error("no shutting down line")
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pid file is still there after a clean shutdown (%v)", err)
	}
}

// TestSignalShutdown: SIGTERM and SIGINT shut down cleanly, with a log line
// naming the signal.
func TestSignalShutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p := startCairn(t)
		c := p.client(t)
		if _, err := c.Database("test").Collection("c").InsertOne(context.Background(), bson.D{{Key: "a", Value: 1}}); err != nil {
			t.Fatal(err)
		}
		// Disconnect first: a driver disconnecting from a server that is
		// gone waits for its monitors to time out.
		if err := c.Disconnect(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := p.waitExit(t); err != nil {
			t.Fatalf("%v: exit %v", sig, err)
		}

		found := false
		for _, l := range readLog(t, p.logPath) {
			found = found || l["msg"] == "shutting down" && strings.Contains(l["reason"].(string), sig.String())
		}
		if !found {
			t.Errorf("%v: no shutting down line naming the signal", sig)
		}
	}
}

func hasMsg(lines []map[string]any, prefix string) bool {
	for _, l := range lines {
		if s, _ := l["msg"].(string); strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestQuiet: -v logs connection events; --quiet leaves them out at any
// verbosity and keeps the rest.
func TestQuiet(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		args := []string{"-v"}
		if quiet {
			args = append(args, "--quiet")
		}
		p := startCairn(t, args...)
		c := p.client(t)
		if err := c.Ping(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Disconnect(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.waitExit(t); err != nil {
			t.Fatal(err)
		}
		lines := readLog(t, p.logPath)
		if got := hasMsg(lines, "connection accepted"); got == quiet {
			t.Errorf("quiet %v: connection accepted logged: %v", quiet, got)
		}
		if !hasMsg(lines, "shutting down") {
			t.Errorf("quiet %v: the other lines are missing too", quiet)
		}
	}
}

// TestServeTLS: `cairn serve --tlsMode requireTLS --tlsCertificateKeyFile`
// (and the same from net.tls in a config file) serves the Go driver with
// tls=true and refuses a plain client.
func TestServeTLS(t *testing.T) {
	ca := testpki.New(t, "Cairn test CA")
	_, serverPEM := ca.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	conf := filepath.Join(t.TempDir(), "cairn.conf")
	text := "net:\n  tls:\n    mode: requireTLS\n    certificateKeyFile: " + serverPEM + "\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--tlsMode", "requireTLS", "--tlsCertificateKeyFile", serverPEM},
		{"-f", conf},
	} {
		p := startCairn(t, args...)
		if l := p.waitLog(t, "cairn is ready", time.Second); l["tlsMode"] != "requireTLS" {
			t.Errorf("%v: ready line %v", args, l)
		}
		secure, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr + "/?tls=true").
			SetTLSConfig(&tls.Config{RootCAs: ca.Pool}).SetServerSelectionTimeout(testnet.ConnectWait))
		if err != nil {
			t.Fatal(err)
		}
		if err := secure.Ping(context.Background(), nil); err != nil {
			t.Errorf("%v: TLS client: %v", args, err)
		}
		_ = secure.Disconnect(context.Background())
		plain, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr).SetServerSelectionTimeout(500 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Ping(context.Background(), nil); err == nil {
			t.Errorf("%v: a plain client connected under requireTLS", args)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = plain.Disconnect(ctx)
		cancel()
	}
}

// TestBackupAndRestore: `cairn backup` of a running server, then `cairn
// serve --dbpath` on the backup serves the data.
func TestBackupAndRestore(t *testing.T) {
	p := startCairn(t)
	ctx := context.Background()
	c := p.client(t)
	docs := []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}
	if _, err := c.Database("test").Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "backup")
	var stdout, stderr strings.Builder
	if code := run([]string{"backup", "--uri", "mongodb://" + p.addr, "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("cairn backup: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "restore with: cairn serve --dbpath "+out) {
		t.Errorf("backup output: %s", stdout.String())
	}
	restored := startCairn(t, "--dbpath", out)
	n, err := restored.client(t).Database("test").Collection("c").CountDocuments(ctx, bson.D{})
	if err != nil || n != 2 {
		t.Fatalf("restored server: %d documents, err %v", n, err)
	}
	if code := run([]string{"backup", "--uri", "mongodb://" + p.addr, "--out", out}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "is not empty") {
		t.Errorf("a backup into a used directory: exit %d, stderr %q", code, stderr.String())
	}
}

// TestBackupProgress: cairn backup prints the server's progress while the
// backup runs (held by the createBackupPauseAfterFiles fail point, so it
// runs long enough to be watched).
func TestBackupProgress(t *testing.T) {
	p := startCairn(t, "--setParameter", "enableTestCommands=1")
	ctx := context.Background()
	c := p.client(t)
	if _, err := c.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	fp := func(mode string) {
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "createBackupPauseAfterFiles"}, {Key: "mode", Value: mode}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fp("alwaysOn")
	go func() {
		time.Sleep(1500 * time.Millisecond)
		fp("off")
	}()
	out := filepath.Join(t.TempDir(), "backup")
	var stdout, stderr strings.Builder
	if code := run([]string{"backup", "--uri", "mongodb://" + p.addr, "--out", out, "--progress", "100ms"}, &stdout, &stderr); code != 0 {
		t.Fatalf("cairn backup: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	if !regexp.MustCompile(`(?m)^  \d+ files, \d+ bytes written \(about \d+% of \d+ bytes\)$`).MatchString(stdout.String()) {
		t.Errorf("no progress line in:\n%s", stdout.String())
	}
}

// TestAdviseReport: cairn advise prints a server's findings as a report,
// and --json the command's reply.
func TestAdviseReport(t *testing.T) {
	p := startCairn(t)
	ctx := context.Background()
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("m1:web/%d", i)}, {Key: "model", Value: "m1"}, {Key: "name", Value: fmt.Sprintf("web/%d", i)}})
	}
	if _, err := p.client(t).Database("juju").Collection("units").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"advise", "--uri", "mongodb://" + p.addr, "--db", "juju"}, &stdout, &stderr); code != 0 {
		t.Fatalf("cairn advise: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"juju.units: 20 documents sampled, 0 query shapes from system.profile", "[MEDIUM] duplicatedIdentity at _id", "→ Use a compound _id"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"advise", "--uri", "mongodb://" + p.addr, "--db", "juju", "--collection", "units", "--json"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"kind": "duplicatedIdentity"`) {
		t.Errorf("cairn advise --json: exit %d, %s%s", code, stdout.String(), stderr.String())
	}
}

// TestGetCmdLineOpts: parsed shows the config file's options and the flags
// in mongod's shape, a flag's value over the file's.
func TestGetCmdLineOpts(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "cairn.conf")
	text := "systemLog:\n  quiet: true\noperationProfiling:\n  slowOpThresholdMs: 50\ncairn:\n  sync: 50ms\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCairn(t, "-f", conf, "--slowms", "60", "--setParameter", "cursorTimeoutMillis=1000")
	raw, err := p.client(t).Database("admin").RunCommand(context.Background(), bson.D{{Key: "getCmdLineOpts", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"parsed.config": conf, "parsed.systemLog.quiet": true, "parsed.operationProfiling.slowOpThresholdMs": int32(60),
		"parsed.cairn.sync": "50ms", "parsed.setParameter.cursorTimeoutMillis": "1000", "parsed.net.bindIp": "127.0.0.1",
	} {
		v, err := raw.LookupErr(strings.Split(path, ".")...)
		var got any
		if err == nil {
			switch want.(type) {
			case bool:
				got, _ = v.BooleanOK()
			case int32:
				got, _ = v.Int32OK()
			default:
				got, _ = v.StringValueOK()
			}
		}
		if got != want {
			t.Errorf("%s = %v (%v), want %v; reply %s", path, got, v, want, raw)
		}
	}
}

// TestShutdownWhileFsyncLocked: a shutdown releases fsync's lock, so writes
// held by it end and the server exits cleanly instead of waiting for them.
func TestShutdownWhileFsyncLocked(t *testing.T) {
	p := startCairn(t)
	ctx := context.Background()
	c := p.client(t)
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}}).Err(); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := c.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}})
		held <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.waitExit(t); err != nil {
		t.Fatalf("exit %v", err)
	}
	select {
	case <-held: // acknowledged or cut off by the shutdown: either way it ended
	case <-time.After(10 * time.Second):
		t.Fatal("the write held by the fsync lock never ended")
	}
}

// TestBindIPList: --bind_ip takes a comma-separated list, as mongod's; the
// server answers on every address of it.
func TestBindIPList(t *testing.T) {
	p := startCairn(t, "--bind_ip", "127.0.0.1,127.0.0.2")
	l := p.waitLog(t, "cairn is ready", time.Second)
	addrs, _ := l["addresses"].([]any)
	if len(addrs) != 2 {
		t.Fatalf("ready line addresses %v, want two", l["addresses"])
	}
	for _, a := range addrs {
		q := &cairnProc{addr: a.(string)}
		if err := q.client(t).Ping(context.Background(), nil); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// TestTimeZoneInfo: --timeZoneInfo is where aggregation's timezone names are
// looked up: a zone that exists only there (Asia/Tokyo's rules, from Go's
// own zoneinfo.zip, under a made-up name) works.
func TestTimeZoneInfo(t *testing.T) {
	zr, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Cairn"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Cairn", "Test_Zone"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCairn(t, "--timeZoneInfo", dir)
	ctx := context.Background()
	c := p.client(t).Database("test")
	if _, err := c.Collection("c").InsertOne(ctx, bson.D{{Key: "t", Value: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.Collection("c").Aggregate(ctx, bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0},
		{Key: "h", Value: bson.D{{Key: "$hour", Value: bson.D{{Key: "date", Value: "$t"}, {Key: "timezone", Value: "Cairn/Test_Zone"}}}}}}}}})
	if err != nil {
		t.Fatalf("a zone from --timeZoneInfo: %v", err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0]["h"] != int32(9) {
		t.Fatalf("$hour in Cairn/Test_Zone (UTC+9): %v", out)
	}
}

// TestNetworkMessageCompressors: the server offers only the compressors
// --networkMessageCompressors lists ("disabled": none).
func TestNetworkMessageCompressors(t *testing.T) {
	for flag, want := range map[string]string{"zstd": "[zstd]", "disabled": "[]", "zlib,snappy": "[snappy zlib]"} {
		p := startCairn(t, "--networkMessageCompressors", flag)
		var reply struct {
			Compression []string `bson:"compression"`
		}
		err := p.client(t).Database("admin").RunCommand(context.Background(),
			bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: bson.A{"snappy", "zstd", "zlib"}}}).Decode(&reply)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(reply.Compression); got != want {
			t.Errorf("--networkMessageCompressors %s: hello offers %s, want %s", flag, got, want)
		}
	}
}

// TestLogRotateReopen: with --logRotate reopen, logRotate reopens the file
// under its name (an outside tool moved it) and renames nothing.
func TestLogRotateReopen(t *testing.T) {
	p := startCairn(t, "--logRotate", "reopen")
	moved := p.logPath + ".by-logrotate"
	if err := os.Rename(p.logPath, moved); err != nil {
		t.Fatal(err)
	}
	if err := p.client(t).Database("admin").RunCommand(context.Background(), bson.D{{Key: "logRotate", Value: 1}}).Err(); err != nil {
		t.Fatalf("logRotate: %v", err)
	}
	if _, err := os.Stat(p.logPath); err != nil {
		t.Fatalf("no new log file after logRotate with reopen: %v", err)
	}
	if files := rotated(t, p.logPath); len(files) != 1 || files[0] != moved {
		t.Errorf("files beside the log: %v, want only %s", files, moved)
	}
	if !hasMsg(readLog(t, moved), "log rotation initiated: reopening") {
		t.Error("the rotation was not logged in the old file")
	}
}
