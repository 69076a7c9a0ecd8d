package auth

import (
	"errors"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

type memBacking map[string]bson.Raw

func (m memBacking) Load() ([]bson.Raw, error) {
	var out []bson.Raw
	for _, d := range m {
		out = append(out, d)
	}
	return out, nil
}
func (m memBacking) Put(id string, d bson.Raw) error { m[id] = d; return nil }
func (m memBacking) Delete(id string) error          { delete(m, id); return nil }

func newUser(t *testing.T, db, name, pwd string, roles ...RoleName) *User {
	t.Helper()
	u := &User{Name: name, DB: db, Credentials: map[string]Credential{}, Roles: roles}
	for _, m := range []string{SCRAMSHA1, SCRAMSHA256} {
		c, err := NewCredential(m, name, pwd)
		if err != nil {
			t.Fatal(err)
		}
		u.Credentials[m] = c
	}
	return u
}

// authenticate runs a whole SCRAM exchange with the library's client, as a
// driver would (SCRAM-SHA-1's password being MongoDB's digest).
func authenticate(s *Store, mech, db, user, pwd string) error {
	hg, _ := hashOf(mech)
	var client *scram.Client
	var err error
	if mech == SCRAMSHA1 {
		client, err = hg.NewClientUnprepped(user, MongoPasswordDigest(user, pwd), "")
	} else {
		client, err = hg.NewClient(user, pwd, "")
	}
	if err != nil {
		return err
	}
	cc := client.NewConversation()
	conv, err := s.Start(mech, db)
	if err != nil {
		return err
	}
	msg, _ := cc.Step("")
	for {
		reply, done, err := conv.Step([]byte(msg))
		if err != nil {
			return err
		}
		msg, err = cc.Step(string(reply))
		if err != nil {
			return err
		}
		if done {
			if conv.User() == nil || !cc.Valid() {
				return errors.New("done but not valid")
			}
			return nil
		}
	}
}

func TestSCRAM(t *testing.T) {
	back := memBacking{}
	s, err := Open(back, memBacking{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Empty() {
		t.Fatal("new store not empty")
	}
	if err := s.Create(newUser(t, "admin", "ann", "pencil", RoleName{"root", "admin"})); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(newUser(t, "admin", "ann", "other")); !errors.Is(err, ErrUserExists) {
		t.Fatalf("second create: %v", err)
	}
	// Reopened from the backing documents, the users authenticate the same.
	s2, err := Open(back, memBacking{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mech, db, user, pwd string
		ok                  bool
	}{
		{SCRAMSHA256, "admin", "ann", "pencil", true},
		{SCRAMSHA1, "admin", "ann", "pencil", true},
		{SCRAMSHA256, "admin", "ann", "pencil!", false},
		{SCRAMSHA1, "admin", "ann", "Pencil", false},
		{SCRAMSHA256, "test", "ann", "pencil", false}, // another database's users
		{SCRAMSHA256, "admin", "bob", "pencil", false},
	} {
		for _, st := range []*Store{s, s2} {
			err := authenticate(st, tc.mech, tc.db, tc.user, tc.pwd)
			if (err == nil) != tc.ok {
				t.Errorf("%+v: err %v", tc, err)
			}
			if err != nil && !errors.Is(err, ErrAuthFailed) {
				t.Errorf("%+v: err %v, want ErrAuthFailed", tc, err)
			}
		}
	}
	if _, err := s.Start("PLAIN", "admin"); !errors.Is(err, ErrUnknownMechanism) {
		t.Errorf("PLAIN: %v", err)
	}
	u, _ := s2.Lookup("admin", "ann")
	if len(u.Roles) != 1 || u.Roles[0] != (RoleName{"root", "admin"}) {
		t.Errorf("roles after reload: %v", u.Roles)
	}
	if n, _ := s.Drop("admin", nil); n != 1 || !s.Empty() || len(back) != 0 {
		t.Errorf("drop: %d, empty %v, backing %d", n, s.Empty(), len(back))
	}
}

func TestPrivileges(t *testing.T) {
	s, _ := Open(memBacking{}, memBacking{})
	custom := &Role{Name: RoleName{"reports", "a"}, Privileges: Privileges{{CollResource("a", "r"), []string{"insert"}}}, Roles: []RoleName{{"read", "b"}, {"loop", "a"}}}
	loop := &Role{Name: RoleName{"loop", "a"}, Roles: []RoleName{{"reports", "a"}}}
	for _, r := range []*Role{custom, loop} {
		if err := s.PutRole(r, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		role   RoleName
		target Resource
		action string
		ok     bool
	}{
		{RoleName{"read", "a"}, CollResource("a", "c"), "find", true},
		{RoleName{"read", "a"}, CollResource("b", "c"), "find", false},
		{RoleName{"read", "a"}, CollResource("a", "c"), "insert", false},
		{RoleName{"read", "a"}, CollResource("a", "system.users"), "find", false},
		{RoleName{"read", "a"}, DBResource("a"), "listCollections", true},
		{RoleName{"read", "a"}, Cluster, "find", false},
		{RoleName{"readWrite", "a"}, CollResource("a", "c"), "insert", true},
		{RoleName{"dbAdmin", "a"}, CollResource("a", "c"), "find", false},
		{RoleName{"dbAdmin", "a"}, CollResource("a", "system.profile"), "find", true},
		{RoleName{"userAdmin", "a"}, DBResource("a"), "createUser", true},
		{RoleName{"userAdmin", "a"}, DBResource("b"), "createUser", false},
		{RoleName{"readAnyDatabase", "admin"}, CollResource("x", "y"), "find", true},
		{RoleName{"readAnyDatabase", "a"}, CollResource("x", "y"), "find", false}, // only in admin
		{RoleName{"readAnyDatabase", "admin"}, Cluster, "listDatabases", true},
		{RoleName{"clusterMonitor", "admin"}, Cluster, "serverStatus", true},
		{RoleName{"clusterMonitor", "admin"}, Cluster, "killop", false},
		{RoleName{"clusterAdmin", "admin"}, Cluster, "killop", true},
		{RoleName{"root", "admin"}, CollResource("x", "y"), "insert", true},
		{RoleName{"root", "admin"}, DBResource("x"), "createUser", true},
		{RoleName{"root", "admin"}, Cluster, "setParameter", true},
		{RoleName{"nosuch", "admin"}, CollResource("x", "y"), "find", false},
		{RoleName{"reports", "a"}, CollResource("a", "r"), "insert", true},
		{RoleName{"reports", "a"}, CollResource("a", "s"), "insert", false},
		{RoleName{"reports", "a"}, CollResource("b", "s"), "find", true}, // inherited read@b
		{RoleName{"loop", "a"}, CollResource("b", "s"), "find", true},    // through a cycle
		{RoleName{"loop", "a"}, CollResource("a", "s"), "find", false},
	} {
		ps, _ := s.Resolve([]RoleName{tc.role})
		if got := ps.Allows(tc.target, tc.action); got != tc.ok {
			t.Errorf("%v %s on %+v: %v, want %v", tc.role, tc.action, tc.target, got, tc.ok)
		}
	}
}

// TestBuiltinRoleNames: every listed name is a built-in role on admin, and
// a name off the list is not one.
func TestBuiltinRoleNames(t *testing.T) {
	for _, n := range BuiltinRoleNames {
		if _, ok := Builtin(RoleName{n, "admin"}); !ok {
			t.Errorf("%s is listed but Builtin does not know it", n)
		}
	}
	if _, ok := Builtin(RoleName{"readwrite", "admin"}); ok {
		t.Error("Builtin knows a role off the list")
	}
}
