package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MongoDB's internal user: members (and tools run with the keyFile)
// authenticate as __system@local over SCRAM with the keyFile's contents as
// the password. The user is never stored: it exists while the server runs
// with a keyFile, and it holds every privilege.
const (
	SystemUser = "__system"
	SystemDB   = "local"
)

// SystemRole is the internal user's role: anyAction on anyResource. It is
// not a built-in role a user can be granted (RoleExists does not know it).
var SystemRole = RoleName{Role: "__system", DB: "admin"}

// AnyAction is MongoDB's action that stands for every action.
const AnyAction = "anyAction"

// Key file limits, as mongod's (security_file.cpp, security_key.cpp).
const (
	minKeyLen = 6
	maxKeyLen = 1024
	// maxKeyFileSize bounds what is read: a key file is a small text file.
	maxKeyFileSize = 64 << 10
)

// ErrKeyFile is every refused key file; the message says why.
var ErrKeyFile = errors.New("auth: bad key file")

// ReadKeyFile reads a keyFile with mongod's rules: on Unix the file must
// not be readable, writable or executable by group or others ("permissions
// on FILE are too open"); whitespace anywhere is ignored; what remains must
// be base64 characters (A-Z a-z 0-9 + / and = padding) and 6 to 1024 of
// them. The key returned is that remainder.
func ReadKeyFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: error getting file %s: %v (make one with: openssl rand -base64 756 > FILE; chmod 400 FILE)", ErrKeyFile, path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrKeyFile, path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: permissions on %s are too open (%04o): the key file must be readable by its owner only (chmod 400 or 600)",
			ErrKeyFile, path, st.Mode().Perm())
	}
	if st.Size() > maxKeyFileSize {
		return nil, fmt.Errorf("%w: key file %s has %d bytes, more than a key file holds", ErrKeyFile, path, st.Size())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: error reading file %s: %v", ErrKeyFile, path, err)
	}
	return ParseKey(path, raw)
}

// ParseKey applies the key file format rules to a file's contents (name
// is for the messages).
func ParseKey(name string, raw []byte) ([]byte, error) {
	key := make([]byte, 0, len(raw))
	for _, c := range raw {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			continue
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
			key = append(key, c)
		default:
			return nil, fmt.Errorf("%w: invalid char in key file %s: %q (a key file holds base64 characters only)", ErrKeyFile, name, c)
		}
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("%w: security key in %s has length %d, must be between %d and %d chars", ErrKeyFile, name, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

// NewSystemUser is __system@local with SCRAM-SHA-1 and SCRAM-SHA-256
// credentials made from key (fresh salts each start, as mongod's).
func NewSystemUser(key []byte) (*User, error) {
	u := &User{Name: SystemUser, DB: SystemDB, Credentials: map[string]Credential{}, Roles: []RoleName{SystemRole}}
	for _, mech := range []string{SCRAMSHA1, SCRAMSHA256} {
		c, err := NewCredential(mech, SystemUser, string(key))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
		}
		u.Credentials[mech] = c
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80
	u.ID = bson.Binary{Subtype: 4, Data: id}
	return u, nil
}

// SetSystemUser installs the internal user (nil removes it). It is found
// by Lookup like a stored user but never written to the Backing, never
// listed, and never dropped.
func (s *Store) SetSystemUser(u *User) {
	s.mu.Lock()
	s.system = u
	s.mu.Unlock()
	s.gen.Add(1)
}

// isSystem reports whether db.name is the internal user's name.
func isSystem(db, name string) bool { return db == SystemDB && name == SystemUser }
