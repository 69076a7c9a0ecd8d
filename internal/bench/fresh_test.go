package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestLoadRunsFresh checks invariant "Every load into a fresh store" from
// outside the harness: with --runs 3, before each load it looks at the
// target's store itself — a Pebble floor's database holds no key and no
// table and lives in a directory no earlier load used; cairn's server is a
// process no earlier load reached, in a directory no earlier load used,
// whose serverStatus counts no insert and whose listDatabases has no bench
// database; the protocol floors are new processes (the durable floor's log
// in a new directory). It also checks that each renewable target loads three
// times, with the runs' order rotated, the report's figures the runs'
// medians, the proxy floor (cairn's server behind a proxy, which the
// harness cannot renew) loaded once after cairn's last load, and that every
// workload runs on the last loads.
func TestLoadRunsFresh(t *testing.T) {
	quickWindows(t)
	ws, err := ParseWorkloads([]string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 3
	seen := map[string]bool{} // target + " dir " / " pid " + identity
	loads := map[string]int{}
	var order []string // the targets in load order
	cfg := Config{
		Workloads: ws, Records: 200, Ops: 100, Threads: 2, Batch: 50, Runs: runs, Seed: 3,
		Floors: []string{FloorProtocol, FloorDurable, FloorPebble, FloorPebbleOplog, FloorProxy},
		Self:   testSelf, Version: "test",
	}
	cfg.beforeLoad = func(tg *target, run int) {
		loads[tg.name]++
		order = append(order, tg.name)
		if tg.name == TargetFloorProxy {
			if loads[TargetCairn] != runs {
				t.Errorf("the proxy floor loads after cairn's load %d of %d: renewing cairn would take its records", loads[TargetCairn], runs)
			}
			return
		}
		ids := []string{}
		if tg.dir != "" {
			ids = append(ids, "dir "+tg.dir)
		} else if tg.name != TargetFloorProtocol {
			t.Errorf("%s run %d: no store directory", tg.name, run)
		}
		if tg.pid > 0 {
			ids = append(ids, fmt.Sprintf("pid %d", tg.pid))
		}
		for _, id := range ids {
			if seen[tg.name+" "+id] {
				t.Errorf("%s run %d: loads into %s again", tg.name, run, id)
			}
			seen[tg.name+" "+id] = true
		}
		switch {
		case tg.pebble != nil:
			checkPebbleEmpty(t, tg.name, run, tg.pebble.pdb)
		case tg.name == TargetCairn:
			checkServerUnwritten(t, tg.uri, run, cfg.Database)
		}
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rep.Loads {
		want := runs
		if l.Target == TargetFloorProxy {
			want = 1
		}
		if loads[l.Target] != want {
			t.Errorf("%s loaded %d times, want %d", l.Target, loads[l.Target], want)
		}
		if l.Failed != "" {
			t.Errorf("%s's load failed: %s", l.Target, l.Failed)
			continue
		}
		if want == 1 {
			if len(l.Runs) != 0 {
				t.Errorf("%s: %d runs reported for one load", l.Target, len(l.Runs))
			}
			continue
		}
		if len(l.Runs) != runs {
			t.Errorf("%s: %d runs reported, want %d", l.Target, len(l.Runs), runs)
			continue
		}
		rates := []float64{l.Runs[0].RecordsPerSec, l.Runs[1].RecordsPerSec, l.Runs[2].RecordsPerSec}
		slices.Sort(rates)
		if l.RecordsPerSec != rates[1] {
			t.Errorf("%s: %.0f records/s, the median of its runs %v is %.0f", l.Target, l.RecordsPerSec, rates, rates[1])
		}
	}
	// Run i starts at the i-th renewable target: no target always goes first.
	renewable := len(cfg.Floors) // cairn and every floor but the proxy
	firsts := map[string]bool{}
	for run := range runs {
		if i := run * renewable; i < len(order) {
			firsts[order[i]] = true
		}
	}
	if len(firsts) != runs {
		t.Errorf("the runs start with %v: want %d different targets (load order %v)", firsts, runs, order)
	}
	for _, tr := range rep.Workloads[0].Targets {
		if tr.Failed != "" || tr.Median == nil {
			t.Errorf("workload c on %s after the loads: failed %q", tr.Target, tr.Failed)
		}
	}
	// The text's load table: a spread for the medians, "one load" for the
	// proxy floor's single load.
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	_, loadTable, _ := strings.Cut(text.String(), "load (batched inserts)\n")
	checked := 0
	for _, line := range strings.Split(loadTable, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.Contains(line, " vs ") {
			break // the ratios follow the table
		}
		want := map[string]string{TargetCairn: "±", TargetFloorProxy: "one load"}[f[0]]
		if want == "" {
			continue
		}
		checked++
		if !strings.Contains(line, want) {
			t.Errorf("load line %q: no %q", line, want)
		}
	}
	if checked != 2 {
		t.Errorf("found %d of cairn's and the proxy floor's load lines in:\n%s", checked, text.String())
	}
}

// checkPebbleEmpty fails t unless db holds no key and no table.
func checkPebbleEmpty(t *testing.T, name string, run int, db *pebble.DB) {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("%s run %d: the store holds key %q before the load", name, run, it.Key())
	}
	_ = it.Close()
	if files := db.Metrics().Total().TablesCount; files != 0 {
		t.Errorf("%s run %d: the store has %d tables before the load", name, run, files)
	}
}

// checkServerUnwritten fails t unless the server at uri has counted no
// insert and lists no database named dbName.
func checkServerUnwritten(t *testing.T, uri string, run int, dbName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Disconnect(ctx) }()
	var st struct {
		Opcounters struct {
			Insert int64 `bson:"insert"`
		} `bson:"opcounters"`
	}
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("cairn run %d: serverStatus: %v", run, err)
	}
	if st.Opcounters.Insert != 0 {
		t.Errorf("cairn run %d: the server has counted %d inserts before the load", run, st.Opcounters.Insert)
	}
	names, err := client.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatalf("cairn run %d: listDatabases: %v", run, err)
	}
	if slices.Contains(names, dbName) {
		t.Errorf("cairn run %d: database %s exists before the load (%v)", run, dbName, names)
	}
}

// TestCheckFresh: the harness's own check refuses a Pebble floor that has
// been written to and a server process a load has reached.
func TestCheckFresh(t *testing.T) {
	pf, err := openPebbleFloor(false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.close(context.Background()) }()
	for _, c := range []struct {
		name  string
		t     *target
		write func()
		fresh bool
	}{
		{name: "pebble unwritten", t: &target{name: "p", pebble: pf}, fresh: true},
		{name: "pebble after a drop", t: &target{name: "p", pebble: pf}, write: func() { _ = pf.reset(context.Background()) }},
		{name: "server never loaded", t: &target{name: "s", pid: 7, loadedPIDs: []int{5, 6}}, fresh: true},
		{name: "server loaded before", t: &target{name: "s", pid: 6, loadedPIDs: []int{5, 6}}},
		{name: "no process", t: &target{name: "s"}},
	} {
		if c.write != nil {
			c.write()
		}
		if err := c.t.checkFresh(); (err == nil) != c.fresh {
			t.Errorf("%s: checkFresh = %v, want fresh %v", c.name, err, c.fresh)
		}
	}
}
