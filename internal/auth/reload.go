package auth

import (
	"bytes"
	"crypto/sha256"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Reload reads the users and the user-defined roles from their Backings
// again and, when they differ from what the store holds, replaces them and
// bumps the change counter (so connections resolve their privileges
// again). A replica set's secondary calls it: admin.system.users and
// admin.system.roles change there by replication, not through this store.
// It reports whether anything changed.
func (s *Store) Reload() (bool, error) {
	userDocs, err := s.back.Load()
	if err != nil {
		return false, err
	}
	roleDocs, err := s.roles.back.Load()
	if err != nil {
		return false, err
	}
	sum := digest(userDocs, roleDocs)
	s.mu.RLock()
	same := s.digest == sum
	s.mu.RUnlock()
	if same {
		return false, nil
	}
	users := make(map[string]*User, len(userDocs))
	for _, d := range userDocs {
		u, err := userFromDoc(d)
		if err != nil {
			return false, err
		}
		users[u.Key()] = u
	}
	roles := make(map[string]*Role, len(roleDocs))
	for _, d := range roleDocs {
		r, err := roleFromDoc(d)
		if err != nil {
			return false, err
		}
		roles[r.Key()] = r
	}
	s.mu.Lock()
	s.users, s.digest = users, sum
	s.mu.Unlock()
	s.roles.mu.Lock()
	s.roles.roles = roles
	s.roles.mu.Unlock()
	s.gen.Add(1)
	return true, nil
}

// digest identifies a set of documents whatever their order.
func digest(sets ...[]bson.Raw) [32]byte {
	h := sha256.New()
	for _, docs := range sets {
		sorted := slices.Clone(docs)
		slices.SortFunc(sorted, func(a, b bson.Raw) int { return bytes.Compare(a, b) })
		for _, d := range sorted {
			h.Write(d)
		}
		h.Write([]byte{0})
	}
	return [32]byte(h.Sum(nil))
}
