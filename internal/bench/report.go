package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one invocation measured; --json prints it as is.
// Latencies are in microseconds, CPU in microseconds per operation (per
// record for loads), throughput in operations per second.
type Report struct {
	CairnVersion string       `json:"cairnVersion"`
	Machine      Machine      `json:"machine"`
	Config       ConfigEcho   `json:"config"`
	Targets      []TargetInfo `json:"targets"`
	Loads        []LoadResult `json:"loads"`
	// LoadRatios compare cairn's load phase with each floor's (and the
	// --compare server's): records per second and server CPU per record.
	LoadRatios []Ratio          `json:"loadRatios"`
	Workloads  []WorkloadResult `json:"workloads"`
	Notes      []string         `json:"notes"`
}

// ConfigEcho is the configuration the figures were measured with.
type ConfigEcho struct {
	Records int64 `json:"records"`
	Ops     int64 `json:"opsPerRun"`
	// MaxTimeSeconds ends runs early (0: none).
	MaxTimeSeconds float64     `json:"maxTimeSeconds"`
	Threads        int         `json:"threads"`
	FieldCount     int         `json:"fieldCount"`
	FieldLength    int         `json:"fieldLength"`
	Batch          int         `json:"loadBatch"`
	Runs           int         `json:"runs"`
	Distribution   string      `json:"distribution"`
	Seed           int64       `json:"seed"`
	Sync           string      `json:"sync"`
	UpdateStyle    UpdateStyle `json:"updateStyle"`
	Monitoring     string      `json:"serverMonitoringMode"`
}

// TargetInfo says what a target is and where its server CPU figure comes
// from.
type TargetInfo struct {
	Name      string `json:"name"`
	About     string `json:"about"`
	ServerCPU string `json:"serverCPUFrom"`
	ClientCPU string `json:"clientCPUFrom"`
	// IdleServerCPU and IdleClientCPU are the CPU (percent of one core)
	// the server and this process use with the driver connected and no
	// operation running; null when unknown or not applicable.
	IdleServerCPU *float64 `json:"idleServerCPUPercent"`
	IdleClientCPU *float64 `json:"idleClientCPUPercent"`
}

// LoadResult is a target's load phase.
type LoadResult struct {
	Target        string   `json:"target"`
	Records       int64    `json:"records"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"recordsPerSec"`
	ServerCPU     *float64 `json:"serverCPUMicrosPerRecord"`
	ClientCPU     *float64 `json:"clientCPUMicrosPerRecord"`
	BatchP50      float64  `json:"batchP50Micros"`
	BatchP99      float64  `json:"batchP99Micros"`
	Failed        string   `json:"failed,omitempty"`
	// With --runs above 1, the figures above are the medians of Runs
	// (each a fresh load) and SpreadPct the spread of their records/s.
	Runs      []LoadResult `json:"runs,omitempty"`
	SpreadPct float64      `json:"spreadPct,omitempty"`
}

// medianLoad sums up a target's load runs: each figure the median over
// the runs, with the runs kept. A failed run (the last: a target is not
// loaded again after one) fails the load.
func medianLoad(runs []LoadResult) LoadResult {
	last := runs[len(runs)-1]
	if last.Failed != "" || len(runs) == 1 {
		if len(runs) > 1 {
			last.Runs = runs
		}
		return last
	}
	var secs, rate, p50, p99 []float64
	for _, l := range runs {
		secs, rate = append(secs, l.Seconds), append(rate, l.RecordsPerSec)
		p50, p99 = append(p50, l.BatchP50), append(p99, l.BatchP99)
	}
	m := LoadResult{
		Target: last.Target, Records: last.Records, Runs: runs,
		Seconds: median(secs), RecordsPerSec: median(rate), BatchP50: median(p50), BatchP99: median(p99),
		ServerCPU: medianOf(runs, func(l LoadResult) *float64 { return l.ServerCPU }),
		ClientCPU: medianOf(runs, func(l LoadResult) *float64 { return l.ClientCPU }),
	}
	if m.RecordsPerSec > 0 {
		m.SpreadPct = (slices.Max(rate) - slices.Min(rate)) / 2 / m.RecordsPerSec * 100
	}
	return m
}

// WorkloadResult is one workload on every target, with the ratios of each
// non-floor target to each floor.
type WorkloadResult struct {
	Workload     string         `json:"workload"`
	Title        string         `json:"title"`
	Distribution string         `json:"distribution"`
	Targets      []TargetResult `json:"targets"`
	Ratios       []Ratio        `json:"ratios"`
}

// TargetResult is one workload's runs on one target and their medians.
// Failed holds the error that stopped the runs (the server's own message
// when it refused an operation); the runs completed before it are kept.
type TargetResult struct {
	Target string      `json:"target"`
	Failed string      `json:"failed,omitempty"`
	Runs   []RunResult `json:"runs"`
	Median *Summary    `json:"median,omitempty"`
}

// RunResult is one run of a workload on a target.
type RunResult struct {
	Ops        int64     `json:"ops"`
	Seconds    float64   `json:"seconds"`
	Throughput float64   `json:"opsPerSec"`
	ServerCPU  *float64  `json:"serverCPUMicrosPerOp"` // null when unknown
	ClientCPU  *float64  `json:"clientCPUMicrosPerOp"`
	Operations []OpStats `json:"operations"` // "all" first, then each type
	// StoppedByMaxTime: the run ended at --max-time before its operations.
	StoppedByMaxTime bool `json:"stoppedByMaxTime,omitempty"`
}

// OpStats are one operation type's count, rate and latencies in a run.
type OpStats struct {
	Op         string  `json:"op"`
	Count      int64   `json:"count"`
	Throughput float64 `json:"opsPerSec"`
	P50        float64 `json:"p50Micros"`
	P95        float64 `json:"p95Micros"`
	P99        float64 `json:"p99Micros"`
	Max        float64 `json:"maxMicros"`
	Mean       float64 `json:"meanMicros"`
}

// Summary is the median of a target's runs, each figure taken separately,
// with the spread of throughput: (max - min) / 2 as a percentage of the
// median.
type Summary struct {
	Runs          int       `json:"runs"`
	Throughput    float64   `json:"opsPerSec"`
	ThroughputMin float64   `json:"opsPerSecMin"`
	ThroughputMax float64   `json:"opsPerSecMax"`
	SpreadPct     float64   `json:"spreadPercent"`
	ServerCPU     *float64  `json:"serverCPUMicrosPerOp"`
	ClientCPU     *float64  `json:"clientCPUMicrosPerOp"`
	Operations    []OpStats `json:"operations"`
}

// Ratio is a target measured against a floor (or cairn against the
// --compare server): Throughput is target/against (1 = as fast),
// ServerCPU is target/against CPU per operation (1 = as cheap).
type Ratio struct {
	Target     string   `json:"target"`
	Against    string   `json:"against"`
	Throughput float64  `json:"throughput"`
	ServerCPU  *float64 `json:"serverCPU"`
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func opStats(name string, h *histogram, elapsed time.Duration) OpStats {
	return OpStats{
		Op:         name,
		Count:      int64(h.n),
		Throughput: float64(h.n) / elapsed.Seconds(),
		P50:        micros(h.quantile(0.50)),
		P95:        micros(h.quantile(0.95)),
		P99:        micros(h.quantile(0.99)),
		Max:        micros(time.Duration(max(h.max, 0))),
		Mean:       micros(h.mean()),
	}
}

// runResult turns a phase's histograms and CPU deltas into a RunResult.
func runResult(res phaseResult, serverCPU, clientCPU *time.Duration) RunResult {
	all := newHistogram()
	for _, h := range res.hists {
		all.merge(h)
	}
	r := RunResult{
		Ops:        res.ops,
		Seconds:    res.elapsed.Seconds(),
		Throughput: float64(res.ops) / res.elapsed.Seconds(),
		ServerCPU:  perOp(serverCPU, res.ops),
		ClientCPU:  perOp(clientCPU, res.ops),
		Operations: []OpStats{opStats("all", all, res.elapsed)},
	}
	for op, h := range res.hists {
		if h.n > 0 {
			r.Operations = append(r.Operations, opStats(opKind(op).String(), h, res.elapsed))
		}
	}
	return r
}

func perOp(cpu *time.Duration, ops int64) *float64 {
	if cpu == nil || ops == 0 {
		return nil
	}
	v := max(micros(*cpu)/float64(ops), 0)
	return &v
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianOf[R any](runs []R, get func(R) *float64) *float64 {
	var xs []float64
	for _, r := range runs {
		if v := get(r); v != nil {
			xs = append(xs, *v)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	m := median(xs)
	return &m
}

// summarize takes the median of each figure over the runs.
func summarize(runs []RunResult) *Summary {
	if len(runs) == 0 {
		return nil
	}
	var tput []float64
	for _, r := range runs {
		tput = append(tput, r.Throughput)
	}
	s := &Summary{
		Runs:          len(runs),
		Throughput:    median(tput),
		ThroughputMin: slices.Min(tput),
		ThroughputMax: slices.Max(tput),
		ServerCPU:     medianOf(runs, func(r RunResult) *float64 { return r.ServerCPU }),
		ClientCPU:     medianOf(runs, func(r RunResult) *float64 { return r.ClientCPU }),
	}
	if s.Throughput > 0 {
		s.SpreadPct = (s.ThroughputMax - s.ThroughputMin) / 2 / s.Throughput * 100
	}
	for _, op := range runs[0].Operations {
		var fields [7][]float64
		for _, r := range runs {
			for _, o := range r.Operations {
				if o.Op == op.Op {
					for i, v := range []float64{float64(o.Count), o.Throughput, o.P50, o.P95, o.P99, o.Max, o.Mean} {
						fields[i] = append(fields[i], v)
					}
				}
			}
		}
		s.Operations = append(s.Operations, OpStats{
			Op: op.Op, Count: int64(median(fields[0])), Throughput: median(fields[1]),
			P50: median(fields[2]), P95: median(fields[3]), P99: median(fields[4]),
			Max: median(fields[5]), Mean: median(fields[6]),
		})
	}
	return s
}

// ratios compares each non-floor target's medians with each floor's,
// cairn's with the --compare server's, the proxy floor's with cairn's
// (the proxy floor is cairn's server behind a proxy: a floor of what a
// router adds, not under cairn's own work), and the durable floor's with
// the protocol floor's (what the disk's syncs alone cost).
func ratios(results []TargetResult, floors map[string]bool) []Ratio {
	var out []Ratio
	for _, t := range results {
		if floors[t.Target] && t.Target != TargetFloorDurable || t.Median == nil || t.Failed != "" {
			continue
		}
		for _, f := range results {
			var against bool
			switch t.Target {
			case TargetFloorDurable: // what the syncs alone cost
				against = f.Target == TargetFloorProtocol
			case TargetFloorProxy: // and what the proxy adds to its server
				against = floors[f.Target] || f.Target == TargetCairn
			case TargetCairn:
				against = floors[f.Target] || f.Target == TargetCompare
			default:
				against = floors[f.Target]
			}
			if !against || f.Median == nil || f.Failed != "" || f.Median.Throughput == 0 {
				continue
			}
			r := Ratio{Target: t.Target, Against: f.Target, Throughput: t.Median.Throughput / f.Median.Throughput}
			if t.Median.ServerCPU != nil && f.Median.ServerCPU != nil && *f.Median.ServerCPU > 0 {
				v := *t.Median.ServerCPU / *f.Median.ServerCPU
				r.ServerCPU = &v
			}
			out = append(out, r)
		}
	}
	return out
}

// loadRatios compares each non-floor target's load phase with each floor's,
// and cairn's with the --compare server's, as ratios compares workloads.
func loadRatios(loads []LoadResult, floors map[string]bool) []Ratio {
	results := make([]TargetResult, 0, len(loads))
	for _, l := range loads {
		tr := TargetResult{Target: l.Target, Failed: l.Failed}
		if l.Failed == "" {
			tr.Median = &Summary{Runs: max(1, len(l.Runs)), Throughput: l.RecordsPerSec, ServerCPU: l.ServerCPU, SpreadPct: l.SpreadPct}
		}
		results = append(results, tr)
	}
	return ratios(results, floors)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as tables for people.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Config
	p := &errWriter{w: w}
	p.printf("cairn bench %s: %s records (%d fields × %d B), %d threads, %s ops per run, %d run(s); update style %s, sync %s\n",
		r.CairnVersion, groupDigits(float64(c.Records)), c.FieldCount, c.FieldLength, c.Threads, groupDigits(float64(c.Ops)), c.Runs, c.UpdateStyle, c.Sync)
	m := r.Machine
	p.printf("machine: %d cores, %.1f GiB, %s, %s; load average %s before, %s after\n\n", m.Cores, m.MemoryGiB, m.GoVersion, m.Date, m.LoadBefore, m.LoadAfter)
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
	row := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	row("target\truns as\tserver CPU from\tidle CPU (connected, no ops): server, client\n")
	for _, t := range r.Targets {
		idle := "n/a"
		if t.IdleClientCPU != nil {
			idle = fmt.Sprintf("%s%%, %s%% of a core", cpuText(t.IdleServerCPU), cpuText(t.IdleClientCPU))
		}
		row("%s\t%s\t%s\t%s\n", t.Name, t.About, t.ServerCPU, idle)
	}
	_ = tw.Flush()
	p.printf("\nload (batched inserts)\n")
	tw = tabwriter.NewWriter(p, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Names are padded to one width so that they read left-aligned in
	// right-aligned tables.
	nameW := len("target")
	for _, t := range r.Targets {
		nameW = max(nameW, len(t.Name))
	}
	pad := func(s string, w int) string { return fmt.Sprintf("%-*s", w, s) }
	row("%s\trecords/s\tspread\tbatch p50\tbatch p99\tsrv µs/rec\tcli µs/rec\t\n", pad("target", nameW))
	for _, l := range r.Loads {
		if l.Failed != "" {
			row("%s\tfailed: %s\t\t\t\t\t\t\n", pad(l.Target, nameW), l.Failed)
			continue
		}
		spread := "one load" // a target loaded once: no spread to show
		if len(l.Runs) > 1 {
			spread = fmt.Sprintf("±%.0f%%", l.SpreadPct)
		}
		row("%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", pad(l.Target, nameW), groupDigits(l.RecordsPerSec), spread, usText(l.BatchP50), usText(l.BatchP99), cpuText(l.ServerCPU), cpuText(l.ClientCPU))
	}
	_ = tw.Flush()
	writeRatioLines(p, r.LoadRatios, "records/s", "server CPU/record")
	for _, wl := range r.Workloads {
		p.printf("\nworkload %s — %s (%s)\n", wl.Workload, wl.Title, wl.Distribution)
		tw = tabwriter.NewWriter(p, 0, 0, 2, ' ', tabwriter.AlignRight)
		opW := len("op")
		for _, t := range wl.Targets {
			if t.Median != nil {
				for _, o := range t.Median.Operations {
					opW = max(opW, len(o.Op))
				}
			}
		}
		row("%s\t%s\tops/s\tspread\tp50\tp95\tp99\tmax\tsrv µs/op\tcli µs/op\t\n", pad("target", nameW), pad("op", opW))
		for _, t := range wl.Targets {
			if t.Median == nil {
				row("%s\t%s\t\t\t\t\t\t\t\t\t\n", pad(t.Target, nameW), pad("failed", opW))
				continue
			}
			for i, o := range t.Median.Operations {
				name, spread, srv, cli := "", "", "", ""
				if i == 0 {
					name, spread = t.Target, fmt.Sprintf("±%.0f%%", t.Median.SpreadPct)
					srv, cli = cpuText(t.Median.ServerCPU), cpuText(t.Median.ClientCPU)
				}
				row("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", pad(name, nameW), pad(o.Op, opW), groupDigits(o.Throughput), spread,
					usText(o.P50), usText(o.P95), usText(o.P99), usText(o.Max), srv, cli)
			}
		}
		_ = tw.Flush()
		for _, t := range wl.Targets {
			if t.Failed != "" {
				p.printf("  %s FAILED: %s\n", t.Target, t.Failed)
			}
			stopped := 0
			for _, run := range t.Runs {
				if run.StoppedByMaxTime {
					stopped++
				}
			}
			if stopped > 0 {
				p.printf("  %s: %d of %d runs stopped at --max-time before their %s operations\n", t.Target, stopped, len(t.Runs), groupDigits(float64(c.Ops)))
			}
		}
		writeRatioLines(p, wl.Ratios, "throughput", "server CPU/op")
	}
	writeRatioSummary(p, r.LoadRatios, r.Workloads)
	if len(r.Notes) > 0 {
		p.printf("\nnotes:\n")
		for _, n := range r.Notes {
			p.printf("  - %s\n", n)
		}
	}
	return p.err
}

// writeRatioLines writes one line per ratio under a phase's table.
func writeRatioLines(p *errWriter, rs []Ratio, rate, cpuName string) {
	for _, ra := range rs {
		cpu := cpuName + " n/a"
		if ra.ServerCPU != nil {
			cpu = fmt.Sprintf("%s %.2f×", cpuName, *ra.ServerCPU)
		}
		p.printf("  %s vs %s: %s %s, %s\n", ra.Target, ra.Against, rate, percentText(ra.Throughput), cpu)
	}
}

// floorTarget is issue 16's target for cairn against the protocol floor in
// one workload: at least MinThroughput of its throughput and, where set, at
// most MaxServerCPU times its server CPU per operation.
type floorTarget struct {
	MinThroughput float64
	MaxServerCPU  float64
}

var protocolTargets = map[string]floorTarget{
	"a": {MinThroughput: 0.65},
	"b": {MinThroughput: 0.85},
	"c": {MinThroughput: 0.90, MaxServerCPU: 1.25},
	"e": {MinThroughput: 0.60},
	"f": {MinThroughput: 0.65},
}

// loadPebbleTarget is issue 16's target for cairn's load phase: at least
// this share of the Pebble floor's synced insert rate, measured in the
// same run.
const loadPebbleTarget = 0.80

// writeRatioSummary ends the text report with one line for the load and
// one per workload and floor: cairn's throughput and server CPU per
// operation (per record for the load) as ratios to the floor's, and the
// target each should meet (the load against the Pebble floor, workloads
// against the protocol floor), marked MISSED when it does not, so a
// regression stands out.
func writeRatioSummary(p *errWriter, loads []Ratio, workloads []WorkloadResult) {
	tw := tabwriter.NewWriter(p, 0, 0, 2, ' ', 0)
	wrote := false
	phases := make([]WorkloadResult, 0, len(workloads)+1)
	phases = append(phases, WorkloadResult{Workload: "load", Ratios: loads})
	phases = append(phases, workloads...)
	for _, wl := range phases {
		for _, ra := range wl.Ratios {
			if ra.Target != TargetCairn && ra.Target != TargetFloorDurable {
				continue // the --compare server's own ratios are in its phase's lines
			}
			if !wrote {
				p.printf("\nratios to the floors (cairn ÷ floor; throughput higher is better, server CPU/op lower is better)\n")
				_, _ = fmt.Fprintf(tw, "workload\tagainst\tthroughput\tserver CPU/op\ttarget\t\n")
				wrote = true
			}
			cpu := "n/a"
			if ra.ServerCPU != nil {
				cpu = fmt.Sprintf("%.2f×", *ra.ServerCPU)
			}
			target := ""
			cairn := ra.Target == TargetCairn // the targets are cairn's
			if cairn && wl.Workload == "load" && ra.Against == TargetFloorPebble {
				target = "≥ " + percentText(loadPebbleTarget)
				if ra.Throughput < loadPebbleTarget {
					target += " MISSED"
				}
			}
			if t, ok := protocolTargets[strings.ToLower(wl.Workload)]; ok && cairn && ra.Against == TargetFloorProtocol {
				target = fmt.Sprintf("≥ %s", percentText(t.MinThroughput))
				missed := ra.Throughput < t.MinThroughput
				if t.MaxServerCPU > 0 {
					target += fmt.Sprintf(", CPU ≤ %.2f×", t.MaxServerCPU)
					missed = missed || ra.ServerCPU == nil || *ra.ServerCPU > t.MaxServerCPU
				}
				if missed {
					target += " MISSED"
				}
			}
			against := ra.Against
			if !cairn {
				against = ra.Target + " ÷ " + ra.Against // no target: what any durable server pays
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", wl.Workload, against, percentText(ra.Throughput), cpu, target)
		}
	}
	_ = tw.Flush()
}

// errWriter remembers the first write error so the text renderer can
// ignore errors until the end.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return len(b), nil
	}
	_, e.err = e.w.Write(b)
	return len(b), nil
}

func (e *errWriter) printf(format string, args ...any) { _, _ = fmt.Fprintf(e, format, args...) }

// usText formats microseconds for a table: 85µs, 1.23ms, 2.1s.
func usText(us float64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1000)
	default:
		return fmt.Sprintf("%.1fs", us/1e6)
	}
}

// percentText formats a fraction as a percentage with two significant
// digits when it is small (0.16%), none otherwise (68%).
func percentText(f float64) string {
	if f < 0.1 {
		return fmt.Sprintf("%.2g%%", f*100)
	}
	return fmt.Sprintf("%.0f%%", f*100)
}

func cpuText(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *v)
}

// groupDigits formats a rate as an integer with thousands separators.
func groupDigits(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
