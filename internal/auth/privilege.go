package auth

import (
	"slices"
	"strings"
)

// Resource is what a privilege applies to, in MongoDB's forms:
// {cluster: true}, {anyResource: true}, or {db, collection} where an empty
// db means every database and an empty collection every (non-system)
// collection of the database — and the database itself.
type Resource struct {
	DB, Collection string
	Cluster        bool
	AnyResource    bool
}

// Cluster is the cluster resource (serverStatus, listDatabases, killop…).
var Cluster = Resource{Cluster: true}

// DBResource is a whole database: the target of db-level actions
// (dbStats, listCollections, dropDatabase, createUser).
func DBResource(db string) Resource { return Resource{DB: db} }

// CollResource is one collection.
func CollResource(db, coll string) Resource { return Resource{DB: db, Collection: coll} }

// Privilege is a set of actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  []string
}

// covers reports whether p's resource matches target (invariant "Fail
// closed": a wildcard never matches a system.* collection).
func (r Resource) covers(target Resource) bool {
	switch {
	case r.AnyResource:
		return true
	case r.Cluster || target.Cluster:
		return r.Cluster && target.Cluster
	case target.AnyResource:
		return false
	}
	if r.DB != "" && r.DB != target.DB {
		return false
	}
	if r.Collection != "" {
		return r.Collection == target.Collection
	}
	// A database-wide (or any-database) privilege: the database itself and
	// its normal collections.
	return !strings.HasPrefix(target.Collection, "system.")
}

// Privileges is what a user may do: the union of its roles' privileges.
type Privileges []Privilege

// Allows reports whether ps grant action on target.
func (ps Privileges) Allows(target Resource, action string) bool {
	for i := range ps {
		if ps[i].Resource.covers(target) && (slices.Contains(ps[i].Actions, action) || slices.Contains(ps[i].Actions, AnyAction)) {
			return true
		}
	}
	return false
}

// AllowsAll reports whether ps grant every one of actions on target.
func (ps Privileges) AllowsAll(target Resource, actions ...string) bool {
	for _, a := range actions {
		if !ps.Allows(target, a) {
			return false
		}
	}
	return true
}
