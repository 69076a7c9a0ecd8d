package auth

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The store's errors; the command layer gives them MongoDB's codes.
var (
	ErrUserExists   = errors.New("auth: user already exists")
	ErrUserNotFound = errors.New("auth: user not found")
)

// User is one stored user. Values are never changed once stored: an
// update stores a new User (so a reader holding one needs no lock).
type User struct {
	Name, DB    string
	ID          bson.Binary // userId: a UUID, as MongoDB gives every user
	Credentials map[string]Credential
	Roles       []RoleName
	CustomData  bson.Raw // nil: none
}

// Key is the user's _id in admin.system.users: "db.name".
func (u *User) Key() string { return u.DB + "." + u.Name }

// Mechanisms are the SASL mechanisms u has credentials for, sorted.
func (u *User) Mechanisms() []string {
	ms := make([]string, 0, len(u.Credentials))
	for m := range u.Credentials {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}

// Backing is where the store's users live: admin.system.users, supplied by
// the command layer.
type Backing interface {
	// Load returns every user document.
	Load() ([]bson.Raw, error)
	// Put stores doc under id, replacing any document there.
	Put(id string, doc bson.Raw) error
	// Delete removes the document id.
	Delete(id string) error
}

// Store holds the users, written through to a Backing. It is safe for
// concurrent use.
type Store struct {
	mu    sync.RWMutex
	users map[string]*User
	// system is the internal user while a keyFile is in use (keyfile.go).
	system *User
	back   Backing
	roles  *roleStore
	// gen counts changes, so a connection's cached privileges know when to
	// resolve again.
	gen atomic.Uint64
	// digest is of the documents Reload last read (reload.go).
	digest [32]byte
}

// Open loads the users from users and the user-defined roles from roles.
func Open(back, roles Backing) (*Store, error) {
	docs, err := back.Load()
	if err != nil {
		return nil, err
	}
	rs, err := openRoles(roles)
	if err != nil {
		return nil, err
	}
	s := &Store{users: make(map[string]*User, len(docs)), back: back, roles: rs}
	for _, d := range docs {
		u, err := userFromDoc(d)
		if err != nil {
			return nil, err
		}
		s.users[u.Key()] = u
	}
	return s, nil
}

// Gen is the store's change counter.
func (s *Store) Gen() uint64 { return s.gen.Load() }

// Empty reports whether no user and no role exists (the localhost
// exception's test, as MongoDB's).
func (s *Store) Empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users) == 0 && len(s.Roles("")) == 0
}

// Lookup finds the user name of database db.
func (s *Store) Lookup(db, name string) (*User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if isSystem(db, name) {
		return s.system, s.system != nil
	}
	u, ok := s.users[db+"."+name]
	return u, ok
}

// List returns the users of db (every user for ""), ordered by _id.
func (s *Store) List(db string) []*User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*User
	for _, u := range s.users {
		if db == "" || u.DB == db {
			out = append(out, u)
		}
	}
	sortByKey(out, (*User).Key)
	return out
}

func sortByKey[T any](s []T, key func(T) string) {
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(key(a), key(b)) })
}

// Create stores a new user.
func (s *Store) Create(u *User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.Key()]; ok {
		return ErrUserExists
	}
	return s.put(u)
}

// Update replaces a stored user with u (the same Name and DB).
func (s *Store) Update(u *User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.Key()]; !ok {
		return ErrUserNotFound
	}
	return s.put(u)
}

func (s *Store) put(u *User) error {
	doc, err := u.doc()
	if err != nil {
		return err
	}
	if err := s.back.Put(u.Key(), doc); err != nil {
		return err
	}
	s.users[u.Key()] = u
	s.gen.Add(1)
	return nil
}

// Drop removes the users of db that keep says to drop (nil: all of them)
// and returns how many it removed.
func (s *Store) Drop(db string, drop func(*User) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key, u := range s.users {
		if u.DB != db || (drop != nil && !drop(u)) {
			continue
		}
		if err := s.back.Delete(key); err != nil {
			return n, err
		}
		delete(s.users, key)
		n++
	}
	if n > 0 {
		s.gen.Add(1)
	}
	return n, nil
}

// doc is u as a system.users document, in MongoDB's shape.
func (u *User) doc() (bson.Raw, error) {
	creds := bson.D{}
	for _, m := range u.Mechanisms() {
		c := u.Credentials[m]
		creds = append(creds, bson.E{Key: m, Value: bson.D{{Key: "iterationCount", Value: int32(c.IterationCount)},
			{Key: "salt", Value: c.Salt}, {Key: "storedKey", Value: c.StoredKey}, {Key: "serverKey", Value: c.ServerKey}}})
	}
	d := bson.D{{Key: "_id", Value: u.Key()}, {Key: "userId", Value: u.ID}, {Key: "user", Value: u.Name}, {Key: "db", Value: u.DB},
		{Key: "credentials", Value: creds}, {Key: "roles", Value: RolesDoc(u.Roles)}}
	if u.CustomData != nil {
		d = append(d, bson.E{Key: "customData", Value: u.CustomData})
	}
	return bson.Marshal(d)
}

// RolesDoc is roles as [{role, db}].
func RolesDoc(roles []RoleName) bson.A {
	a := make(bson.A, len(roles))
	for i, r := range roles {
		a[i] = bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}}
	}
	return a
}

func userFromDoc(d bson.Raw) (*User, error) {
	var raw struct {
		User        string `bson:"user"`
		DB          string `bson:"db"`
		Credentials map[string]struct {
			IterationCount int    `bson:"iterationCount"`
			Salt           string `bson:"salt"`
			StoredKey      string `bson:"storedKey"`
			ServerKey      string `bson:"serverKey"`
		} `bson:"credentials"`
		Roles      []struct{ Role, DB string } `bson:"roles"`
		CustomData bson.Raw                    `bson:"customData"`
	}
	if err := bson.Unmarshal(d, &raw); err != nil {
		return nil, fmt.Errorf("auth: corrupt admin.system.users document: %w", err)
	}
	u := &User{Name: raw.User, DB: raw.DB, CustomData: raw.CustomData, Credentials: map[string]Credential{}}
	if st, data, ok := d.Lookup("userId").BinaryOK(); ok {
		u.ID = bson.Binary{Subtype: st, Data: data}
	}
	for m, c := range raw.Credentials {
		u.Credentials[m] = Credential{IterationCount: c.IterationCount, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
	}
	for _, r := range raw.Roles {
		u.Roles = append(u.Roles, RoleName{Role: r.Role, DB: r.DB})
	}
	return u, nil
}
