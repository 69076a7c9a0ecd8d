package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCLI(t *testing.T) {
	cases := []struct {
		args       []string
		code       int
		wantOut    string // in stdout
		wantErrOut string // in stderr
	}{
		{[]string{"--help"}, 0, "serve", ""},
		{[]string{"--version"}, 0, "cairn " + version, ""},
		{nil, 2, "", "Usage"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--help"}, 0, "", "-dbpath"},
		{[]string{"version"}, 0, "cairn " + version, ""},
		{[]string{"serve", "--sync", "sometimes"}, 2, "", "--sync must be 'always' or a positive interval"},
		{[]string{"serve", "--log-level", "loud"}, 2, "", "--log-level must be"},
		{[]string{"serve", "extra"}, 2, "", `unexpected argument "extra"`},
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

func TestSyncInterval(t *testing.T) {
	if d, err := syncInterval("always"); err != nil || d != 0 {
		t.Errorf("always: %v %v", d, err)
	}
	if d, err := syncInterval("100ms"); err != nil || d.Milliseconds() != 100 {
		t.Errorf("100ms: %v %v", d, err)
	}
	if _, err := syncInterval("-1s"); err == nil {
		t.Error("a negative interval was accepted")
	}
}

func TestSetParameterFlag(t *testing.T) {
	f, err := parseServeFlags([]string{"--setParameter", "enableTestCommands=1", "--setParameter=cursorTimeoutMillis=5000"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.setParams, " "); got != "enableTestCommands=1 cursorTimeoutMillis=5000" {
		t.Fatalf("setParams = %q", got)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--dbpath", t.TempDir(), "--port", "0", "--setParameter", "noSuchParameter=1"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), `unknown --setParameter \"noSuchParameter\"`) {
		t.Fatalf("unknown parameter: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestCacheSizeFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want float64
		ok   bool
	}{
		{nil, 0, true},
		{[]string{"--cacheSizeGB", "1.5"}, 1.5, true},
		{[]string{"--wiredTigerCacheSizeGB=0.25"}, 0.25, true},
		{[]string{"--cacheSizeGB", "0.1"}, 0, false}, // below mongod's 0.25
		{[]string{"--cacheSizeGB", "20000"}, 0, false},
	} {
		f, err := parseServeFlags(c.args, &bytes.Buffer{})
		if (err == nil) != c.ok || (c.ok && f.cacheGB != c.want) {
			t.Errorf("%v: cacheGB %v, err %v; want %v, ok %v", c.args, f.cacheGB, err, c.want, c.ok)
		}
	}
}
