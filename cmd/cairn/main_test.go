package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/config"
)

// TestMain lets the lifecycle tests run this test binary as `cairn`.
func TestMain(m *testing.M) {
	if os.Getenv("CAIRN_TEST_AS_CAIRN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCLI(t *testing.T) {
	cases := []struct {
		args       []string
		code       int
		wantOut    string // in stdout
		wantErrOut string // in stderr
	}{
		{[]string{"--help"}, 0, "serve", ""},
		{[]string{"--help"}, 0, "bench", ""},
		{[]string{"--version"}, 0, "cairn " + version, ""},
		{nil, 2, "", "Usage"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--help"}, 0, "--dbpath", ""},
		{[]string{"serve", "--help"}, 0, "-f, --config", ""},
		{[]string{"serve", "--help"}, 0, "[net.port]", ""},
		{[]string{"serve", "-h"}, 0, "--setParameter", ""},
		{[]string{"serve", "--help"}, 0, "Net options [net]:\n      --port", ""},
		{[]string{"help", "serve"}, 0, "--tlsMode", ""},
		{[]string{"bench", "--help"}, 0, "", "--workload"},
		{[]string{"backup", "--help"}, 0, "cairn serve --dbpath", ""},
		{[]string{"backup"}, 2, "", "--out is required"},
		{[]string{"advise", "--help"}, 0, "sampled record", ""},
		{[]string{"advise"}, 2, "", "--db is required"},
		{[]string{"version"}, 0, "cairn " + version, ""},
		{[]string{"version", "--help"}, 0, "Print Cairn's version", ""},
		{[]string{"serve", "--sync", "sometimes"}, 2, "", "--sync must be 'always' or a positive interval"},
		{[]string{"serve", "--log-level", "loud"}, 2, "", "--log-level must be"},
		{[]string{"serve", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"serve", "--fork"}, 2, "", "--fork is mongod's, but Cairn does not support it"},
		{[]string{"serve", "--enableMajorityReadConcern"}, 2, "", "--enableMajorityReadConcern is mongod's, but Cairn does not support it"},
		{[]string{"serve", "--help"}, 0, "--replSet NAME", ""},
		{[]string{"serve", "--oplogSize", "0"}, 2, "", "--oplogSize must be a positive number of megabytes"},
		{[]string{"serve", "--help"}, 0, "Replication options [replication]:\n      --replSet NAME", ""},
		{[]string{"serve", "--bindip", "0.0.0.0"}, 2, "", "unknown flag --bindip (did you mean --bind_ip?)"},
		{[]string{"serve", "--frobnicate"}, 2, "", "unknown flag --frobnicate\n"},
		{[]string{"serve", "--port", "70000"}, 2, "", "--port must be an integer from 0 to 65535"},
		{[]string{"serve", "--tlsMode", "requireTLS"}, 2, "", "needs --tlsCertificateKeyFile"},
		{[]string{"serve", "--bind_ip", "10.0.0.1", "--bind_ip_all"}, 2, "", "mutually exclusive"},
		{[]string{"serve", "-f", "/nonexistent/cairn.conf"}, 2, "", "cannot read the config file"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.wantOut) || !strings.Contains(errOut.String(), c.wantErrOut) {
			t.Errorf("cairn %v: exit %d, stdout %q, stderr %q; want exit %d with %q / %q",
				c.args, code, out.String(), errOut.String(), c.code, c.wantOut, c.wantErrOut)
		}
	}
}

// parsed runs `cairn serve args` with serveFunc replaced, returning the
// options the server would have run with.
func parsed(t *testing.T, args ...string) config.Options {
	t.Helper()
	var got config.Options
	saved := serveFunc
	serveFunc = func(o config.Options, _, _ io.Writer) int { got = o; return 0 }
	defer func() { serveFunc = saved }()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"serve"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("cairn serve %v: exit %d, stderr %q", args, code, errOut.String())
	}
	return got
}

// TestServeFlags: each flag reaches the options, mongod's spelling and
// Cairn's older Go-style single-dash one alike.
func TestServeFlags(t *testing.T) {
	if o := parsed(t); o.Port != 27017 || o.ListenIP() != "127.0.0.1" || o.Sync != "always" || o.Auth {
		t.Errorf("defaults: %+v", o)
	}
	o := parsed(t, "--port", "27018", "--bind_ip_all", "--dbpath=/d", "--logpath", "/l", "--logappend", "--quiet", "-vv",
		"--auth", "--maxConns", "7", "--cacheSizeGB", "1.5", "--slowms", "20", "--profile", "1",
		"--setParameter", "enableTestCommands=1", "--setParameter=cursorTimeoutMillis=5000", "--networkMessageCompressors", "zstd")
	want := config.Defaults()
	want.Port, want.BindIPAll, want.DBPath, want.LogPath, want.LogAppend, want.Quiet, want.Verbosity = 27018, true, "/d", "/l", true, true, 2
	want.Auth, want.MaxConns, want.CacheSizeGB, want.SlowMS, want.Profile = true, 7, 1.5, 20, 1
	want.SetParameters = []string{"enableTestCommands=1", "cursorTimeoutMillis=5000"}
	want.Compressors = []string{"zstd"}
	o.Given = nil // TestGiven in internal/config
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got  %+v\nwant %+v", o, want)
	}
	// Go-style single-dash long flags, as the first command line took them.
	if o := parsed(t, "-port", "27019", "-dbpath", "/x", "-max-conns=3", "-sync", "10ms"); o.Port != 27019 || o.DBPath != "/x" || o.MaxConns != 3 || o.Sync != "10ms" {
		t.Errorf("single-dash flags: %+v", o)
	}
	if o := parsed(t, "--wiredTigerCacheSizeGB=0.25"); o.CacheSizeGB != 0.25 {
		t.Errorf("--wiredTigerCacheSizeGB: %v", o.CacheSizeGB)
	}
}

// TestServeConfigFile: -f reads mongod's YAML, and flags override it.
func TestServeConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mongod.conf")
	text := "net:\n  port: 28001\n  bindIp: 127.0.0.2\nstorage:\n  dbPath: /from/file\nsecurity:\n  authorization: enabled\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	o := parsed(t, "-f", file, "--port", "28002")
	if o.Port != 28002 || o.BindIP != "127.0.0.2" || o.DBPath != "/from/file" || !o.Auth || o.ConfigFile != file {
		t.Errorf("config file and flag: %+v", o)
	}
	if o := parsed(t, "--config="+file, "--noauth"); o.Auth || o.Port != 28001 {
		t.Errorf("--noauth over the file: %+v", o)
	}
	bad := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(bad, []byte("replication:\n  enableMajorityReadConcern: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "-f", bad}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "replication.enableMajorityReadConcern is not supported by Cairn") {
		t.Errorf("an unsupported key: exit %d, stderr %q", code, errOut.String())
	}
}

// TestHelpListsEveryFlag: every flag has a section in serve's help (a
// section missing from helpSections would hide its flags).
func TestHelpListsEveryFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	for _, f := range config.Flags() {
		if !strings.Contains(out.String(), "--"+f.Name+" ") && !strings.Contains(out.String(), "--"+f.Name+"\n") {
			t.Errorf("--%s (section %q) is missing from serve --help", f.Name, f.Section)
		}
	}
}

func TestSetParameterFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--dbpath", t.TempDir(), "--port", "0", "--setParameter", "noSuchParameter=1"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), `unknown --setParameter \"noSuchParameter\"`) {
		t.Fatalf("unknown parameter: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
