package commands

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// The user management commands. Users live in admin.system.users, _id
// "db.name" (auth.Store); roles are MongoDB's built-in ones (user-defined
// roles are not stored yet).

var allMechanisms = []string{auth.SCRAMSHA1, auth.SCRAMSHA256}

// userName is the command-name field as a user name.
func userName(req *Request) (string, error) {
	name, ok := req.First().StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'string'", req.Name, typeName(req.First().Type))
	}
	if name == "" {
		return "", mongoerr.New(mongoerr.BadValue, "User name must be non-empty")
	}
	return name, nil
}

// roleName reads a role: a name in db, or {role, db}.
func roleName(dbName string, v bsoncore.Value) (auth.RoleName, error) {
	var r auth.RoleName
	switch v.Type {
	case bsoncore.TypeString:
		r = auth.RoleName{Role: v.StringValue(), DB: dbName}
	case bsoncore.TypeEmbeddedDocument:
		d := v.Document()
		role, ok1 := d.Lookup("role").StringValueOK()
		rdb, ok2 := d.Lookup("db").StringValueOK()
		if !ok1 || !ok2 {
			return r, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects with 'role' and 'db' fields")
		}
		r = auth.RoleName{Role: role, DB: rdb}
	default:
		return r, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects with 'role' and 'db' fields")
	}
	return r, nil
}

// existingRole is roleName for a role that must exist.
func existingRole(store *auth.Store, dbName string, v bsoncore.Value) (auth.RoleName, error) {
	r, err := roleName(dbName, v)
	if err == nil && !store.RoleExists(r) {
		err = mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s@%s", r.Role, r.DB)
	}
	return r, err
}

// rolesArg reads a required roles array of existing roles.
func rolesArg(store *auth.Store, req *Request) ([]auth.RoleName, error) {
	v, ok := req.Arg("roles")
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "BSON field '%s.roles' is missing but a required field", req.Name)
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.roles' is the wrong type '%s', expected type 'array'", req.Name, typeName(v.Type))
	}
	vals, _ := arr.Values()
	out := []auth.RoleName{}
	for _, rv := range vals {
		r, err := existingRole(store, req.DB, rv)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// mechanismsArg reads mechanisms (def when absent).
func mechanismsArg(req *Request, def []string) ([]string, error) {
	v, ok := req.Arg("mechanisms")
	if !ok {
		return def, nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.mechanisms' is the wrong type '%s', expected type 'array'", req.Name, typeName(v.Type))
	}
	vals, _ := arr.Values()
	var out []string
	for _, mv := range vals {
		m, ok := mv.StringValueOK()
		if !ok || !slices.Contains(allMechanisms, m) {
			return nil, mongoerr.New(mongoerr.BadValue, "Unknown auth mechanism '%s'", mv)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must not be empty")
	}
	return out, nil
}

// passwordArg reads pwd (and refuses digestPassword: false, whose
// client-digested passwords Cairn does not take).
func passwordArg(req *Request) (string, bool, error) {
	if dig, err := req.Bool("digestPassword", true); err != nil {
		return "", false, err
	} else if !dig {
		return "", false, mongoerr.New(mongoerr.BadValue, "digestPassword: false (a password digested by the client) is not supported; send the password")
	}
	v, ok := req.Arg("pwd")
	if !ok {
		return "", false, nil
	}
	pwd, ok := v.StringValueOK()
	if !ok {
		return "", false, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.pwd' is the wrong type '%s', expected type 'string'", req.Name, typeName(v.Type))
	}
	if pwd == "" {
		return "", false, mongoerr.New(mongoerr.BadValue, "Password cannot be empty")
	}
	return pwd, true, nil
}

func credentials(name, pwd string, mechs []string) (map[string]auth.Credential, error) {
	out := make(map[string]auth.Credential, len(mechs))
	for _, m := range mechs {
		c, err := auth.NewCredential(m, name, pwd)
		if err != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "Error preparing password: %v", err)
		}
		out[m] = c
	}
	return out, nil
}

func customDataArg(req *Request) (bson.Raw, error) {
	d, err := req.Document("customData")
	if err != nil || d == nil {
		return nil, err
	}
	return bson.Raw(append([]byte(nil), d...)), nil
}

func newUserID() bson.Binary {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID
	id[8] = id[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}
}

func cmdCreateUser(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := userName(req)
	if err != nil {
		return nil, err
	}
	pwd, hasPwd, err := passwordArg(req)
	if err != nil {
		return nil, err
	}
	external := req.DB == externalDB
	switch {
	case external && (hasPwd || hasMechanisms(req)):
		// An $external user (x.509: its name is a certificate's
		// subject) has no password in Cairn.
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot set 'pwd' or 'mechanisms' for a user on $external: it authenticates with its x.509 certificate")
	case !external && !hasPwd:
		return nil, mongoerr.New(mongoerr.BadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	roles, err := rolesArg(s.Env.Access.Users, req)
	if err != nil {
		return nil, err
	}
	mechs, err := mechanismsArg(req, allMechanisms)
	if err != nil {
		return nil, err
	}
	custom, err := customDataArg(req)
	if err != nil {
		return nil, err
	}
	creds := map[string]auth.Credential{}
	if !external {
		if creds, err = credentials(name, pwd, mechs); err != nil {
			return nil, err
		}
	}
	u := &auth.User{Name: name, DB: req.DB, ID: newUserID(), Credentials: creds, Roles: roles, CustomData: custom}
	if err := s.Env.Access.Users.Create(u); err != nil {
		if errors.Is(err, auth.ErrUserExists) {
			return nil, mongoerr.New(mongoerr.UserAlreadyExists, "User \"%s@%s\" already exists", name, req.DB)
		}
		return nil, err
	}
	return OK(dst), nil
}

// existingUser finds the user the command names.
func existingUser(s *Session, req *Request) (*auth.User, error) {
	name, err := userName(req)
	if err != nil {
		return nil, err
	}
	u, ok := s.Env.Access.Users.Lookup(req.DB, name)
	if !ok {
		return nil, mongoerr.New(mongoerr.UserNotFound, "Could not find user \"%s\" for db \"%s\"", name, req.DB)
	}
	return u, nil
}

func cmdUpdateUser(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	old, err := existingUser(s, req)
	if err != nil {
		return nil, err
	}
	u := *old
	pwd, hasPwd, err := passwordArg(req)
	if err != nil {
		return nil, err
	}
	mechs, err := mechanismsArg(req, nil)
	if err != nil {
		return nil, err
	}
	_, hasRoles := req.Arg("roles")
	_, hasCustom := req.Arg("customData")
	if !hasPwd && !hasRoles && !hasCustom && mechs == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateUser")
	}
	switch {
	case hasPwd:
		if mechs == nil {
			mechs = old.Mechanisms()
		}
		if u.Credentials, err = credentials(old.Name, pwd, mechs); err != nil {
			return nil, err
		}
	case mechs != nil:
		u.Credentials = map[string]auth.Credential{}
		for _, m := range mechs {
			c, ok := old.Credentials[m]
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must be a subset of previously set mechanisms")
			}
			u.Credentials[m] = c
		}
	}
	if hasRoles {
		if u.Roles, err = rolesArg(s.Env.Access.Users, req); err != nil {
			return nil, err
		}
	}
	if hasCustom {
		if u.CustomData, err = customDataArg(req); err != nil {
			return nil, err
		}
	}
	if err := s.Env.Access.Users.Update(&u); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

// cmdGrantRevoke serves grantRolesToUser and revokeRolesFromUser.
func cmdGrantRevoke(grant bool) handler {
	return func(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
		old, err := existingUser(s, req)
		if err != nil {
			return nil, err
		}
		roles, err := rolesArg(s.Env.Access.Users, req)
		if err != nil {
			return nil, err
		}
		u := *old
		u.Roles = slices.Clone(old.Roles)
		for _, r := range roles {
			i := slices.Index(u.Roles, r)
			switch {
			case grant && i < 0:
				u.Roles = append(u.Roles, r)
			case !grant && i >= 0:
				u.Roles = slices.Delete(u.Roles, i, i+1)
			}
		}
		if err := s.Env.Access.Users.Update(&u); err != nil {
			return nil, err
		}
		return OK(dst), nil
	}
}

func cmdDropUser(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	u, err := existingUser(s, req)
	if err != nil {
		return nil, err
	}
	if _, err := s.Env.Access.Users.Drop(req.DB, func(x *auth.User) bool { return x.Name == u.Name }); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

func cmdDropAllUsersFromDatabase(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	n, err := s.Env.Access.Users.Drop(req.DB, nil)
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Int32("n", int32(n)).Finish(), nil
}

// cmdUsersInfo lists users: 1 (the database's), a name, {user, db}, an
// array of those, or {forAllDBs: true}.
func cmdUsersInfo(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	showCreds, err := req.Bool("showCredentials", false)
	if err != nil {
		return nil, err
	}
	showPrivs, err := req.Bool("showPrivileges", false)
	if err != nil {
		return nil, err
	}
	showCustom, err := req.Bool("showCustomData", true)
	if err != nil {
		return nil, err
	}
	showRestrictions, err := req.Bool("showAuthenticationRestrictions", false)
	if err != nil {
		return nil, err
	}
	var match matcher
	if v, ok := req.Arg("filter"); ok {
		filter, err := req.documentOf("filter", v)
		if err != nil {
			return nil, err
		}
		if match, err = compileFilter(filter); err != nil {
			return nil, err
		}
	}
	store := s.Env.Access.Users
	var users []*auth.User
	exact := true // the users are named, not every user of a database
	one := func(v bsoncore.Value) error {
		name, dbName := "", req.DB
		switch v.Type {
		case bsoncore.TypeString:
			name = v.StringValue()
		case bsoncore.TypeEmbeddedDocument:
			var ok1, ok2 bool
			name, ok1 = v.Document().Lookup("user").StringValueOK()
			dbName, ok2 = v.Document().Lookup("db").StringValueOK()
			if !ok1 || !ok2 {
				return mongoerr.New(mongoerr.BadValue, "User name must contain 'user' and 'db' fields")
			}
		default:
			return mongoerr.New(mongoerr.BadValue, "User name must be either a string or an object")
		}
		if u, ok := store.Lookup(dbName, name); ok {
			users = append(users, u)
		}
		return nil
	}
	v := req.First()
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument && v.Document().Lookup("forAllDBs").Type != 0:
		if req.DB != "admin" {
			return nil, mongoerr.New(mongoerr.BadValue, "forAllDBs may only be used on the admin database")
		}
		users, exact = store.List(""), false
	case v.Type == bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			if err := one(e); err != nil {
				return nil, err
			}
		}
	case v.Type == bsoncore.TypeString || v.Type == bsoncore.TypeEmbeddedDocument:
		if err := one(v); err != nil {
			return nil, err
		}
	default:
		if n, ok := numberAsInt(v); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.BadValue, "User and role names must be either strings or objects")
		}
		users, exact = store.List(req.DB), false
	}
	// As MongoDB: privileges and restrictions are resolved per named user,
	// never for a whole listing or a filter's matches.
	if (showPrivs || showRestrictions) && (!exact || match != nil) {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Privilege or restriction details require exact-match usersInfo queries.")
	}
	out := bson.A{}
	for _, u := range users {
		// filter matches the user's document as stored, with its
		// credentials and its mechanisms (MongoDB's example filters on
		// mechanisms), whatever the reply then shows.
		if match != nil {
			stored, err := bson.Marshal(append(userInfoDoc(u, true, true), bson.E{Key: "mechanisms", Value: u.Mechanisms()}))
			if err != nil {
				return nil, err
			}
			if !match(stored) {
				continue
			}
		}
		d := userInfoDoc(u, showCustom, showCreds)
		if showPrivs {
			privs, inherited := store.Resolve(u.Roles)
			d = append(d, bson.E{Key: "inheritedRoles", Value: auth.RolesDoc(inherited)},
				bson.E{Key: "inheritedPrivileges", Value: auth.PrivilegesDoc(privs)})
		}
		if showRestrictions {
			// Cairn refuses authenticationRestrictions at createUser, so
			// every user's (and every inherited role's) list is empty.
			d = append(d, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
			if showPrivs {
				d = append(d, bson.E{Key: "inheritedAuthenticationRestrictions", Value: bson.A{}})
			}
		}
		d = append(d, bson.E{Key: "mechanisms", Value: u.Mechanisms()})
		out = append(out, d)
	}
	r := NewReply(dst)
	r.Any("users", out)
	return r.Finish(), nil
}

// userInfoDoc is u as usersInfo shows it, up to its roles (and its
// credentials when showCreds).
func userInfoDoc(u *auth.User, showCustom, showCreds bool) bson.D {
	d := bson.D{{Key: "_id", Value: u.Key()}, {Key: "userId", Value: u.ID}, {Key: "user", Value: u.Name}, {Key: "db", Value: u.DB}}
	if showCustom && u.CustomData != nil {
		d = append(d, bson.E{Key: "customData", Value: u.CustomData})
	}
	d = append(d, bson.E{Key: "roles", Value: auth.RolesDoc(u.Roles)})
	if showCreds {
		creds := bson.D{}
		for _, m := range u.Mechanisms() {
			c := u.Credentials[m]
			creds = append(creds, bson.E{Key: m, Value: bson.D{{Key: "iterationCount", Value: int32(c.IterationCount)},
				{Key: "salt", Value: c.Salt}, {Key: "storedKey", Value: c.StoredKey}, {Key: "serverKey", Value: c.ServerKey}}})
		}
		d = append(d, bson.E{Key: "credentials", Value: creds})
	}
	return d
}
