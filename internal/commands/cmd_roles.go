package commands

import (
	"context"
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// The role management commands: user-defined roles in admin.system.roles,
// _id "db.role", with their own privileges and inherited roles.

// roleNameArg is the command-name field as a role of the command's
// database.
func roleNameArg(req *Request) (auth.RoleName, error) {
	name, ok := req.First().StringValueOK()
	if !ok || name == "" {
		return auth.RoleName{}, mongoerr.New(mongoerr.BadValue, "Role name must be a non-empty string")
	}
	return auth.RoleName{Role: name, DB: req.DB}, nil
}

// privilegesArg reads a privileges array for a role of db: outside admin a
// role's privileges stay in its own database, as MongoDB requires.
func privilegesArg(req *Request, required bool) (auth.Privileges, bool, error) {
	v, ok := req.Arg("privileges")
	if !ok {
		if required {
			return nil, false, mongoerr.New(mongoerr.BadValue, "BSON field '%s.privileges' is missing but a required field", req.Name)
		}
		return nil, false, nil
	}
	if v.Type != bsoncore.TypeArray {
		return nil, false, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.privileges' is the wrong type '%s', expected type 'array'", req.Name, typeName(v.Type))
	}
	ps := auth.Privileges{}
	for _, pv := range req.arrayValues("privileges") {
		d, ok := pv.DocumentOK()
		if !ok {
			return nil, false, mongoerr.New(mongoerr.TypeMismatch, "a privilege must be an object")
		}
		p, err := auth.ParsePrivilege(bson.Raw(d))
		if err != nil {
			return nil, false, mongoerr.New(mongoerr.BadValue, "%v", err)
		}
		if req.DB != "admin" && (p.Resource.Cluster || p.Resource.AnyResource || p.Resource.DB != req.DB) {
			return nil, false, mongoerr.New(mongoerr.BadValue, "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", req.DB)
		}
		ps = append(ps, p)
	}
	return ps, true, nil
}

// existingCustomRole finds the user-defined role the command names.
func existingCustomRole(s *Session, req *Request) (*auth.Role, error) {
	n, err := roleNameArg(req)
	if err != nil {
		return nil, err
	}
	if _, ok := auth.Builtin(n); ok {
		return nil, mongoerr.New(mongoerr.InvalidRoleModification, "Cannot grant privileges to built-in role: %s@%s", n.Role, n.DB)
	}
	r, ok := s.Env.Access.Users.Role(n)
	if !ok {
		return nil, mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s@%s", n.Role, n.DB)
	}
	return r, nil
}

func cmdCreateRole(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	n, err := roleNameArg(req)
	if err != nil {
		return nil, err
	}
	if _, ok := auth.Builtin(n); ok {
		return nil, mongoerr.New(mongoerr.RoleAlreadyExists, "Role \"%s@%s\" already exists", n.Role, n.DB)
	}
	privs, _, err := privilegesArg(req, true)
	if err != nil {
		return nil, err
	}
	roles, err := rolesArg(s.Env.Access.Users, req)
	if err != nil {
		return nil, err
	}
	if err := s.Env.Access.Users.PutRole(&auth.Role{Name: n, Privileges: privs, Roles: roles}, true); err != nil {
		if errors.Is(err, auth.ErrRoleExists) {
			return nil, mongoerr.New(mongoerr.RoleAlreadyExists, "Role \"%s@%s\" already exists", n.Role, n.DB)
		}
		return nil, err
	}
	return OK(dst), nil
}

func cmdUpdateRole(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	old, err := existingCustomRole(s, req)
	if err != nil {
		return nil, err
	}
	r := *old
	privs, hasPrivs, err := privilegesArg(req, false)
	if err != nil {
		return nil, err
	}
	if hasPrivs {
		r.Privileges = privs
	}
	_, hasRoles := req.Arg("roles")
	if hasRoles {
		if r.Roles, err = rolesArg(s.Env.Access.Users, req); err != nil {
			return nil, err
		}
	}
	if !hasPrivs && !hasRoles {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateRole")
	}
	return OK(dst), s.Env.Access.Users.PutRole(&r, false)
}

// cmdRolePrivileges serves grantPrivilegesToRole and
// revokePrivilegesFromRole: actions are added to (or taken from) the
// privilege on the same resource.
func cmdRolePrivileges(grant bool) handler {
	return func(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
		old, err := existingCustomRole(s, req)
		if err != nil {
			return nil, err
		}
		change, _, err := privilegesArg(req, true)
		if err != nil {
			return nil, err
		}
		r := *old
		r.Privileges = nil
		for _, p := range old.Privileges {
			r.Privileges = append(r.Privileges, auth.Privilege{Resource: p.Resource, Actions: slices.Clone(p.Actions)})
		}
		for _, c := range change {
			i := slices.IndexFunc(r.Privileges, func(p auth.Privilege) bool { return p.Resource == c.Resource })
			switch {
			case grant && i < 0:
				r.Privileges = append(r.Privileges, c)
			case grant:
				for _, a := range c.Actions {
					if !slices.Contains(r.Privileges[i].Actions, a) {
						r.Privileges[i].Actions = append(r.Privileges[i].Actions, a)
					}
				}
			case i >= 0:
				r.Privileges[i].Actions = slices.DeleteFunc(r.Privileges[i].Actions, func(a string) bool { return slices.Contains(c.Actions, a) })
				if len(r.Privileges[i].Actions) == 0 {
					r.Privileges = slices.Delete(r.Privileges, i, i+1)
				}
			}
		}
		return OK(dst), s.Env.Access.Users.PutRole(&r, false)
	}
}

func cmdDropRole(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	r, err := existingCustomRole(s, req)
	if err != nil {
		return nil, err
	}
	return OK(dst), s.Env.Access.Users.DropRole(r.Name)
}

// cmdRolesInfo describes roles: 1 (the database's user-defined ones, with
// showBuiltinRoles the built-in ones too), a name, {role, db} or an array.
func cmdRolesInfo(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	showPrivs, err := req.Bool("showPrivileges", false)
	if err != nil {
		return nil, err
	}
	showBuiltin, err := req.Bool("showBuiltinRoles", false)
	if err != nil {
		return nil, err
	}
	showRestrictions, err := req.Bool("showAuthenticationRestrictions", false)
	if err != nil {
		return nil, err
	}
	store := s.Env.Access.Users
	var names []auth.RoleName
	v := req.First()
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeEmbeddedDocument:
		n, err := roleName(req.DB, v)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			n, err := roleName(req.DB, e)
			if err != nil {
				return nil, err
			}
			names = append(names, n)
		}
	default:
		if n, ok := numberAsInt(v); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.BadValue, "rolesInfo must be 1, a role name, a {role, db} document or an array of them")
		}
		if showBuiltin {
			for _, b := range auth.BuiltinRoleNames {
				if _, ok := auth.Builtin(auth.RoleName{Role: b, DB: req.DB}); ok {
					names = append(names, auth.RoleName{Role: b, DB: req.DB})
				}
			}
		}
		for _, r := range store.Roles(req.DB) {
			names = append(names, r.Name)
		}
	}
	out := bson.A{}
	for _, n := range names {
		var own auth.Privileges
		var roles []auth.RoleName
		_, builtin := auth.Builtin(n)
		if builtin {
			own, _ = auth.Builtin(n)
		} else if r, ok := store.Role(n); ok {
			own, roles = r.Privileges, r.Roles
		} else {
			continue // as MongoDB: an unknown role is left out
		}
		d := bson.D{{Key: "_id", Value: n.DB + "." + n.Role}, {Key: "role", Value: n.Role}, {Key: "db", Value: n.DB},
			{Key: "isBuiltin", Value: builtin}, {Key: "roles", Value: auth.RolesDoc(roles)}}
		all, inherited := store.Resolve(roles)
		d = append(d, bson.E{Key: "inheritedRoles", Value: auth.RolesDoc(inherited)})
		if showPrivs {
			d = append(d, bson.E{Key: "privileges", Value: auth.PrivilegesDoc(own)},
				bson.E{Key: "inheritedPrivileges", Value: auth.PrivilegesDoc(append(slices.Clone(own), all...))})
		}
		if showRestrictions {
			// Cairn refuses authenticationRestrictions at createRole and
			// built-in roles have none: every list is empty.
			d = append(d, bson.E{Key: "authenticationRestrictions", Value: bson.A{}},
				bson.E{Key: "inheritedAuthenticationRestrictions", Value: bson.A{}})
		}
		out = append(out, d)
	}
	r := NewReply(dst)
	r.Any("roles", out)
	return r.Finish(), nil
}
