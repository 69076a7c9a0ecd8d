package bench

import (
	"context"
	"errors"
	"fmt"
	"go.mongodb.org/mongo-driver/v2/bson"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SoakMix is the soak's steady YCSB-style mix over a fixed-size data set:
// reads, updates, read-modify-writes and short scans, no inserts, so the
// data set neither grows nor shrinks and a throughput or memory trend is
// the server's, not the workload's.
var SoakMix = Workload{Name: "soak", Title: "steady mix: 50% read, 35% update, 10% read-modify-write, 5% scan (1-20)",
	Read: 0.50, Update: 0.35, ReadModifyWrite: 0.10, Scan: 0.05, Distribution: DistZipfian, MaxScan: 20}

// SoakConfig configures Soak. Zero values take the defaults of the
// one-hour run (`make soak-load`).
type SoakConfig struct {
	// Self starts `cairn serve` (the server under test, a child process
	// on a free loopback port with a fresh data directory).
	Self SelfCommand
	// Sync is the server's --sync (default "always").
	Sync string
	// Records is the fixed data set's size (default 20,000 records of 10
	// fields of 100 bytes).
	Records int64
	// Threads is the fixed number of client connections (default 8).
	Threads int
	// Duration is the measured run, after Warmup (default 1 hour).
	Duration time.Duration
	// Warmup runs the workload unmeasured first, so that the first window
	// meets the store after its first flushes and compactions (default
	// Duration/60, at least 5 s).
	Warmup time.Duration
	// Interval is how often throughput and RSS are printed (default
	// Duration/60: a minute of the hour).
	Interval time.Duration
	// Window is the span at the start and at the end whose throughputs are
	// compared (default Duration/6: ten minutes of the hour).
	Window time.Duration
	// MaxChange is how far the last window's throughput may fall below
	// the first's, as a fraction of it (default 0.10).
	MaxChange float64
	// MaxRise is how far it may rise above (default MaxChange): a rise is
	// noise or a warm-up the Warmup did not cover, not a leak.
	MaxRise float64
	// MaxRSSMiB bounds the server's resident set at every interval
	// (default 512 MiB: the data set is 20 MiB, Pebble's block cache and
	// memtables stay well under 100 MiB).
	MaxRSSMiB float64
	// Settle is how long the server idles after the load before its heap
	// is read (default a tenth of Duration, between 2 and 10 s).
	Settle time.Duration
	// Seed seeds the operation streams.
	Seed int64
	// Out receives a line per interval (nil: none).
	Out io.Writer
}

func (c *SoakConfig) fillDefaults() {
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.Records == 0 {
		c.Records = 20_000
	}
	if c.Threads == 0 {
		c.Threads = 8
	}
	if c.Duration == 0 {
		c.Duration = time.Hour
	}
	if c.Warmup == 0 {
		c.Warmup = max(c.Duration/60, 5*time.Second)
	}
	if c.Interval == 0 {
		c.Interval = c.Duration / 60
	}
	if c.Window == 0 {
		c.Window = c.Duration / 6
	}
	if c.MaxChange == 0 {
		c.MaxChange = 0.10
	}
	if c.MaxRise == 0 {
		c.MaxRise = c.MaxChange
	}
	if c.Settle == 0 {
		c.Settle = min(10*time.Second, max(2*time.Second, c.Duration/10))
	}
	if c.MaxRSSMiB == 0 {
		c.MaxRSSMiB = 512
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// SoakInterval is one interval's figures.
type SoakInterval struct {
	End time.Duration // since the measured run started
	// Elapsed is the interval's measured length: a loaded machine
	// delivers the ticker's ticks late or drops them, so an interval may
	// be longer or shorter than SoakConfig.Interval.
	Elapsed   time.Duration
	Ops       int64
	OpsPerSec float64 // Ops / Elapsed
	RSSMiB    float64
	// ServerCPU is the CPU time the server used in the interval (user +
	// system, /proc/<pid>/stat), 0 when unreadable.
	ServerCPU time.Duration
	// Load is the machine's load average (1, 5, 15 minutes) at its end.
	Load string
}

// SoakResult is what a soak measured and its verdict.
type SoakResult struct {
	Config                        SoakConfig
	Intervals                     []SoakInterval
	FirstOpsPerSec, LastOpsPerSec float64 // ops over the windows' measured time
	// First and Last say what each window measured (ops, time, the
	// server's CPU, the load average), for the verdict's message.
	First, Last string
	// Change is (last - first) / first.
	Change    float64
	MaxRSSMiB float64
	// After the load ends and the server idles for Settle: its heap in
	// use and held (serverStatus tcmalloc.generic current_allocated_bytes
	// and heap_size) and its RSS (issue 17: "the server's heap is measured
	// after load ends").
	HeapAfterMiB, HeapSizeAfterMiB, RSSAfterMiB float64
	// Failures say why the soak did not pass; none when it did.
	Failures []string
}

// Passed reports whether throughput held and RSS stayed bounded.
func (r *SoakResult) Passed() bool { return len(r.Failures) == 0 }

// Soak runs SoakMix against a fresh `cairn serve` for cfg.Duration and
// judges it: the last window's throughput must be within MaxChange of the
// first window's, and the server's RSS under MaxRSSMiB at every interval.
// A failed operation ends the soak with its error.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	cfg.fillDefaults()
	if cfg.Window > cfg.Duration/2 || cfg.Interval > cfg.Window {
		return nil, fmt.Errorf("bench: soak window %s must fit twice in the duration %s and hold an interval %s", cfg.Window, cfg.Duration, cfg.Interval)
	}
	bc := &Config{Self: cfg.Self, Sync: cfg.Sync}
	bc.fillDefaults()
	t, uri, err := startEmbedded(ctx, bc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.close(context.Background()) }()
	d, err := dialDriver(ctx, uri, "", bc.Database, bc.Collection)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.close(context.Background()) }()
	recs := newRecords(bc.FieldCount, bc.FieldLength, cfg.Seed)
	var done atomic.Int64
	if _, err := load(ctx, d, recs, cfg.Records, bc.Batch, cfg.Threads, &done); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "soak: %d records loaded; %s, %d connections, %s after a %s warm-up; server pid %d\n",
		cfg.Records, SoakMix.Title, cfg.Threads, cfg.Duration, cfg.Warmup, t.pid)
	spec := runSpec{w: SoakMix, dist: SoakMix.Distribution, style: bc.UpdateStyle, records: cfg.Records,
		ops: math.MaxInt64, threads: cfg.Threads, seed: cfg.Seed, recs: recs, keys: newKeySequence(cfg.Records),
		maxTime: 0} // until stop: a loaded machine's late ticks lengthen the measured run
	runErr := make(chan error, 1)
	done.Store(0)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_, err := spec.run(runCtx, d, &done)
		runErr <- err
	}()
	res := &SoakResult{Config: cfg}
	select {
	case err := <-runErr:
		return nil, fmt.Errorf("soak: during the warm-up: %w", err)
	case <-time.After(cfg.Warmup):
	}
	start, last := time.Now(), done.Load()
	lastEnd := time.Duration(0)
	lastCPU, _ := processCPU(t.pid)
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for len(res.Intervals) < int(cfg.Duration/cfg.Interval) {
		select {
		case err := <-runErr:
			if err == nil {
				err = fmt.Errorf("the workload ended early")
			}
			return nil, fmt.Errorf("soak: after %s: %w", time.Since(start).Round(time.Second), err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		n := done.Load()
		iv := SoakInterval{End: time.Since(start), Ops: n - last, RSSMiB: processRSSMiB(t.pid), Load: loadAverage()}
		iv.Elapsed = iv.End - lastEnd
		iv.OpsPerSec = float64(iv.Ops) / iv.Elapsed.Seconds()
		if c, err := processCPU(t.pid); err == nil {
			iv.ServerCPU, lastCPU = c-lastCPU, c
		}
		last, lastEnd = n, iv.End
		res.Intervals = append(res.Intervals, iv)
		res.MaxRSSMiB = max(res.MaxRSSMiB, iv.RSSMiB)
		fmt.Fprintf(cfg.Out, "soak: %8s  %9.0f ops/s  RSS %7.1f MiB\n", iv.End.Round(time.Second), iv.OpsPerSec, iv.RSSMiB)
	}
	stop()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("soak: %w", err)
	}
	if err := res.measureAfter(ctx, d, t.pid, cfg.Settle); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "soak: after the load and %s idle: heap in use %.1f MiB, heap held %.1f MiB, RSS %.1f MiB\n",
		cfg.Settle, res.HeapAfterMiB, res.HeapSizeAfterMiB, res.RSSAfterMiB)
	res.judge()
	return res, nil
}

// measureAfter lets the server idle for settle, then reads its heap
// (serverStatus) and RSS.
func (r *SoakResult) measureAfter(ctx context.Context, d *driverDB, pid int, settle time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	var st struct {
		Tcmalloc struct {
			Generic struct {
				Allocated int64 `bson:"current_allocated_bytes"`
				HeapSize  int64 `bson:"heap_size"`
			} `bson:"generic"`
		} `bson:"tcmalloc"`
	}
	if err := d.client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		return fmt.Errorf("soak: serverStatus after the load: %w", err)
	}
	r.HeapAfterMiB = float64(st.Tcmalloc.Generic.Allocated) / (1 << 20)
	r.HeapSizeAfterMiB = float64(st.Tcmalloc.Generic.HeapSize) / (1 << 20)
	r.RSSAfterMiB = processRSSMiB(pid)
	return nil
}

// judge compares the first and last windows and checks the RSS bound.
func (r *SoakResult) judge() {
	cfg := r.Config
	per := max(1, int(cfg.Window/cfg.Interval))
	r.FirstOpsPerSec, r.First = window(r.Intervals[:per])
	r.LastOpsPerSec, r.Last = window(r.Intervals[len(r.Intervals)-per:])
	if r.FirstOpsPerSec > 0 {
		r.Change = (r.LastOpsPerSec - r.FirstOpsPerSec) / r.FirstOpsPerSec
	}
	if r.FirstOpsPerSec == 0 || r.Change < -cfg.MaxChange || r.Change > cfg.MaxRise {
		// The server's CPU per operation tells a server that got slower
		// (it rises) from a machine whose other work took the CPU (the
		// server's CPU time falls with the throughput, per operation
		// about the same): make test's short windows on a shared machine
		// fail on the second.
		r.Failures = append(r.Failures, fmt.Sprintf("throughput of the last %s is %.0f ops/s, %+.1f%% of the first %s's %.0f ops/s (allowed -%.0f%% to +%.0f%%); first: %s; last: %s",
			cfg.Window, r.LastOpsPerSec, 100*r.Change, cfg.Window, r.FirstOpsPerSec, 100*cfg.MaxChange, 100*cfg.MaxRise, r.First, r.Last))
	}
	if r.MaxRSSMiB > cfg.MaxRSSMiB {
		r.Failures = append(r.Failures, fmt.Sprintf("server RSS reached %.1f MiB (bound %.0f MiB)", r.MaxRSSMiB, cfg.MaxRSSMiB))
	}
	if r.MaxRSSMiB == 0 {
		r.Failures = append(r.Failures, "the server's RSS could not be read")
	}
	if r.HeapAfterMiB <= 0 || r.HeapAfterMiB > cfg.MaxRSSMiB {
		r.Failures = append(r.Failures, fmt.Sprintf("heap in use after the load is %.1f MiB (bound %.0f MiB)", r.HeapAfterMiB, cfg.MaxRSSMiB))
	}
}

// window sums ivs: its throughput over their measured time, and a
// description of what it measured.
func window(ivs []SoakInterval) (float64, string) {
	var ops int64
	var elapsed, cpu time.Duration
	for _, iv := range ivs {
		ops += iv.Ops
		elapsed += iv.Elapsed
		cpu += iv.ServerCPU
	}
	if elapsed <= 0 || len(ivs) == 0 {
		return 0, "no time measured"
	}
	perOp := "no operations"
	if ops > 0 {
		perOp = fmt.Sprintf("%.0f µs of server CPU per op", float64(cpu.Microseconds())/float64(ops))
	}
	return float64(ops) / elapsed.Seconds(), fmt.Sprintf("%d ops in %.2f s, server CPU %.2f s (%.0f%% of a core, %s), load average %s → %s",
		ops, elapsed.Seconds(), cpu.Seconds(), 100*cpu.Seconds()/elapsed.Seconds(), perOp, ivs[0].Load, ivs[len(ivs)-1].Load)
}

// processRSSMiB is pid's resident set from /proc/<pid>/status, 0 when
// unreadable.
func processRSSMiB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
