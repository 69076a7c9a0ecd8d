package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/files.txt with the current results")

// TestConfigFiles runs testdata/files.txt: each stanza is a config file
// (after "== name"; a "flags:" line gives flags, name=value, applied after
// it), then "--", then the effective options that differ from Defaults, or
// the error.
func TestConfigFiles(t *testing.T) {
	path := filepath.Join("testdata", "files.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, stanza := range strings.Split("\n"+string(raw), "\n== ")[1:] {
		name, rest, _ := strings.Cut(stanza, "\n")
		input, want, ok := strings.Cut("\n"+rest, "\n--\n")
		input = strings.TrimPrefix(input, "\n")
		if !ok {
			t.Fatalf("stanza %q has no -- line", name)
		}
		var flags []Setting
		var text strings.Builder
		for _, line := range strings.SplitAfter(input, "\n") {
			if f, ok := strings.CutPrefix(line, "flags:"); ok {
				for _, kv := range strings.Fields(f) {
					k, v, _ := strings.Cut(kv, "=")
					flags = append(flags, Setting{k, v})
				}
				continue
			}
			text.WriteString(line)
		}
		got := effective(text.String(), flags)
		if !*rewrite && strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s:\n%s\ngot:\n%s\nwant:\n%s", name, input, got, want)
		}
		fmt.Fprintf(&out, "\n== %s\n%s\n--\n%s\n", name, strings.TrimRight(input, "\n"), strings.TrimSpace(got))
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimPrefix(out.String(), "\n")+""), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// effective renders what text and flags change from Defaults, a field a
// line, or the error.
func effective(text string, flags []Setting) string {
	o := Defaults()
	if err := ParseFile([]byte(text), &o); err != nil {
		return "error: " + err.Error()
	}
	for _, s := range flags {
		if err := SetFlag(&o, s.Flag, s.Value); err != nil {
			return "error: " + err.Error()
		}
	}
	if err := o.Validate(); err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	diff(&b, "", reflect.ValueOf(o), reflect.ValueOf(Defaults()))
	if b.Len() == 0 {
		return "(defaults)"
	}
	return b.String()
}

func diff(b *strings.Builder, prefix string, got, def reflect.Value) {
	for i := 0; i < got.NumField(); i++ {
		name := prefix + got.Type().Field(i).Name
		if name == "Given" {
			continue // TestGiven
		}
		g, d := got.Field(i), def.Field(i)
		if g.Kind() == reflect.Struct {
			diff(b, name+".", g, d)
			continue
		}
		if !reflect.DeepEqual(g.Interface(), d.Interface()) {
			fmt.Fprintf(b, "%s: %v\n", name, g.Interface())
		}
	}
}

// TestFlagsOverrideFile checks invariant "Flags win" through Load: a value
// from the file, overridden by a flag, and one the flags leave alone.
func TestFlagsOverrideFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mongod.conf")
	if err := os.WriteFile(file, []byte("net:\n  port: 27018\n  bindIp: 10.1.2.3\nsetParameter:\n  cursorTimeoutMillis: 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Load(file, []Setting{{"port", "27019"}, {"setParameter", "cursorTimeoutMillis=6000"}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Port != 27019 || o.BindIP != "10.1.2.3" || o.ConfigFile != file {
		t.Errorf("port %d bindIp %q file %q; want 27019 (flag), 10.1.2.3 (file), %s", o.Port, o.BindIP, o.ConfigFile, file)
	}
	// Startup parameters apply in order, so the flag's comes last and wins.
	if got := strings.Join(o.SetParameters, " "); got != "cursorTimeoutMillis=5000 cursorTimeoutMillis=6000" {
		t.Errorf("setParameters %q", got)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.conf"), nil); err == nil || !strings.Contains(err.Error(), "cannot read the config file") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestEveryOptionIsSettable: each table entry's setter takes a value and
// changes the options, so no key or flag is accepted and dropped
// (invariant "Accepted means honoured").
func TestEveryOptionIsSettable(t *testing.T) {
	samples := map[string]string{}
	for _, opt := range options {
		key := opt.path
		if key == "" {
			key = "--" + opt.flags[0]
		}
		v := map[kind]string{kindBool: "true", kindCount: "+1"}[opt.kind]
		if s, ok := samples[key]; ok {
			v = s
		}
		if v == "" {
			v = sampleValue[key]
		}
		if v == "" {
			t.Errorf("%s: no sample value in sampleValue", key)
			continue
		}
		o := Defaults()
		if key == "--noauth" {
			o.Auth = true
		}
		before := fmt.Sprintf("%+v", o)
		if err := opt.set(&o, v); err != nil {
			t.Errorf("%s %q: %v", key, v, err)
			continue
		}
		if fmt.Sprintf("%+v", o) == before && key != "systemLog.destination" {
			t.Errorf("%s %q changed nothing", key, v)
		}
	}
}

// sampleValue is a non-default value for each option that takes one.
var sampleValue = map[string]string{
	"net.port": "27018", "net.bindIp": "::1", "net.maxIncomingConnections": "5", "net.compression.compressors": "zstd",
	"net.tls.mode": "requireTLS", "net.tls.certificateKeyFile": "s.pem", "net.tls.CAFile": "ca.pem",
	"storage.dbPath": "/d", "storage.wiredTiger.engineConfig.cacheSizeGB": "1", "cairn.documentCacheSizeMB": "64", "cairn.sync": "10ms", "replication.oplogSizeMB": "2048", "replication.replSetName": "rs0", "sharding.clusterRole": "configsvr",
	"systemLog.destination": "file", "systemLog.path": "/l", "systemLog.logRotate": "reopen",
	"--log-level": "debug", "security.authorization": "enabled", "operationProfiling.mode": "all", "--profile": "1",
	"operationProfiling.slowOpThresholdMs": "5", "operationProfiling.slowOpSampleRate": "0.5", "setParameter": "a=1",
	"processManagement.pidFilePath": "/p", "processManagement.timeZoneInfo": "/z", "cairn.metricsAddr": ":9",
	"cairn.documentIdUniquePrefix": "3", "security.keyFile": "/k", "auditLog.destination": "console", "auditLog.format": "BSON", "auditLog.path": "/a", "auditLog.filter": "{}",
}

// TestGiven: the options the file and the flags gave, by config file path,
// for getCmdLineOpts; a flag given after the file replaces its value.
func TestGiven(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(file, []byte("net:\n  port: 1\n  bindIpAll: true\nsystemLog:\n  quiet: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Load(file, []Setting{{"port", "2"}, {"auth", "true"}, {"verbose", "+1"}, {"verbose", "+1"}, {"profile", "2"}, {"setParameter", "a=1"}, {"log-level", "warn"}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(o.Given)
	want := "[[config " + file + "] [net.bindIpAll true] [systemLog.quiet true] [net.port 2] [security.authorization enabled] [systemLog.verbosity 2] [operationProfiling.mode all]]"
	if got != want {
		t.Errorf("given\n%s\nwant\n%s", got, want)
	}
}

// TestConfigSvrPort: a config server listens on 27019 unless a port is
// given, as mongod --configsvr does.
func TestConfigSvrPort(t *testing.T) {
	for _, c := range []struct {
		flags []Setting
		port  int
	}{
		{[]Setting{{"configsvr", "true"}}, 27019},
		{[]Setting{{"configsvr", "true"}, {"port", "28000"}}, 28000},
		{nil, 27017},
	} {
		o, err := Load("", c.flags)
		if err != nil || o.Port != c.port {
			t.Errorf("%v: port %d, %v; want %d", c.flags, o.Port, err, c.port)
		}
	}
}

func TestUnsupportedFlag(t *testing.T) {
	if err := UnsupportedFlag("fork"); err == nil || !strings.Contains(err.Error(), "--fork is mongod's") {
		t.Errorf("--fork: %v", err)
	}
	if err := UnsupportedFlag("port"); err != nil {
		t.Errorf("--port: %v", err)
	}
	for name := range unsupportedFlags {
		if byFlag(name) != nil {
			t.Errorf("--%s is both honoured and refused", name)
		}
	}
	for path := range unsupportedKeys {
		if _, ok := byPath(path); ok {
			t.Errorf("%s is both honoured and refused", path)
		}
	}
	if n := Nearest("bindip", FlagNames()); n != "bind_ip" {
		t.Errorf("nearest to bindip: %q", n)
	}
	if n := Nearest("frobnicate", FlagNames()); n != "" {
		t.Errorf("nearest to frobnicate: %q", n)
	}
}
