package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadKeyFile: a key file group or others can read, or one
// outside mongod's key format, stops `cairn serve` at startup with a
// message naming the file and the rule; a good one implies --auth.
func TestServeRefusesBadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"group readable", write("open", "c2VjcmV0a2V5\n", 0o640), "are too open"},
		{"world readable", write("world", "c2VjcmV0a2V5\n", 0o604), "are too open"},
		{"short", write("short", "abc\n", 0o400), "must be between 6 and 1024 chars"},
		{"not base64", write("bad", "secret-key!\n", 0o400), "invalid char in key file"},
		{"missing", filepath.Join(dir, "none"), "error getting file"},
	} {
		var out, errOut bytes.Buffer
		code := run([]string{"serve", "--dbpath", filepath.Join(dir, "db"), "--port", "0", "--keyFile", tc.file}, &out, &errOut)
		if code == 0 || !strings.Contains(out.String()+errOut.String(), tc.want) || !strings.Contains(out.String()+errOut.String(), tc.file) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure with %q", tc.name, code, out.String(), errOut.String(), tc.want)
		}
	}
	good := write("good", "c2VjcmV0\na2V5\n", 0o400)
	if o := parsed(t, "--keyFile", good); !o.AuthEnabled() || o.KeyFile != good {
		t.Errorf("--keyFile: auth %v, keyFile %q", o.AuthEnabled(), o.KeyFile)
	}
}

// TestServeRefusesAuthWithoutKeyFile: a replica set member or a shard
// with --auth and no --keyFile stops at startup with mongod's message
// (members could not prove themselves to each other); with a key file the
// same flags are accepted (the sharded wire tests run them).
func TestServeRefusesAuthWithoutKeyFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"replica set", []string{"--replSet", "rs0"}, "security.keyFile is required when authorization is enabled with replica sets"},
		{"shard", []string{"--shardsvr"}, "security.keyFile is required when authorization is enabled with sharding"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"serve", "--dbpath", filepath.Join(dir, tc.name), "--port", "0", "--auth"}, tc.args...)
		code := run(args, &out, &errOut)
		if code == 0 || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a failure with %q", tc.name, code, out.String(), errOut.String(), tc.want)
		}
	}
}
