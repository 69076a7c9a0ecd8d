// Command conformance runs the official Go driver's integration suites
// (go.mongodb.org/mongo-driver/v2/internal/integration, from the module
// cache at the version go.mod pins) against a three-member Cairn replica
// set started with `cairn cluster up --setParameter enableTestCommands=1`,
// writes a pass/fail/skip line per test and subtest, and compares the
// failures with expected.txt: a failure not listed there, or a listed one
// that now passes or no longer runs, fails the run. `make conformance`
// runs it; TestConformanceSubset (conformance_test.go) runs a fast,
// stable subset in `make test`.
//
// Each top-level test runs in its own process (a panic in one suite would
// otherwise end them all), after every member's test fail points are
// switched off and a primary is up. Only the Go tests the module ships run:
// the JSON spec files the driver's unified runner reads
// (testdata/specifications, a git submodule) are not in the module, so
// TestUnifiedSpecs and the other runners over them find no files.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// integrationPkg is the driver package whose tests run.
const integrationPkg = "go.mongodb.org/mongo-driver/v2/internal/integration"

// testFailPoints are switched off on every member before each suite, so a
// suite that fails half way cannot leave one on for the next.
var testFailPoints = []string{"failCommand", "onPrimaryTransactionalWrite", "failGetMoreAfterCursorCheckout"}

// Config is one run.
type Config struct {
	Root     string         // the Cairn module root
	Run      *regexp.Regexp // top-level tests to run (nil: all the package lists)
	Timeout  time.Duration  // per top-level test
	Work     string         // scratch directory (binaries, the cluster's data)
	Log      io.Writer      // progress
	Verbose  bool           // copy each suite's output to Log
	Replicas int
	LogDir   string // when set, each suite's output is kept there as <Test>.txt
}

// Status is a test's outcome.
type Status string

// The outcomes a test can have; a test that started but printed no result
// (a panic, the per-suite timeout) counts as failed.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one test's or subtest's outcome.
type Result struct {
	Name   string
	Status Status
	Note   string // why a failure has no result line (panic, timeout)
}

func main() {
	root := flag.String("root", ".", "the Cairn module root")
	run := flag.String("run", "", "regexp of the top-level tests to run (default all)")
	expected := flag.String("expected", "test/conformance/expected.txt", "the expected-results file")
	out := flag.String("out", "conformance-results.txt", "where to write the per-test results")
	timeout := flag.Duration("timeout", 5*time.Minute, "time limit of each top-level test")
	verbose := flag.Bool("v", false, "print every suite's output")
	logs := flag.String("logs", "", "directory to keep each suite's output in (<Test>.txt)")
	flag.Parse()
	cfg := Config{Root: *root, Timeout: *timeout, Log: os.Stdout, Verbose: *verbose, Replicas: 3, LogDir: *logs}
	if *run != "" {
		cfg.Run = regexp.MustCompile(*run)
	}
	work, err := os.MkdirTemp("", "cairn-conformance-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(work)
	cfg.Work = work
	exp, err := ReadExpected(*expected)
	if err != nil {
		fatal(err)
	}
	// Ctrl-C ends the running suite and stops the replica set (RunSuites'
	// deferred stop) before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	results, err := RunSuites(ctx, cfg)
	stop()
	if err != nil {
		os.RemoveAll(work)
		fatal(err)
	}
	if err := os.WriteFile(*out, []byte(FormatResults(results)), 0o644); err != nil {
		fatal(err)
	}
	fmt.Print(Summary(results))
	fmt.Printf("per-test results written to %s\n", *out)
	if problems := exp.Check(results, cfg.Run); len(problems) > 0 {
		fmt.Printf("\n%d difference(s) from %s:\n  %s\n", len(problems), *expected, strings.Join(problems, "\n  "))
		os.Exit(1)
	}
	fmt.Printf("results match %s\n", *expected)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "conformance:", err)
	os.Exit(2)
}

// RunSuites builds cairn and the driver's test binary, starts the replica
// set and runs the selected top-level tests one process each.
func RunSuites(ctx context.Context, cfg Config) ([]Result, error) {
	cairn := filepath.Join(cfg.Work, "cairn")
	testBin := filepath.Join(cfg.Work, "integration.test")
	if err := goCmd(ctx, cfg.Root, "build", "-o", cairn, "./cmd/cairn"); err != nil {
		return nil, err
	}
	if err := goCmd(ctx, cfg.Root, "test", "-c", "-o", testBin, integrationPkg); err != nil {
		return nil, err
	}
	cl, err := startCluster(ctx, cairn, cfg)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	fmt.Fprintf(cfg.Log, "replica set up: %s\n", cl.uri)
	env := append(os.Environ(), "MONGODB_URI="+cl.uri)
	tests, err := listTests(ctx, testBin, env)
	if err != nil {
		return nil, err
	}
	var all []Result
	for _, t := range tests {
		if cfg.Run != nil && !cfg.Run.MatchString(t) {
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := cl.reset(ctx); err != nil {
			return nil, fmt.Errorf("before %s: %w", t, err)
		}
		start := time.Now()
		res, err := runTest(ctx, testBin, env, t, cfg)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Log, "%-60s %s (%s)\n", t, counts(res), time.Since(start).Round(time.Millisecond))
		all = append(all, res...)
	}
	return all, nil
}

func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// cluster is a running `cairn cluster up`.
type cluster struct {
	cmd   *exec.Cmd
	uri   string
	hosts []string
}

// startCluster starts `cairn cluster up` on free consecutive loopback
// ports and waits for its connection string.
func startCluster(ctx context.Context, cairn string, cfg Config) (*cluster, error) {
	port, err := freePorts(cfg.Replicas)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cairn, "cluster", "up", "--replicas", fmt.Sprint(cfg.Replicas), "--port", fmt.Sprint(port),
		"--dbpath", filepath.Join(cfg.Work, "cluster"), "--setParameter", "enableTestCommands=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cl := &cluster{cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, uri, ok := strings.Cut(sc.Text(), " is up: "); ok {
				found <- uri
			}
		}
		close(found)
	}()
	select {
	case uri, ok := <-found:
		if !ok {
			cl.stop()
			return nil, errors.New("cairn cluster up exited before the set was up")
		}
		cl.uri = uri
	case <-time.After(2 * time.Minute):
		cl.stop()
		return nil, errors.New("cairn cluster up: the set was not up within 2 minutes")
	}
	for i := range cfg.Replicas {
		cl.hosts = append(cl.hosts, fmt.Sprintf("127.0.0.1:%d", port+i))
	}
	return cl, nil
}

// stop ends cluster up with Ctrl-C (it stops its members), then kills what
// is left of its process group.
func (c *cluster) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// reset switches the test fail points off on every member and waits until
// one is primary, so each suite starts from a healthy set.
func (c *cluster) reset(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		primaries := 0
		for _, h := range c.hosts {
			cl, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(2 * time.Second))
			if err != nil {
				continue
			}
			admin := cl.Database("admin")
			for _, fp := range testFailPoints {
				_ = admin.RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: fp}, {Key: "mode", Value: "off"}}).Err()
			}
			var hello struct {
				IsWritablePrimary bool `bson:"isWritablePrimary"`
			}
			if admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello) == nil && hello.IsWritablePrimary {
				primaries++
			}
			_ = cl.Disconnect(ctx)
		}
		if primaries == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no primary among %v within a minute", c.hosts)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freePorts finds n consecutive free loopback ports.
func freePorts(n int) (int, error) {
	for range 100 {
		base := 20000 + rand.IntN(30000)
		ok := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free consecutive ports")
}

// listTests asks the test binary for its top-level tests (its TestMain
// connects to MONGODB_URI first).
func listTests(ctx context.Context, bin string, env []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.list", ".*")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -test.list: %v\n%s", bin, err, out)
	}
	var tests []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Test") && !strings.ContainsAny(line, " \t") {
			tests = append(tests, line)
		}
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("%s -test.list listed no tests:\n%s", bin, out)
	}
	return tests, nil
}

var resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)

// runTest runs one top-level test in its own process and reads its -v
// output: every subtest that printed a result has it; one that started
// and printed none failed (the process panicked or timed out).
func runTest(ctx context.Context, bin string, env []string, name string, cfg Config) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+regexp.QuoteMeta(name)+"$", "-test.v", "-test.count", "1",
		"-test.timeout", cfg.Timeout.String())
	cmd.Env = env
	cmd.Dir = cfg.Work
	out, _ := cmd.CombinedOutput()
	if cfg.Verbose {
		cfg.Log.Write(out)
	}
	if cfg.LogDir != "" {
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(cfg.LogDir, name+".txt"), out, 0o644); err != nil {
			return nil, err
		}
	}
	return parseOutput(string(out), name), nil
}

// parseOutput turns `go test -v` output into results.
func parseOutput(out, top string) []Result {
	var order []string
	status := map[string]Status{}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if n, ok := strings.CutPrefix(line, "=== RUN   "); ok {
			if _, seen := status[n]; !seen {
				order = append(order, n)
				status[n] = ""
			}
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil {
			if _, seen := status[m[2]]; !seen {
				order = append(order, m[2])
			}
			status[m[2]] = Status(strings.ToLower(m[1]))
		}
	}
	note := "no result: the suite panicked or timed out"
	if strings.Contains(out, "panic: ") {
		note = "no result: the suite panicked"
	} else if strings.Contains(out, "test timed out") {
		note = "no result: the suite timed out"
	}
	if len(order) == 0 {
		return []Result{{Name: top, Status: Fail, Note: "did not run: " + firstLine(out)}}
	}
	res := make([]Result, 0, len(order))
	for _, n := range order {
		r := Result{Name: n, Status: status[n]}
		if r.Status == "" {
			r.Status, r.Note = Fail, note
		}
		res = append(res, r)
	}
	return res
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func counts(res []Result) string {
	var p, f, s int
	for _, r := range res {
		switch r.Status {
		case Pass:
			p++
		case Fail:
			f++
		case Skip:
			s++
		}
	}
	return fmt.Sprintf("%d pass, %d fail, %d skip", p, f, s)
}

// FormatResults is the results file: one "status name" line per test,
// sorted by name.
func FormatResults(res []Result) string {
	sorted := slices.Clone(res)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for _, r := range sorted {
		fmt.Fprintf(&b, "%s %s", r.Status, r.Name)
		if r.Note != "" {
			fmt.Fprintf(&b, " # %s", r.Note)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Summary counts the leaf tests (those without subtests, and parents that
// failed with no failing subtest) of each suite: pass, fail, skip and the
// pass rate of those that ran.
func Summary(res []Result) string {
	parent := map[string]bool{}
	for _, r := range res {
		if i := strings.LastIndexByte(r.Name, '/'); i > 0 {
			for p := r.Name[:i]; ; {
				parent[p] = true
				j := strings.LastIndexByte(p, '/')
				if j < 0 {
					break
				}
				p = p[:j]
			}
		}
	}
	type tally struct{ pass, fail, skip int }
	suites := map[string]*tally{}
	var names []string
	var total tally
	failedChild := map[string]bool{}
	for _, r := range res {
		if i := strings.LastIndexByte(r.Name, '/'); i > 0 && r.Status == Fail {
			failedChild[r.Name[:i]] = true
		}
	}
	for _, r := range res {
		// A parent counts only when it failed on its own (no subtest
		// failed): the failure is its.
		if parent[r.Name] && (r.Status != Fail || failedChild[r.Name]) {
			continue
		}
		suite, _, _ := strings.Cut(r.Name, "/")
		t := suites[suite]
		if t == nil {
			t = &tally{}
			suites[suite] = t
			names = append(names, suite)
		}
		for _, x := range []*tally{t, &total} {
			switch r.Status {
			case Pass:
				x.pass++
			case Fail:
				x.fail++
			case Skip:
				x.skip++
			}
		}
	}
	sort.Strings(names)
	var b strings.Builder
	line := func(name string, t tally) {
		rate := "-"
		if t.pass+t.fail > 0 {
			rate = fmt.Sprintf("%.0f%%", 100*float64(t.pass)/float64(t.pass+t.fail))
		}
		fmt.Fprintf(&b, "%-62s %4d pass %4d fail %4d skip  %5s\n", name, t.pass, t.fail, t.skip, rate)
	}
	fmt.Fprintf(&b, "\nleaf tests per suite (pass rate of those that ran):\n")
	for _, n := range names {
		line(n, *suites[n])
	}
	line("TOTAL", total)
	return b.String()
}
