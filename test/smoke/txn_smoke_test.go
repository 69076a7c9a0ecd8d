package smoke

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClientsTransactions starts a three-member replica set with `cairn
// cluster up` and runs the transaction scripts against it: txn_node.mjs
// (the Node.js driver's session.withTransaction, its retry of a write
// conflict, abort, snapshot isolation, a causally consistent secondary
// read) and txn_mongosh.js (mongosh's withTransaction and the explicit
// transaction helpers).
func TestClientsTransactions(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join(dir, "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	node := tool(t, "node")
	installClients(t, dir)
	readInputs(t, root)
	bin := buildCairn(t, root)
	uri := "mongodb://" + clusterUp(t, bin, 3, "replica set rs0 is up: mongodb://", "--replicas", "3")
	env := clientEnv(t)
	for _, c := range []client{
		{
			name: "node-transactions", script: "txn_node.mjs",
			argv: func(node, _, _ string) []string { return []string{node, "txn_node.mjs", uri} },
			checks: []string{"setup", "withTransaction-commit", "withTransaction-callback-throws-aborts",
				"withTransaction-retries-write-conflict", "explicit-abort", "snapshot-isolation", "causal-read-on-secondary"},
		},
		{
			name: "mongosh-transactions", script: "txn_mongosh.js",
			argv: func(_, dir, _ string) []string {
				return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"), uri, "--quiet", "--norc", "--file", "txn_mongosh.js"}
			},
			checks: []string{"withTransaction-commit", "withTransaction-abort-on-throw", "startTransaction-commitTransaction", "abortTransaction"},
		},
	} {
		stdout, stderr, err := run(t, dir, env, c.argv(node, dir, ""))
		t.Run(c.name, func(t *testing.T) { c.verify(t, stdout, stderr, err) })
	}
}
