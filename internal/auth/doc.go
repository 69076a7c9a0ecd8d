// Package auth owns who a client is and what it may do: SCRAM credentials
// (made and checked with github.com/xdg-go/scram, never by hand), the users
// stored in admin.system.users, MongoDB's built-in roles and their
// privileges, and the check of a privilege against a resource.
//
// It does no I/O of its own: the users' documents are loaded and written
// through a Backing the command layer supplies, so the rules here are
// tested without a server.
//
// Invariants:
//
//   - "Secrets stay stored": a password is never kept or logged; only the
//     salted, iterated SCRAM keys (storedKey, serverKey) are, in MongoDB's
//     shape: SCRAM-SHA-1 over hex(md5(user:mongo:password)), SCRAM-SHA-256
//     over the SASLprep'd password.
//   - "Fail closed": a resource is covered only by a privilege that names
//     it (or a wider one that, as MongoDB's, matches it); system.*
//     collections are never matched by a database-wide or any-database
//     privilege.
//   - "Internal user in memory only": with a key file (keyfile.go),
//     __system@local authenticates with the key as its password over both
//     SCRAMs and holds anyAction on anyResource; it is never written to
//     admin.system.users, listed, or grantable as a role
//     (TestSystemUser).
//   - "One user per connection": a Conversation authenticates one user; a
//     connection keeps the one it proved (MongoDB 6.0+).
//
// Deviations from MongoDB: user-defined roles are not yet stored
// (createRole and friends are the next step); the user cache is this
// process's memory, written through to admin.system.users.
package auth
