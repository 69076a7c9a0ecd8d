package smoke

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/testnet"
)

// mongoshSharded runs mongosh_sharded.js: mongosh's sh.* helpers
// (enableSharding, shardCollection, splitAt, zones, the balancer's state,
// status, getShardDistribution and its totals, then a table of every other
// sh.* helper: done, or refused with the code gaps lists) through a router.
var mongoshSharded = client{
	name:   "mongosh-sharded",
	script: "mongosh_sharded.js",
	argv: func(_, dir, addr string) []string {
		return []string{filepath.Join(dir, "node_modules", ".bin", "mongosh"),
			"mongodb://" + addr + "/smoke_sharded", "--quiet", "--norc", "--file", "mongosh_sharded.js"}
	},
	checks: []string{
		"hello-isdbgrid", "sh.enableSharding", "sh.shardCollection-hashed", "insertMany-through-router",
		"targeted-explain", "collStats-per-shard", "sh.splitAt", "sh.addShardToZone-and-range",
		"sh.stopBalancer-and-state", "sh.status", "getShardDistribution",
		// mongosh_sharded.js's table of the other sh.* helpers
		"sh.help", "sh.status-verbose", "sh.addShard-again", "sh.addShardTag", "sh.addTagRange", "sh.removeTagRange",
		"sh.removeShardTag", "sh.removeRangeFromZone", "sh.removeShardFromZone", "sh.splitFind", "sh.moveChunk", "sh.moveRange", "sh.status-migration-results",
		"sh.listShards", "sh.listShards-filter", "sh.isConfigShardEnabled", "sh.disableMigrations", "sh.enableMigrations",
		"sh.balancerCollectionStatus", "sh.disableBalancing", "sh.enableBalancing", "sh.isBalancerRunning",
		"sh.setBalancerState", "sh.getShardedDataDistribution", "sh.disableAutoSplit", "sh.enableAutoSplit", "sh.isAutoMergerEnabled",
	},
	// sh.enableAutoSplit and sh.disableAutoSplit: automatic splits are gone
	// since 6.0.3, as mongosh says when it sees version 7.0.
	warnings: []string{"DeprecationWarning: Starting in MongoDB 6.0.3, automatic chunk splitting is not performed."},
	gaps: []gap{
		// Cairn has no auto-merger: its settings are refused (InvalidOptions).
		{"sh.startAutoMerger", 72}, {"sh.stopAutoMerger", 72}, {"sh.enableAutoMerger", 72}, {"sh.disableAutoMerger", 72},
		// MongoDB 7.0 commands the router refuses by name (CommandNotSupported).
		{"sh.checkMetadataConsistency", 115}, {"sh.reshardCollection", 115}, {"sh.commitReshardCollection", 115},
		{"sh.abortReshardCollection", 115}, {"sh.shardAndDistributeCollection", 115}, {"sh.movePrimary", 115},
		// MongoDB 8.0's, CommandNotFound on a 7.0 mongos too.
		{"sh.moveCollection", 59}, {"sh.unshardCollection", 59}, {"sh.abortMoveCollection", 59}, {"sh.abortUnshardCollection", 59},
		{"sh.shardDrainingStatus", 59}, {"sh.getTransitionToDedicatedConfigServerStatus", 59},
	},
}

// clusterUp starts `cairn cluster up` with args on ports free a moment ago
// (procs of them, from a random base), waits for the line that starts with
// upPrefix and returns the rest of it, without a trailing slash. The cluster
// is stopped (SIGINT, as Ctrl-C) when the test ends.
func clusterUp(t *testing.T, bin string, procs int, upPrefix string, args ...string) string {
	t.Helper()
	port := testnet.FreeRange(t, procs)
	args = append([]string{"cluster", "up", "--port", strconv.Itoa(port), "--dbpath", t.TempDir()}, args...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	up := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if after, found := strings.CutPrefix(sc.Text(), upPrefix); found {
				up <- strings.TrimSuffix(after, "/")
			}
		}
	}()
	select {
	case addr := <-up:
		return addr
	case <-time.After(90 * time.Second):
		t.Fatalf("`cairn %s` printed no %q line within 90s", strings.Join(args, " "), upPrefix)
	}
	return ""
}

// TestClientsSharded starts `cairn cluster up --shards 2 --replicas 1
// --routers 1` and runs mongosh_sharded.js through its router.
func TestClientsSharded(t *testing.T) {
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
	bin := buildCairn(t, root)
	addr := clusterUp(t, bin, 4, "sharded cluster is up: mongodb://", "--shards", "2", "--replicas", "1", "--routers", "1")
	env := clientEnv(t)
	out, errOut, err := run(t, dir, env, mongoshSharded.argv(node, dir, addr))
	mongoshSharded.verify(t, out, errOut, err)
}
