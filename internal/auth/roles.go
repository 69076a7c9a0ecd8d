package auth

import (
	"errors"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The role store's errors.
var (
	ErrRoleExists   = errors.New("auth: role already exists")
	ErrRoleNotFound = errors.New("auth: role not found")
)

// Role is a user-defined role (admin.system.roles): privileges of its own
// and roles it inherits. Values are never changed once stored.
type Role struct {
	Name       RoleName
	Privileges Privileges
	Roles      []RoleName
}

// Key is the role's _id in admin.system.roles: "db.role".
func (r *Role) Key() string { return r.Name.DB + "." + r.Name.Role }

// roleStore holds the user-defined roles, written through to a Backing.
type roleStore struct {
	mu    sync.RWMutex
	roles map[string]*Role
	back  Backing
}

func openRoles(back Backing) (*roleStore, error) {
	docs, err := back.Load()
	if err != nil {
		return nil, err
	}
	rs := &roleStore{roles: map[string]*Role{}, back: back}
	for _, d := range docs {
		r, err := roleFromDoc(d)
		if err != nil {
			return nil, err
		}
		rs.roles[r.Key()] = r
	}
	return rs, nil
}

// Role finds a user-defined role.
func (s *Store) Role(n RoleName) (*Role, bool) {
	s.roles.mu.RLock()
	defer s.roles.mu.RUnlock()
	r, ok := s.roles.roles[n.DB+"."+n.Role]
	return r, ok
}

// RoleExists reports whether n is a built-in or a user-defined role.
func (s *Store) RoleExists(n RoleName) bool {
	if _, ok := Builtin(n); ok {
		return true
	}
	_, ok := s.Role(n)
	return ok
}

// Roles lists the user-defined roles of db ("" for all), by _id.
func (s *Store) Roles(db string) []*Role {
	s.roles.mu.RLock()
	defer s.roles.mu.RUnlock()
	var out []*Role
	for _, r := range s.roles.roles {
		if db == "" || r.Name.DB == db {
			out = append(out, r)
		}
	}
	sortByKey(out, (*Role).Key)
	return out
}

// PutRole creates (create: true) or replaces a user-defined role.
func (s *Store) PutRole(r *Role, create bool) error {
	rs := s.roles
	rs.mu.Lock()
	defer rs.mu.Unlock()
	_, exists := rs.roles[r.Key()]
	switch {
	case create && exists:
		return ErrRoleExists
	case !create && !exists:
		return ErrRoleNotFound
	}
	doc, err := r.doc()
	if err != nil {
		return err
	}
	if err := rs.back.Put(r.Key(), doc); err != nil {
		return err
	}
	rs.roles[r.Key()] = r
	s.gen.Add(1)
	return nil
}

// DropRole removes a user-defined role (users and roles that name it keep
// the name, which then grants nothing, as MongoDB leaves them until
// it cleans them up).
func (s *Store) DropRole(n RoleName) error {
	rs := s.roles
	rs.mu.Lock()
	defer rs.mu.Unlock()
	key := n.DB + "." + n.Role
	if _, ok := rs.roles[key]; !ok {
		return ErrRoleNotFound
	}
	if err := rs.back.Delete(key); err != nil {
		return err
	}
	delete(rs.roles, key)
	s.gen.Add(1)
	return nil
}

// Resolve is the privileges roles grant, with the roles they inherit, to
// any depth (a cycle is followed once), and every role reached.
func (s *Store) Resolve(roles []RoleName) (Privileges, []RoleName) {
	var ps Privileges
	var seen []RoleName
	var walk func(rs []RoleName)
	walk = func(rs []RoleName) {
		for _, r := range rs {
			if containsRole(seen, r) {
				continue
			}
			seen = append(seen, r)
			if r == SystemRole {
				ps = append(ps, Privilege{Resource{AnyResource: true}, []string{AnyAction}})
				continue
			}
			if p, ok := Builtin(r); ok {
				ps = append(ps, p...)
				continue
			}
			if role, ok := s.Role(r); ok {
				ps = append(ps, role.Privileges...)
				walk(role.Roles)
			}
		}
	}
	walk(roles)
	return ps, seen
}

func containsRole(rs []RoleName, r RoleName) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// ResourceDoc is r in MongoDB's document form.
func ResourceDoc(r Resource) bson.D {
	switch {
	case r.AnyResource:
		return bson.D{{Key: "anyResource", Value: true}}
	case r.Cluster:
		return bson.D{{Key: "cluster", Value: true}}
	}
	return bson.D{{Key: "db", Value: r.DB}, {Key: "collection", Value: r.Collection}}
}

// PrivilegesDoc is ps as [{resource, actions}].
func PrivilegesDoc(ps Privileges) bson.A {
	out := bson.A{}
	for _, p := range ps {
		out = append(out, bson.D{{Key: "resource", Value: ResourceDoc(p.Resource)}, {Key: "actions", Value: p.Actions}})
	}
	return out
}

func (r *Role) doc() (bson.Raw, error) {
	return bson.Marshal(bson.D{{Key: "_id", Value: r.Key()}, {Key: "role", Value: r.Name.Role}, {Key: "db", Value: r.Name.DB},
		{Key: "privileges", Value: PrivilegesDoc(r.Privileges)}, {Key: "roles", Value: RolesDoc(r.Roles)}})
}

// ParsePrivilege reads one {resource, actions} document; every action must
// be one MongoDB knows.
func ParsePrivilege(d bson.Raw) (Privilege, error) {
	var p Privilege
	res, ok := d.Lookup("resource").DocumentOK()
	if !ok {
		return p, fmt.Errorf("privilege must have a 'resource' document")
	}
	if v, ok := res.Lookup("cluster").BooleanOK(); ok && v {
		p.Resource.Cluster = true
	} else if v, ok := res.Lookup("anyResource").BooleanOK(); ok && v {
		p.Resource.AnyResource = true
	} else {
		db, ok1 := res.Lookup("db").StringValueOK()
		coll, ok2 := res.Lookup("collection").StringValueOK()
		if !ok1 || !ok2 {
			return p, fmt.Errorf("resource must be {cluster: true}, {anyResource: true} or {db: <string>, collection: <string>}")
		}
		p.Resource = Resource{DB: db, Collection: coll}
	}
	acts, ok := d.Lookup("actions").ArrayOK()
	if !ok {
		return p, fmt.Errorf("privilege must have an 'actions' array")
	}
	vals, _ := acts.Values()
	for _, v := range vals {
		a, ok := v.StringValueOK()
		if !ok || !knownActions[a] {
			return p, fmt.Errorf("Unrecognized action privilege string: %s", v)
		}
		p.Actions = append(p.Actions, a)
	}
	return p, nil
}

// knownActions are the actions the built-in roles grant (MongoDB's action
// types that apply to Cairn), the vocabulary of user-defined privileges.
var knownActions = func() map[string]bool {
	m := map[string]bool{"anyAction": true, "internal": true}
	for _, l := range [][]string{readActions, readWriteActions, dbAdminActions, dbAdminProfileActions, userAdminActions,
		clusterMonitorActions, clusterMonitorAnyDBActions, clusterManagerActions, clusterManagerAnyDBActions, hostManagerActions,
		{"authSchemaUpgrade", "setUserWriteBlockMode", "changeOwnPassword", "changeOwnCustomData",
			"impersonate"}} { // impersonate: name another user's uid in an lsid (__system has it)
		for _, a := range l {
			m[a] = true
		}
	}
	return m
}()

func roleFromDoc(d bson.Raw) (*Role, error) {
	r := &Role{}
	var ok1, ok2 bool
	r.Name.Role, ok1 = d.Lookup("role").StringValueOK()
	r.Name.DB, ok2 = d.Lookup("db").StringValueOK()
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("auth: corrupt admin.system.roles document %s", d.Lookup("_id"))
	}
	if arr, ok := d.Lookup("privileges").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			doc, _ := v.DocumentOK()
			p, err := ParsePrivilege(doc)
			if err != nil {
				return nil, fmt.Errorf("auth: corrupt admin.system.roles document %s: %w", d.Lookup("_id"), err)
			}
			r.Privileges = append(r.Privileges, p)
		}
	}
	if arr, ok := d.Lookup("roles").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			doc, _ := v.DocumentOK()
			role, _ := doc.Lookup("role").StringValueOK()
			db, _ := doc.Lookup("db").StringValueOK()
			r.Roles = append(r.Roles, RoleName{role, db})
		}
	}
	return r, nil
}
