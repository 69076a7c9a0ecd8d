package auth

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestParseKey: mongod's key format rules — whitespace anywhere ignored,
// base64 characters only, 6 to 1024 of them.
func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		name, in, key, err string
	}{
		{name: "plain", in: "abcdef", key: "abcdef"},
		{name: "whitespace anywhere", in: " ab cd\n\tef\r\n", key: "abcdef"},
		{name: "base64 alphabet", in: "AZaz09+/==", key: "AZaz09+/=="},
		{name: "too short", in: "abc de", err: "has length 5, must be between 6 and 1024"},
		{name: "empty", in: "\n\n", err: "has length 0"},
		{name: "too long", in: strings.Repeat("a", 1025), err: "has length 1025"},
		{name: "longest", in: strings.Repeat("a", 1024), key: strings.Repeat("a", 1024)},
		{name: "bad char", in: "abcdef-", err: "invalid char"},
		{name: "non-ascii", in: "abcdefé", err: "invalid char"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParseKey("k", []byte(tc.in))
			if tc.err != "" {
				if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || string(key) != tc.key {
				t.Fatalf("key %q err %v, want %q", key, err, tc.key)
			}
		})
	}
}

// TestReadKeyFilePermissions: a key file group or others may read, write
// or run is refused at startup, naming the file, as mongod's.
func TestReadKeyFilePermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mongod does not check a key file's permissions on Windows either")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, []byte("c2VjcmV0a2V5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o400, true}, {0o600, true}, {0o700, true}, {0o640, false}, {0o604, false}, {0o620, false}, {0o644, false}, {0o610, false}} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		key, err := ReadKeyFile(path)
		if tc.ok {
			if err != nil || string(key) != "c2VjcmV0a2V5" {
				t.Errorf("mode %04o: key %q err %v", tc.mode, key, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "permissions on "+path+" are too open") {
			t.Errorf("mode %04o: err %v, want permissions too open", tc.mode, err)
		}
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, ErrKeyFile) {
		t.Errorf("a missing key file: %v", err)
	}
	if _, err := ReadKeyFile(dir); !errors.Is(err, ErrKeyFile) {
		t.Errorf("a directory as key file: %v", err)
	}
}

// TestSystemUser: with a key file, __system@local authenticates over both
// SCRAMs with the key as its password, holds anyAction on anyResource, and
// is neither stored nor listed.
func TestSystemUser(t *testing.T) {
	back := memBacking{}
	s, err := Open(back, memBacking{})
	if err != nil {
		t.Fatal(err)
	}
	if err := authenticate(s, SCRAMSHA256, SystemDB, SystemUser, "c2VjcmV0a2V5"); err == nil {
		t.Fatal("__system authenticated with no key file in use")
	}
	u, err := NewSystemUser([]byte("c2VjcmV0a2V5"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetSystemUser(u)
	for _, mech := range []string{SCRAMSHA1, SCRAMSHA256} {
		if err := authenticate(s, mech, SystemDB, SystemUser, "c2VjcmV0a2V5"); err != nil {
			t.Errorf("%s with the key: %v", mech, err)
		}
		if err := authenticate(s, mech, SystemDB, SystemUser, "c2VjcmV0a2V6"); err == nil {
			t.Errorf("%s with another key authenticated", mech)
		}
		if err := authenticate(s, mech, "admin", SystemUser, "c2VjcmV0a2V5"); err == nil {
			t.Errorf("%s: __system on admin authenticated", mech)
		}
	}
	if len(back) != 0 || len(s.List("")) != 0 || !s.Empty() {
		t.Errorf("the internal user was stored or listed: %d stored, %d listed", len(back), len(s.List("")))
	}
	privs, _ := s.Resolve(u.Roles)
	for _, target := range []Resource{Cluster, DBResource("x"), CollResource("admin", "system.users"), {AnyResource: true}} {
		if !privs.Allows(target, "dropDatabase") || !privs.Allows(target, "shutdown") {
			t.Errorf("__system lacks an action on %+v", target)
		}
	}
	if s.RoleExists(SystemRole) {
		t.Error("__system is a role users may be granted")
	}
}

// TestReload: users and roles written behind the store's back (as
// replication writes them on a secondary) are seen after Reload, which
// bumps the change counter only when something changed.
func TestReload(t *testing.T) {
	back, roles := memBacking{}, memBacking{}
	s, err := Open(back, roles)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Open(back, roles) // another process over the same documents
	if err := other.Create(newUser(t, "admin", "ann", "pw", RoleName{"read", "test"})); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup("admin", "ann"); ok {
		t.Fatal("the user is known before a reload")
	}
	gen := s.Gen()
	if changed, err := s.Reload(); err != nil || !changed {
		t.Fatalf("reload: changed %v, %v", changed, err)
	}
	if _, ok := s.Lookup("admin", "ann"); !ok || s.Gen() == gen {
		t.Fatalf("after a reload: found %v, gen %d → %d", ok, gen, s.Gen())
	}
	if err := authenticate(s, SCRAMSHA256, "admin", "ann", "pw"); err != nil {
		t.Fatalf("the reloaded user cannot authenticate: %v", err)
	}
	if changed, _ := s.Reload(); changed {
		t.Error("a reload with nothing new reported a change")
	}
	if _, err := other.Drop("admin", nil); err != nil {
		t.Fatal(err)
	}
	if changed, _ := s.Reload(); !changed {
		t.Error("a dropped user was not seen")
	}
	if _, ok := s.Lookup("admin", "ann"); ok {
		t.Error("the dropped user is still found")
	}
}
