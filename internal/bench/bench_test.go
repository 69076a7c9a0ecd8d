package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/server"
)

// childEnv makes the test binary play the cairn binary: the harness starts
// its servers as child processes (`serve …`, `bench FloorServerArg …`),
// and in tests the child is this binary.
const childEnv = "CAIRN_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runChild(args []string) int {
	switch {
	case len(args) > 0 && args[0] == "serve":
		return serveForTest(args[1:])
	case len(args) > 1 && args[0] == "bench" && args[1] == FloorServerArg:
		return RunFloorServer(args[2:], os.Stdout, os.Stderr)
	case len(args) > 1 && args[0] == "bench" && args[1] == ProxyFloorServerArg:
		return RunProxyFloorServer(args[2:], os.Stdout, os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "test child: unexpected arguments %q\n", args)
	return 2
}

// serveForTest is `cairn serve --port --dbpath --sync` built from the same
// pieces cmd/cairn uses (which a test cannot import).
func serveForTest(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	port := fs.Int("port", 0, "")
	dir := fs.String("dbpath", "", "")
	syncFlag := fs.String("sync", "always", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var every time.Duration
	if *syncFlag != "always" {
		every, _ = time.ParseDuration(*syncFlag)
	}
	srv, closeAll, err := startCairn(*dir, net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)), every)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() { _ = srv.Serve() }()
	<-sigs
	closeAll()
	return 0
}

// startCairn opens an engine in dir and a server listening on addr.
func startCairn(dir, addr string, syncEvery time.Duration) (*server.Server, func(), error) {
	log := slog.New(slog.DiscardHandler)
	eng, err := engine.Open(dir, engine.Options{Logger: log, SyncInterval: syncEvery})
	if err != nil {
		return nil, nil, err
	}
	env := commands.NewEnv(eng, commands.Config{CairnVer: "test"}, log)
	srv := server.New(env, server.Options{Logger: log})
	if err := srv.Listen(addr); err != nil {
		env.Close()
		_ = eng.Close()
		return nil, nil, err
	}
	return srv, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		env.Close()
		_ = eng.Close()
	}, nil
}

func testSelf(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

// quickWindows shortens the harness's CPU-settling waits for a test.
func quickWindows(t *testing.T) {
	s, m, i := settleWindow, settleMax, idleWindow
	settleWindow, settleMax, idleWindow = 20*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { settleWindow, settleMax, idleWindow = s, m, i })
}

// TestTinyWorkloadEndToEnd runs the whole harness — an embedded server
// and the protocol floor as child processes, the Pebble floor in-process —
// on a tiny workload and checks the JSON report parses and its numbers are
// sane, so the harness cannot rot unnoticed.
func TestTinyWorkloadEndToEnd(t *testing.T) {
	quickWindows(t)
	ws, err := ParseWorkloads([]string{"a,c"})
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{
		Workloads: ws, Records: 200, Ops: 400, Threads: 2, Batch: 50, Runs: 2, Seed: 7,
		Floors:   []string{FloorProtocol, FloorPebble},
		Self:     testSelf,
		Version:  "test",
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, js.String())
	}
	if len(got.Targets) != 3 || len(got.Loads) != 3 || len(got.Workloads) != 2 {
		t.Fatalf("want 3 targets, 3 loads and 2 workloads, got %d, %d, %d", len(got.Targets), len(got.Loads), len(got.Workloads))
	}
	for _, l := range got.Loads {
		if l.Failed != "" || l.Records != 200 || l.RecordsPerSec <= 0 {
			t.Errorf("load on %s: %+v", l.Target, l)
		}
	}
	for _, w := range got.Workloads {
		if len(w.Targets) != 3 {
			t.Fatalf("workload %s: %d targets", w.Workload, len(w.Targets))
		}
		for _, tr := range w.Targets {
			where := "workload " + w.Workload + " on " + tr.Target
			if tr.Failed != "" {
				t.Errorf("%s failed: %s", where, tr.Failed)
				continue
			}
			if len(tr.Runs) != 2 || tr.Median == nil || tr.Median.Runs != 2 {
				t.Errorf("%s: want 2 runs and a median", where)
				continue
			}
			for _, run := range tr.Runs {
				checkRun(t, where, w.Workload, run)
			}
			if tr.Median.Throughput < tr.Median.ThroughputMin || tr.Median.Throughput > tr.Median.ThroughputMax {
				t.Errorf("%s: median throughput %v outside [%v, %v]", where, tr.Median.Throughput, tr.Median.ThroughputMin, tr.Median.ThroughputMax)
			}
		}
		if len(w.Ratios) != 2 {
			t.Errorf("workload %s: want cairn against 2 floors, got %+v", w.Workload, w.Ratios)
		}
		for _, r := range w.Ratios {
			if r.Target != TargetCairn || r.Throughput <= 0 {
				t.Errorf("workload %s: ratio %+v", w.Workload, r)
			}
		}
	}
	if len(got.LoadRatios) != 2 {
		t.Errorf("want cairn's load against 2 floors, got %+v", got.LoadRatios)
	}
	for _, r := range got.LoadRatios {
		if r.Target != TargetCairn || r.Throughput <= 0 {
			t.Errorf("load ratio %+v", r)
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workload a", "workload c", "cairn vs floor-protocol", "p99", "cairn vs floor-pebble: records/s", "≥ 80%"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(progress.String(), "workload c cairn run 2/2") {
		t.Errorf("no progress lines:\n%s", progress.String())
	}
}

func checkRun(t *testing.T, where, workload string, run RunResult) {
	t.Helper()
	if run.Ops != 400 || run.Throughput <= 0 || run.Seconds <= 0 {
		t.Errorf("%s: ops %d, throughput %v, seconds %v", where, run.Ops, run.Throughput, run.Seconds)
	}
	if run.ServerCPU == nil || *run.ServerCPU < 0 || run.ClientCPU == nil || *run.ClientCPU < 0 {
		t.Errorf("%s: CPU per op server %v client %v: want both known and >= 0", where, run.ServerCPU, run.ClientCPU)
	}
	want := map[string]bool{"all": true, "read": true}
	if workload == "a" {
		want["update"] = true
	}
	var counted int64
	for _, o := range run.Operations {
		if !want[o.Op] {
			t.Errorf("%s: unexpected operation %q", where, o.Op)
		}
		delete(want, o.Op)
		if !(o.P50 > 0 && o.P50 <= o.P95 && o.P95 <= o.P99 && o.P99 <= o.Max) {
			t.Errorf("%s %s: latencies not ordered: p50 %v p95 %v p99 %v max %v", where, o.Op, o.P50, o.P95, o.P99, o.Max)
		}
		if o.Count <= 0 || o.Throughput <= 0 {
			t.Errorf("%s %s: count %d, throughput %v", where, o.Op, o.Count, o.Throughput)
		}
		if o.Op != "all" {
			counted += o.Count
		}
	}
	if len(want) > 0 {
		t.Errorf("%s: missing operations %v", where, want)
	}
	if counted != run.Ops {
		t.Errorf("%s: per-operation counts sum to %d, want %d", where, counted, run.Ops)
	}
}

// TestScanGapIsReported checks that a server error fails the workload
// with the server's message instead of counting as a result: workload E
// against a Cairn without range filters and sort, and against the floor,
// which answers them.
func TestScanGapIsReported(t *testing.T) {
	quickWindows(t)
	ws, _ := ParseWorkloads([]string{"e"})
	rep, err := Run(context.Background(), Config{
		Workloads: ws, Records: 100, Ops: 100, Threads: 2, Batch: 50,
		Floors: []string{FloorProtocol}, Self: testSelf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Workloads[0].Targets {
		switch tr.Target {
		case TargetFloorProtocol:
			if tr.Failed != "" || tr.Median == nil {
				t.Errorf("the protocol floor failed workload e: %s", tr.Failed)
			}
		case TargetCairn:
			// Until Cairn has $gte and sort, the scan fails with the
			// server's own error; once it has them, it must succeed.
			if tr.Failed != "" && !strings.Contains(tr.Failed, "scan:") {
				t.Errorf("cairn failed workload e outside a scan: %s", tr.Failed)
			}
			if tr.Failed == "" && tr.Median == nil {
				t.Errorf("cairn neither failed nor measured workload e")
			}
		}
	}
}

// TestRatioSummary checks the text report ends with each workload's ratios
// to the floors and marks a target against the protocol floor that is missed.
func TestRatioSummary(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var out bytes.Buffer
	p := &errWriter{w: &out}
	writeRatioSummary(p, []Ratio{
		{Target: TargetCairn, Against: TargetFloorProtocol, Throughput: 0.5, ServerCPU: f(2)},
		{Target: TargetCairn, Against: TargetFloorPebble, Throughput: 0.79, ServerCPU: f(2)},
	}, []WorkloadResult{
		{Workload: "a", Ratios: []Ratio{
			{Target: TargetCairn, Against: TargetFloorProtocol, Throughput: 0.70, ServerCPU: f(1.4)},
			{Target: TargetFloorDurable, Against: TargetFloorProtocol, Throughput: 0.40, ServerCPU: f(1.2)}, // no target
		}},
		{Workload: "c", Ratios: []Ratio{
			{Target: TargetCairn, Against: TargetFloorProtocol, Throughput: 0.95, ServerCPU: f(1.5)},
			{Target: TargetCairn, Against: TargetFloorPebble, Throughput: 0.5, ServerCPU: f(3)},
			{Target: TargetCompare, Against: TargetFloorPebble, Throughput: 0.4, ServerCPU: f(3)}, // not cairn's: left out
		}},
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []struct{ has, hasNot string }{
		{"ratios to the floors", ""},
		{"throughput", ""},
		{"load", "≥"},                           // no load target against the protocol floor
		{"≥ 80% MISSED", "≥ 65%"},               // the load's: 80% of the Pebble floor's rate
		{"≥ 65%", "MISSED"},                     // a: 70% meets 65%
		{"floor-durable ÷ floor-protocol", "≥"}, // the durable floor's: no target
		{"CPU ≤ 1.25× MISSED", ""},              // c: 1.50× CPU misses
		{"floor-pebble", "≥"},                   // no target against the Pebble floor
	}
	if len(lines) != len(want) {
		t.Fatalf("summary has %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w.has) || w.hasNot != "" && strings.Contains(lines[i], w.hasNot) {
			t.Errorf("line %d %q: want %q and not %q", i, lines[i], w.has, w.hasNot)
		}
	}
}
