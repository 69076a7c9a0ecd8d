package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Config is one invocation of the harness; cmd/cairn fills it from flags.
type Config struct {
	// URI is the server to measure as "cairn"; empty starts `cairn serve`
	// as a child process on a free loopback port with a fresh data
	// directory.
	URI string
	// CompareURI is another server measured alongside, run for run.
	CompareURI string
	// Floors are FloorProtocol, FloorDurable, FloorPebble, FloorPebbleOplog
	// and/or FloorProxy.
	Floors []string
	// Workloads run in order, each on every target.
	Workloads []Workload
	// Records are loaded before the first workload: Runs times into a
	// fresh store on each target the harness started (fresh.go), once on
	// the others.
	Records int64
	// Ops is the number of operations of each run.
	Ops int64
	// MaxTime ends a run early once it has run this long (YCSB's
	// maxexecutiontime); 0 runs every operation.
	MaxTime time.Duration
	// Threads is the number of concurrent clients (goroutines sharing one
	// driver client per target, as YCSB's threads share one binding).
	Threads int
	// FieldCount and FieldLength shape the records (YCSB: 10 × 100 B).
	FieldCount, FieldLength int
	// Batch is the number of records per insert in the load phase.
	Batch int
	// Runs is how many times the load (each into a fresh store) and each
	// workload run on each target; the report gives the median and the
	// spread.
	Runs int
	// Distribution overrides every workload's request distribution when
	// set (uniform, zipfian, latest).
	Distribution string
	// Seed makes the operation streams reproducible.
	Seed int64
	// Sync is passed to the embedded `cairn serve --sync`; anything but
	// "always" also makes the Pebble floor write without syncing.
	Sync string
	// UpdateStyle is how updates are sent (see UpdateStyle).
	UpdateStyle UpdateStyle
	// Monitoring is the driver's serverMonitoringMode for every target
	// ("" leaves the driver's default, auto).
	Monitoring string
	// ShardHashed shards the collection on {_id: "hashed"} after dropping
	// it, before the load (the target is a router: shardCollection of an
	// empty collection presplits two chunks per shard), so that a uniform
	// workload spreads over the shards.
	ShardHashed bool
	// Database and Collection hold the records; they are dropped before
	// the load.
	Database, Collection string
	// Self runs the cairn binary (for the embedded server and the
	// protocol floor).
	Self SelfCommand
	// Version is Cairn's version, for the report.
	Version string
	// Progress receives the live progress lines (nil: none).
	Progress io.Writer
	// ProfileDir, when set, receives the cairn target's server profiles of
	// every measured phase (profiling.go): the embedded server is started
	// with its profiling endpoint on a free loopback port, which only a
	// cairn built with -tags cairnpprof serves; a --uri server's is
	// ProfileURL.
	ProfileDir string
	// ProfileURL is where a --uri server serves its profiles
	// (http://host:port, its CAIRN_PPROF address).
	ProfileURL string

	// onRun, when set, is called as each measured run (or load, as
	// workload "load") starts, and the function it returns as it ends (the
	// package's profiling benchmark starts and stops a CPU profile there).
	onRun func(target, workload string, run int) func()
	// beforeLoad, when set, is called before each load, its store made
	// fresh (the package's tests look at the store there).
	beforeLoad func(t *target, run int)
}

// Defaults are YCSB's, sized so that the default invocation finishes in
// about a minute on a small machine.
func (c *Config) fillDefaults() {
	if c.Records == 0 {
		c.Records = 100_000
	}
	if c.Ops == 0 {
		c.Ops = 100_000
	}
	if c.Threads == 0 {
		c.Threads = 16
	}
	if c.FieldCount == 0 {
		c.FieldCount = 10
	}
	if c.FieldLength == 0 {
		c.FieldLength = 100
	}
	if c.Batch == 0 {
		c.Batch = 1000
	}
	if c.Runs == 0 {
		c.Runs = 1
	}
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.UpdateStyle == "" {
		c.UpdateStyle = DefaultUpdateStyle
	}
	if c.Database == "" {
		c.Database = "cairn_bench"
	}
	if c.Collection == "" {
		c.Collection = "usertable"
	}
}

func (c *Config) validate() error {
	switch {
	case c.Records < 1 || c.Ops < 1 || c.Threads < 1 || c.Runs < 1 || c.Batch < 1:
		return errors.New("--records, --ops, --threads, --runs and --batch must be positive")
	case c.MaxTime < 0:
		return errors.New("--max-time must not be negative")
	case c.FieldCount < 1 || c.FieldLength < 0:
		return errors.New("--field-count must be positive and --field-length not negative")
	case len(c.Workloads) == 0:
		return errors.New("no workload")
	case c.UpdateStyle != UpdateReplace && c.UpdateStyle != UpdateSet:
		return fmt.Errorf("update style %q: want replace or set", c.UpdateStyle)
	}
	switch c.Distribution {
	case "", DistUniform, DistZipfian, DistLatest:
	default:
		return fmt.Errorf("distribution %q: want uniform, zipfian or latest", c.Distribution)
	}
	switch {
	case c.ProfileURL != "" && c.ProfileDir == "":
		return errors.New("--profile-url without --profile-dir: say where the profiles go")
	case c.ProfileURL != "" && c.URI == "":
		return errors.New("--profile-url names a --uri server's profiling address; without --uri the embedded server's is chosen")
	case c.ProfileDir != "" && c.URI != "" && c.ProfileURL == "":
		return errNoProfileURL
	}
	for _, f := range c.Floors {
		if f != FloorProtocol && f != FloorDurable && f != FloorPebble && f != FloorPebbleOplog && f != FloorProxy {
			return fmt.Errorf("floor %q: want protocol, durable, pebble, pebble-oplog or proxy", f)
		}
		if f == FloorDurable && c.Sync != "always" {
			return fmt.Errorf("--floor durable syncs every write before its reply, as --sync always does; with --sync %s compare with --floor protocol", c.Sync)
		}
	}
	return nil
}

// Run measures every workload on Cairn, the --compare server and the
// floors, and returns the report. Targets run one after another, never at
// once, and alternate their order from run to run so that drifting
// background load does not always hit the same one.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.fillDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, recs: newRecords(cfg.FieldCount, cfg.FieldLength, cfg.Seed)}
	rep := &Report{
		CairnVersion: cfg.Version,
		Machine: Machine{
			Cores: runtime.NumCPU(), MemoryGiB: memoryGiB(), LoadBefore: loadAverage(),
			GoVersion: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		},
		Config: ConfigEcho{
			Records: cfg.Records, Ops: cfg.Ops, Threads: cfg.Threads, FieldCount: cfg.FieldCount,
			FieldLength: cfg.FieldLength, Batch: cfg.Batch, Runs: cfg.Runs, Distribution: cfg.Distribution,
			Seed: cfg.Seed, Sync: cfg.Sync, UpdateStyle: cfg.UpdateStyle, Monitoring: cfg.Monitoring,
			MaxTimeSeconds: cfg.MaxTime.Seconds(),
		},
	}
	if rep.Config.Distribution == "" {
		rep.Config.Distribution = "per workload"
	}
	if rep.Config.Monitoring == "" {
		rep.Config.Monitoring = "driver default"
	}
	defer r.closeTargets()
	if err := r.startTargets(ctx); err != nil {
		return nil, err
	}
	var prof *profiler
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
		prof = newProfiler(r.cfg.ProfileURL, cfg.ProfileDir)
		if err := prof.probe(ctx); err != nil {
			return nil, err
		}
		inner := r.cfg.onRun // the package's profiling benchmark's, if set
		r.cfg.onRun = func(target, workload string, run int) func() {
			stop := func() {}
			if inner != nil {
				stop = inner(target, workload, run)
			}
			if target != TargetCairn {
				return stop
			}
			end := prof.phase(workload, run)
			return func() { end(); stop() }
		}
	}
	for _, t := range r.targets {
		client := "this process's getrusage (driver and harness)"
		if t.inProcess {
			client = "the harness's own cost, measured against a no-op target"
		}
		rep.Targets = append(rep.Targets, TargetInfo{Name: t.name, About: t.about, ServerCPU: t.cpuHow, ClientCPU: client})
	}
	rep.Loads = r.loads(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	floors := map[string]bool{}
	for _, t := range r.targets {
		floors[t.name] = t.floor
	}
	rep.LoadRatios = loadRatios(rep.Loads, floors)
	for i, t := range r.targets {
		rep.Targets[i].IdleServerCPU, rep.Targets[i].IdleClientCPU = r.idle(ctx, t)
	}
	for _, w := range cfg.Workloads {
		wr, err := r.workload(ctx, w)
		if err != nil {
			return nil, err
		}
		rep.Workloads = append(rep.Workloads, wr)
	}
	rep.Machine.LoadAfter = loadAverage()
	rep.Notes = r.notes()
	if prof != nil {
		if err := prof.failure(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// runner holds an invocation's targets and state.
type runner struct {
	cfg     Config
	recs    *records
	targets []*target
}

func (r *runner) startTargets(ctx context.Context) error {
	cfg := &r.cfg
	var t *target
	var uri string
	var err error
	if cfg.URI == "" {
		t, uri, err = startEmbedded(ctx, cfg)
	} else {
		uri = cfg.URI
		t, err = uriTarget(TargetCairn, uri)
	}
	if err != nil {
		return err
	}
	if err := r.add(ctx, t, uri); err != nil {
		return err
	}
	if slices.Contains(cfg.Floors, FloorProxy) {
		pt, puri, err := startProxyFloorChild(ctx, cfg, t, uri)
		if err != nil {
			return err
		}
		if err := r.add(ctx, pt, puri); err != nil {
			return err
		}
	}
	if cfg.CompareURI != "" {
		t, err := uriTarget(TargetCompare, cfg.CompareURI)
		if err != nil {
			return err
		}
		if err := r.add(ctx, t, cfg.CompareURI); err != nil {
			return err
		}
	}
	for _, fl := range []struct {
		name    string
		durable bool
	}{{FloorProtocol, false}, {FloorDurable, true}} {
		if !slices.Contains(cfg.Floors, fl.name) {
			continue
		}
		t, uri, err := startProtocolFloorChild(ctx, cfg, fl.durable)
		if err != nil {
			return err
		}
		if err := r.add(ctx, t, uri); err != nil {
			return err
		}
	}
	for _, fl := range []struct {
		floor, name string
		oplog       bool
	}{
		{FloorPebble, TargetFloorPebble, false},
		{FloorPebbleOplog, TargetFloorPebbleOplog, true},
	} {
		if !slices.Contains(cfg.Floors, fl.floor) {
			continue
		}
		pf, err := openPebbleFloor(cfg.Sync == "always", fl.oplog)
		if err != nil {
			return fmt.Errorf("bench: %s floor: %w", fl.floor, err)
		}
		how := "Set with pebble.Sync"
		if cfg.Sync != "always" {
			how = "Set with pebble.NoSync"
		}
		if fl.oplog {
			how += ", each with an oplog entry in the same batch"
		}
		t := &target{
			name: fl.name, floor: true, db: pf, pebble: pf, inProcess: true, dir: pf.dir,
			about:  "Pebble in this process, no server, reopened on a new directory for each load; writes: " + how,
			cpuHow: "this process's CPU minus the harness's own cost per operation",
		}
		t.renew = renewPebbleFloor(t)
		r.targets = append(r.targets, t)
	}
	return nil
}

// add registers a server target after checking the driver can reach it.
func (r *runner) add(ctx context.Context, t *target, uri string) error {
	r.targets = append(r.targets, t) // closed even if the dial fails
	t.uri = uri
	d, err := r.open(ctx, t)
	if err != nil {
		return err
	}
	return d.close(ctx)
}

// open connects the driver to a server target, with a pool of cfg.Threads
// connections already established, or returns an in-process target's db.
//
// Each phase connects afresh and disconnects after, so that no target's
// driver is connected while another is measured: a driver's background
// monitoring would otherwise load the machine during the other targets'
// runs (against a server whose hello reports a topologyVersion but does
// not wait, as Cairn's did before its streaming hello, it is a busy loop
// of hellos).
func (r *runner) open(ctx context.Context, t *target) (db, error) {
	if t.uri == "" {
		return t.db, nil
	}
	dbName := r.cfg.Database
	if t.database != "" {
		dbName = t.database
	}
	d, err := dialDriver(ctx, t.uri, r.cfg.Monitoring, dbName, r.cfg.Collection)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", t.name, err)
	}
	if err := d.warm(ctx, r.cfg.Threads); err != nil {
		_ = d.close(ctx)
		return nil, fmt.Errorf("bench: %s: %w", t.name, err)
	}
	return d, nil
}

// release undoes open.
func (r *runner) release(ctx context.Context, t *target, d db) {
	if t.uri != "" {
		_ = d.close(ctx)
	}
}

func (r *runner) closeTargets() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range r.targets {
		if err := t.close(ctx); err != nil && r.cfg.Progress != nil {
			fmt.Fprintf(r.cfg.Progress, "closing %s: %v\n", t.name, err)
		}
	}
}

// cpuSample is the CPU used so far by every local server and by this
// process.
type cpuSample struct {
	self    time.Duration
	servers map[*target]time.Duration
}

func (r *runner) sampleCPU() cpuSample {
	s := cpuSample{self: selfCPU(), servers: map[*target]time.Duration{}}
	for _, t := range r.targets {
		if d, ok := t.serverCPU(); ok {
			s.servers[t] = d
		}
	}
	return s
}

// settle waits (up to settleMax) until no local server and not this process is
// busy — background flushes and compactions of a previous phase finished —
// so that a run pays only for its own work.
func (r *runner) settle(ctx context.Context) {
	window := settleWindow
	deadline := time.Now().Add(settleMax)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		before := r.sampleCPU()
		time.Sleep(window)
		after := r.sampleCPU()
		busy := after.self - before.self
		for t, d := range after.servers {
			busy += d - before.servers[t]
		}
		quiet := busy <= window/10
		for _, t := range r.targets {
			if t.pebble != nil && !t.pebble.settled() {
				quiet = false
			}
		}
		if quiet {
			return
		}
	}
}

// measured runs phase and attributes CPU: a local server's from its
// process; an in-process target's as this process's CPU minus harnessPerOp
// per operation, the client's then being that harness cost.
func (r *runner) measured(ctx context.Context, t *target, harnessPerOp time.Duration, phase func(context.Context, db) (phaseResult, error)) (phaseResult, *time.Duration, *time.Duration, error) {
	r.settle(ctx)
	d, err := r.open(ctx, t)
	if err != nil {
		return phaseResult{}, nil, nil, err
	}
	defer r.release(ctx, t, d)
	before := r.sampleCPU()
	res, err := phase(ctx, d)
	after := r.sampleCPU()
	self := after.self - before.self
	var server, client *time.Duration
	switch {
	case t.inProcess:
		h := harnessPerOp * time.Duration(res.ops)
		s := max(self-h, 0)
		server, client = &s, &h
	default:
		client = &self
		if b, ok := before.servers[t]; ok {
			if a, ok := after.servers[t]; ok {
				s := a - b
				server = &s
			}
		}
	}
	return res, server, client, err
}

// How long the harness watches CPU: settle samples settleWindow at a time
// for at most settleMax; idle watches a connected, unused target for
// idleWindow. Variables so that the package's tests run in seconds.
var (
	settleWindow = 250 * time.Millisecond
	settleMax    = 20 * time.Second
	idleWindow   = 2 * time.Second
)

// idle measures the CPU a server target and this process use while the
// driver is connected and no operation runs, as percentages of one core:
// the background cost of the connection (driver monitoring, heartbeats).
func (r *runner) idle(ctx context.Context, t *target) (server, client *float64) {
	if t.uri == "" {
		return nil, nil
	}
	r.settle(ctx)
	d, err := r.open(ctx, t)
	if err != nil {
		return nil, nil
	}
	defer r.release(ctx, t, d)
	before := r.sampleCPU()
	select {
	case <-ctx.Done():
		return nil, nil
	case <-time.After(idleWindow):
	}
	after := r.sampleCPU()
	pct := func(d time.Duration) *float64 {
		v := max(float64(d)/float64(idleWindow)*100, 0)
		return &v
	}
	if b, ok := before.servers[t]; ok {
		if a, ok := after.servers[t]; ok {
			server = pct(a - b)
		}
	}
	return server, pct(after.self - before.self)
}

// harnessCost measures the harness's own CPU per operation by running the
// phase against nullDB (only needed when an in-process target is measured).
func (r *runner) harnessCost(ctx context.Context, phase func(context.Context, db) (phaseResult, error)) time.Duration {
	if !slices.ContainsFunc(r.targets, func(t *target) bool { return t.inProcess }) {
		return 0
	}
	r.settle(ctx)
	before := selfCPU()
	res, err := phase(ctx, nullDB{})
	used := selfCPU() - before
	if err != nil || res.ops == 0 {
		return 0
	}
	return used / time.Duration(res.ops)
}

// load loads t once (run counts from 0), into a fresh store when t's can
// be renewed (fresh.go), otherwise after dropping the collection; a failed
// load leaves t failed for every workload.
func (r *runner) load(ctx context.Context, t *target, run int) LoadResult {
	cfg := r.cfg
	t.failed = nil
	lr := LoadResult{Target: t.name, Records: cfg.Records}
	fresh, err := r.freshStore(ctx, t)
	if err != nil {
		lr.Failed = err.Error()
		return lr
	}
	if cfg.beforeLoad != nil {
		cfg.beforeLoad(t, run)
	}
	t.loaded = true // from here on the store may have been written to
	if t.pid > 0 {
		t.loadedPIDs = append(t.loadedPIDs, t.pid)
	}
	if d, err := r.open(ctx, t); err != nil {
		lr.Failed = err.Error()
		return lr
	} else {
		what := "dropping the collection: "
		if !fresh {
			err = d.reset(ctx)
		}
		if dd, ok := d.(*driverDB); ok && err == nil && cfg.ShardHashed {
			what, err = "sharding the collection (--shard-hashed needs a router): ", dd.shardHashed(ctx)
		}
		r.release(ctx, t, d)
		if err != nil {
			lr.Failed = what + err.Error()
			return lr
		}
	}
	loadWith := func(ctx context.Context, d db, done *atomic.Int64) (phaseResult, error) {
		return load(ctx, d, r.recs, cfg.Records, cfg.Batch, cfg.Threads, done)
	}
	harness := r.harnessCost(ctx, func(ctx context.Context, d db) (phaseResult, error) {
		return loadWith(ctx, d, new(atomic.Int64))
	})
	label := "load " + t.name
	if cfg.Runs > 1 && t.renew != nil {
		label = fmt.Sprintf("load %s run %d/%d", t.name, run+1, cfg.Runs)
	}
	p := startProgress(cfg.Progress, label, cfg.Records)
	res, srv, cli, err := r.measured(ctx, t, harness, func(ctx context.Context, d db) (phaseResult, error) {
		if cfg.onRun != nil {
			defer cfg.onRun(t.name, "load", run)()
		}
		return loadWith(ctx, d, &p.done)
	})
	t.keys = newKeySequence(cfg.Records)
	if err != nil {
		p.finish("failed: " + err.Error())
		lr.Failed = err.Error()
		return lr
	}
	lr.Seconds = res.elapsed.Seconds()
	lr.RecordsPerSec = float64(res.ops) / res.elapsed.Seconds()
	lr.ServerCPU, lr.ClientCPU = perOp(srv, res.ops), perOp(cli, res.ops)
	lr.BatchP50 = micros(res.hists[opInsert].quantile(0.5))
	lr.BatchP99 = micros(res.hists[opInsert].quantile(0.99))
	p.finish(fmt.Sprintf("%s records in %.1fs (%s records/s)", groupDigits(float64(res.ops)), lr.Seconds, groupDigits(lr.RecordsPerSec)))
	if t.failed == nil {
		t.failed = map[string]string{}
	}
	return lr
}

// workload runs w cfg.Runs times on every target whose load succeeded.
func (r *runner) workload(ctx context.Context, w Workload) (WorkloadResult, error) {
	cfg := r.cfg
	dist := w.Distribution
	if cfg.Distribution != "" {
		dist = cfg.Distribution
	}
	wr := WorkloadResult{Workload: w.Name, Title: w.Title, Distribution: dist}
	spec := func(run int, keys *keySequence) runSpec {
		return runSpec{
			w: w, dist: dist, style: cfg.UpdateStyle, records: cfg.Records, ops: cfg.Ops,
			threads: cfg.Threads, seed: cfg.Seed + int64(run)*7919 + int64(w.Name[0]), recs: r.recs, keys: keys,
			maxTime: cfg.MaxTime,
		}
	}
	harness := r.harnessCost(ctx, func(ctx context.Context, d db) (phaseResult, error) {
		return spec(0, newKeySequence(cfg.Records)).run(ctx, d, new(atomic.Int64))
	})
	runs := map[*target][]RunResult{}
	for run := range cfg.Runs {
		order := slices.Clone(r.targets)
		if run%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			if t.failed == nil || t.failed[w.Name] != "" {
				continue // load failed, or an earlier run of w did
			}
			label := fmt.Sprintf("workload %s %s run %d/%d", w.Name, t.name, run+1, cfg.Runs)
			p := startProgress(cfg.Progress, label, cfg.Ops)
			sp := spec(run, t.keys)
			res, srv, cli, err := r.measured(ctx, t, harness, func(ctx context.Context, d db) (phaseResult, error) {
				if cfg.onRun != nil {
					defer cfg.onRun(t.name, w.Name, run)()
				}
				return sp.run(ctx, d, &p.done)
			})
			if err != nil {
				p.finish("FAILED: " + err.Error())
				if ctx.Err() != nil {
					return wr, ctx.Err()
				}
				t.failed[w.Name] = err.Error()
				continue
			}
			rr := runResult(res, srv, cli)
			rr.StoppedByMaxTime = res.ops < cfg.Ops
			runs[t] = append(runs[t], rr)
			p.finish(fmt.Sprintf("%s ops/s, server %s µs/op, client %s µs/op", groupDigits(rr.Throughput), cpuText(rr.ServerCPU), cpuText(rr.ClientCPU)))
		}
	}
	floors := map[string]bool{}
	for _, t := range r.targets {
		floors[t.name] = t.floor
		tr := TargetResult{Target: t.name, Runs: runs[t], Median: summarize(runs[t])}
		switch {
		case t.failed == nil:
			tr.Failed = "load failed"
		case t.failed[w.Name] != "":
			tr.Failed = t.failed[w.Name]
		}
		if tr.Runs == nil {
			tr.Runs = []RunResult{}
		}
		wr.Targets = append(wr.Targets, tr)
	}
	wr.Ratios = ratios(wr.Targets, floors)
	return wr, nil
}

// notes explain what the figures mean, for the report.
func (r *runner) notes() []string {
	n := []string{
		"CPU µs/op: server = the server process's user+system time over the run divided by the run's operations (10 ms tick resolution); client = this process's (driver, workers, histograms).",
		"Latency is measured around each driver call; throughput is the run's operations over its wall time. Each figure is the median of the runs; spread = (max - min) / 2 of throughput, as a percentage of the median.",
	}
	if r.cfg.Runs > 1 {
		n = append(n, fmt.Sprintf("The load figures are medians of %d loads per target, each into a fresh store (a server restarted on a new data directory, a Pebble floor reopened on a new one), the targets' order rotated from run to run; a --uri or --compare server and the proxy floor load once, after the others. The workloads run on each target's last load.", r.cfg.Runs))
	}
	switch r.cfg.UpdateStyle {
	case UpdateSet:
		n = append(n, "Updates are $set of one field, as YCSB's MongoDB binding sends them; read-modify-write reads the record, then $sets one field.")
	case UpdateReplace:
		n = append(n, "Updates are ReplaceOne of the whole record with one field changed (--update replace), not YCSB's $set of one field. Every target receives the same replacements.")
	}
	var inProcess []string
	for _, t := range r.targets {
		if t.inProcess {
			inProcess = append(inProcess, t.name)
		}
	}
	if len(inProcess) > 0 {
		verb := " has"
		if len(inProcess) > 1 {
			verb = " have"
		}
		n = append(n, strings.Join(inProcess, " and ")+verb+" no server process: the server CPU of each is this process's CPU minus the harness's own cost per operation, measured by running the same phase against a no-op target; its client CPU is that harness cost.")
	}
	for _, t := range r.targets {
		if t.name == TargetFloorPebbleOplog {
			n = append(n, "floor-pebble-oplog writes, with each insert and update, an oplog entry in the same batch, as Cairn keeps its change log on every node: cairn vs it is Cairn's work above the bytes it writes.")
		}
		if t.name == TargetFloorProxy {
			n = append(n, "floor-proxy is cairn's server behind a proxy that forwards each message reading only its header (the least a router process can do), into its own database; its server CPU is the proxy's and the server's together, so floor-proxy vs cairn is what any separate process in front of the server costs.")
		}
		if t.name == TargetFloorProtocol {
			n = append(n, "floor-protocol does no database work and no durability: it answers from a Go map behind one RWMutex, with Cairn's wire framing code.")
		}
		if t.name == TargetFloorDurable {
			n = append(n, "floor-durable is floor-protocol that appends every write's statements to a log and fdatasyncs it (group commit) before replying: the least any server pays for durable writes; floor-durable vs floor-protocol is what the disk's syncs alone cost a workload.")
		}
	}
	return n
}
