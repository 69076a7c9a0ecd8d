// Package smoke drives a real `cairn serve` process with real MongoDB
// clients: mongosh and the official Node.js driver, at the versions
// package-lock.json pins, installed by `npm ci` into node_modules here.
//
// It holds no Go API, only TestClients (smoke_test.go) and the client
// scripts it runs: node_smoke.mjs and mongosh_smoke.js. Each script prints
// "ok <name>" per passing check and "expected-gap <name>: <code>" per feature
// Cairn refuses on purpose for now; the test compares those lines with its
// own lists, so a check cannot disappear unnoticed and a gap that starts
// working must be moved to the checks by hand.
// TestClientsAuth runs auth_smoke.mjs and auth_mongosh.js the same way
// against `cairn serve --auth` (SCRAM-SHA-256 and SCRAM-SHA-1), and
// TestClientsTLS runs tls_smoke.mjs and tls_mongosh.js against `cairn serve
// --tlsMode requireTLS` with a certificate internal/testpki makes at run time.
// TestClientsReplSet (replset_smoke_test.go) starts three `cairn serve
// --replSet rs0` members and a spare, initiates the set, and runs
// replset_node.mjs (the Node.js driver with replicaSet=) and
// replset_mongosh.js (rs.status, rs.conf, rs.add of the spare, rs.stepDown).
// TestClientsChangeStreams runs changestream_smoke.mjs (collection.watch(),
// which also initiates a one-member set) and changestream_mongosh.js
// (db.coll.watch()) against `cairn serve --replSet rs0`.
// TestClientsSharded runs mongosh_sharded.js (every mongosh sh.* helper,
// done or refused with the code its gaps list, sh.status() and
// getShardDistribution's totals) through the router of a sharded cluster
// that `cairn cluster up --shards 2` starts.
// TestClientsTransactions (txn_smoke_test.go) runs txn_node.mjs (the
// Node.js driver's session.withTransaction: commit, abort on a throwing
// callback, the retry of a write conflict, snapshot isolation, a causally
// consistent read on a secondary) and txn_mongosh.js (mongosh's
// withTransaction and transaction helpers) against a three-member set that
// `cairn cluster up` starts.
// replset_node.mjs and txn_node.mjs run their checks with checks.mjs's
// runChecks (the shared "ok <name>" / "FAIL <name>" protocol).
package smoke
