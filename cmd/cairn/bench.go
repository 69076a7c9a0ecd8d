package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairndb/cairn/internal/bench"
)

// listFlag collects a repeatable flag whose values may also be
// comma-separated lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

const benchUsage = `Usage: cairn bench [flags]

Runs YCSB's core workloads through the official Go driver and reports
throughput, latency percentiles (p50/p95/p99/max) and CPU microseconds per
operation for the server and for the client, next to floors measured in the
same run.

Without --uri it starts 'cairn serve' as a child process on a free loopback
port with a fresh data directory (removed afterwards), so the server's CPU
is read from its own process accounting.

Workloads (YCSB's definitions; records are {_id: "user<hash>", field0..N}):
  a  50% read, 50% update               zipfian
  b  95% read, 5% update                zipfian
  c  100% read                          zipfian
  d  95% read, 5% insert                latest
  e  95% scan (1-100 records), 5% insert zipfian
  f  50% read, 50% read-modify-write    zipfian

Floors (--floor, repeatable):
  protocol  a server speaking the same wire protocol from a Go map: what the
            driver, the socket and BSON cost before any database work
  durable   the protocol floor with a log: every write appended and
            fdatasync'd (group commit) before its reply: the least any
            server pays for durable writes (reported against cairn, and
            as floor-durable ÷ floor-protocol: what the syncs alone cost)
  pebble    the same records and operations against Pebble directly,
            in-process, opened with the options Cairn's store opens it with,
            writes synced: what the storage engine costs
  pebble-oplog  the pebble floor writing, with each insert and update, an
            oplog entry in the same batch (MongoDB's shape), as Cairn keeps
            its change log on every node: Pebble given Cairn's bytes
  proxy     the server behind a proxy process that forwards each message
            reading only its header (one server connection per client
            connection): the least any router process adds; reported as
            floor-proxy vs cairn, the CPU of both processes counted
            (run one by hand: cairn bench --proxy-floor-server --port P --to host:port)

Profiles (--profile-dir DIR): the server's own CPU profile of every measured
phase (the load and each run of each workload) and its allocations profile
as the phase began and ended, written to DIR as cpu-<phase>-run<N>.pprof and
allocs-<phase>-run<N>-{start,end}.pprof. Only a cairn built with
-tags cairnpprof serves them; 'make bench-profile' builds one, runs every
workload and prints each profile's top 15 functions. Profiling costs the
server a little inside each phase: take ratios from unprofiled runs.

Examples:
  cairn bench --workload c --floor protocol
  cairn bench --workload all --records 100000 --threads 16 --runs 3 --floor protocol --floor pebble
  cairn bench --uri mongodb://127.0.0.1:27017 --compare mongodb://127.0.0.1:27018 --json

Flags:
`

func benchCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "bench [flags]",
		Short: "Run YCSB workloads against a server and its floors",
		Long:  strings.TrimSuffix(strings.TrimPrefix(benchUsage, "Usage: cairn bench [flags]\n\n"), "\nFlags:\n") + "\nRun 'cairn bench --help' for the flags.",
		// bench parses its own flags (the standard library's flag package).
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := runBench(args, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}

func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == bench.FloorServerArg {
		return bench.RunFloorServer(args[1:], stdout, stderr) // the protocol floor's child process
	}
	if len(args) > 0 && args[0] == bench.ProxyFloorServerArg {
		return bench.RunProxyFloorServer(args[1:], stdout, stderr) // the proxy floor's child process
	}
	var cfg bench.Config
	var workloads, floors listFlag
	var asJSON bool
	var update string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.URI, "uri", "", "server to measure (default: start 'cairn serve' on a free loopback port with a fresh data directory)")
	fs.StringVar(&cfg.CompareURI, "compare", "", "another server to measure alongside, runs alternating")
	fs.Var(&workloads, "workload", "workloads to run: a-f, a comma list, or all (repeatable; default all)")
	fs.Var(&floors, "floor", "floor to measure alongside: protocol, durable, pebble, pebble-oplog or proxy (repeatable)")
	fs.Int64Var(&cfg.Records, "records", 100_000, "records loaded before the workloads")
	fs.Int64Var(&cfg.Ops, "ops", 100_000, "operations per run")
	fs.DurationVar(&cfg.MaxTime, "max-time", 0, "end each run after this long even if operations remain, e.g. 30s (YCSB's maxexecutiontime; default: no limit)")
	fs.IntVar(&cfg.Threads, "threads", 16, "concurrent clients")
	fs.IntVar(&cfg.FieldCount, "field-count", 10, "fields per record")
	fs.IntVar(&cfg.FieldLength, "field-length", 100, "bytes per field")
	fs.StringVar(&cfg.Distribution, "distribution", "", "request distribution for every workload: zipfian, uniform or latest (default: each workload's own)")
	fs.IntVar(&cfg.Batch, "batch", 1000, "records per insert in the load phase")
	fs.BoolVar(&cfg.ShardHashed, "shard-hashed", false, "shard the collection on {_id: \"hashed\"} before the load (--uri is a router)")
	fs.IntVar(&cfg.Runs, "runs", 1, "runs of the load (each into a fresh store: the servers restarted on new directories, the Pebble floors reopened; a --uri/--compare server and the proxy floor load once) and of each workload per target; the report gives the median and spread")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the operation streams and record contents")
	fs.StringVar(&cfg.Sync, "sync", "always", "the embedded server's --sync; anything but 'always' also makes the pebble floor write without syncing")
	fs.StringVar(&update, "update", string(bench.DefaultUpdateStyle), "how updates are sent: 'set' ($set of one field, as YCSB does) or 'replace' (ReplaceOne of the whole record with one field changed, for servers without update operators)")
	fs.StringVar(&cfg.Monitoring, "server-monitoring", "", "the driver's serverMonitoringMode for every target: auto, stream or poll (default: the driver's)")
	fs.StringVar(&cfg.Database, "db", "cairn_bench", "database holding the records")
	fs.StringVar(&cfg.Collection, "collection", "usertable", "collection holding the records (dropped before loading)")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write the server's CPU and allocation profiles of every measured phase here (a cairn built with -tags cairnpprof; make bench-profile)")
	fs.StringVar(&cfg.ProfileURL, "profile-url", "", "with --uri and --profile-dir: where that server serves its profiles (http://host:port, its CAIRN_PPROF address)")
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err == flag.ErrHelp {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cairn bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if len(workloads) == 0 {
		workloads = listFlag{"all"}
	}
	var err error
	if cfg.Workloads, err = bench.ParseWorkloads(workloads); err != nil {
		fmt.Fprintln(stderr, "cairn bench:", err)
		return 2
	}
	cfg.Floors = floors
	cfg.UpdateStyle = bench.UpdateStyle(update)
	cfg.Version = version
	cfg.Progress = stderr
	cfg.Self = func(args ...string) *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		return exec.Command(exe, args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "cairn bench:", err)
		return 1
	}
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cairn bench:", err)
		return 1
	}
	return 0
}
