package catalog

import (
	"strings"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// MongoDB's limits on names (see "MongoDB Limits and Thresholds").
const (
	maxDBNameLen    = 63  // fewer than 64 characters
	maxNamespaceLen = 255 // "<db>.<collection>" in bytes
)

// ValidateDBName checks a database name as MongoDB does on Linux.
func ValidateDBName(db string) error {
	if db == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Database name cannot be empty")
	}
	if len(db) > maxDBNameLen {
		return mongoerr.New(mongoerr.InvalidNamespace, "db name must be fewer than 64 characters, found: %d", len(db))
	}
	if i := strings.IndexAny(db, "/\\. \"$\x00"); i >= 0 {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s' (a database name cannot contain any of /\\. \"$ or a null character)", db)
	}
	return nil
}

// ValidateCommandDB checks the database a command names, as MongoDB does
// before running any command: ValidateDBName's rules except that '$' is
// allowed there (MongoDB's DollarInDbNameBehavior::Allow, for "$external");
// creating anything in such a database still fails ValidateDBName.
func ValidateCommandDB(db string) error {
	if db == "" || len(db) > maxDBNameLen || hasDBNameBanned(db) {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return nil
}

// hasDBNameBanned reports whether db holds a character no database name
// may: / \ . space " or NUL (strings.ContainsAny, without building its
// character set on every command; a table, not a switch of six
// comparisons a byte: every command's database passes here).
func hasDBNameBanned(db string) bool {
	for i := 0; i < len(db); i++ {
		if dbNameBanned[db[i]] {
			return true
		}
	}
	return false
}

var dbNameBanned = [256]bool{'/': true, '\\': true, '.': true, ' ': true, '"': true, 0: true}

// ValidateCollectionName checks a collection name and the namespace it makes
// in db. Names under "system." are reserved for the server.
func ValidateCollectionName(db, coll string) error {
	if err := ValidateDBName(db); err != nil {
		return err
	}
	switch {
	case coll == "":
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", db)
	case strings.ContainsAny(coll, "$\x00"):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", coll)
	case strings.HasPrefix(coll, "."):
		return mongoerr.New(mongoerr.InvalidNamespace, "Collection names cannot start with '.': %s", coll)
	case len(db)+1+len(coll) > maxNamespaceLen:
		return mongoerr.New(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: %d", db, coll, maxNamespaceLen)
	}
	return nil
}

// ValidateUserCollectionName is ValidateCollectionName plus the rule that
// clients may not create collections in the reserved "system." space.
func ValidateUserCollectionName(db, coll string) error {
	if err := ValidateCollectionName(db, coll); err != nil {
		return err
	}
	if strings.HasPrefix(coll, "system.") && !legalClientSystemNS(db, coll) {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid system namespace: %s.%s", db, coll)
	}
	return nil
}

// legalClientSystemNS are the system collections clients may write, as in
// MongoDB's isLegalClientSystemNS: the users and roles (which access
// control guards; a restore writes them directly), the cluster time
// signing keys (package clusterkeys; no built-in role but __system's
// reaches them) and admin.system.version, where a shard keeps its identity
// (package shardsvr).
func legalClientSystemNS(db, coll string) bool {
	return db == "admin" && (coll == "system.users" || coll == "system.roles" || coll == "system.keys" || coll == "system.version")
}
