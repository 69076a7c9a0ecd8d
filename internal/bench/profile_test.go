package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"
)

// BenchmarkServerProfile runs workloads against a Cairn server started in
// this process and writes a CPU profile of each run phase, so the server's
// hot spots can be read without adding a profiling endpoint to `cairn
// serve`:
//
//	CAIRN_BENCH_PROFILE_DIR=/tmp/prof CAIRN_BENCH_WORKLOADS=a,c \
//	  go test -run XXX -bench ServerProfile -benchtime 1x ./internal/bench/
//	go tool pprof -top -tagignore side=client /tmp/prof/cpu-c-run1.pprof
//
// The harness (client, driver) runs under the pprof label side=client, so
// -tagignore side=client leaves the server's goroutines: connections,
// commands, engine, commit pipeline and Pebble. Garbage collection is
// shared by both sides and stays in. Sizes come from CAIRN_BENCH_RECORDS,
// CAIRN_BENCH_OPS and CAIRN_BENCH_THREADS (default 100000, 100000, 16);
// CAIRN_BENCH_SYNC is the server's sync interval ("always" by default);
// CAIRN_BENCH_MONITORING the driver's serverMonitoringMode.
func BenchmarkServerProfile(b *testing.B) {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	num := func(name string, def int) int {
		n, err := strconv.Atoi(env(name, strconv.Itoa(def)))
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return n
	}
	ws, err := ParseWorkloads([]string{env("CAIRN_BENCH_WORKLOADS", "a,c")})
	if err != nil {
		b.Fatal(err)
	}
	var every time.Duration
	if s := env("CAIRN_BENCH_SYNC", "always"); s != "always" {
		if every, err = time.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := env("CAIRN_BENCH_PROFILE_DIR", "")
	for range b.N {
		srv, closeServer, err := startCairn(b.TempDir(), "127.0.0.1:0", every)
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = srv.Serve() }()
		cfg := Config{
			URI:        "mongodb://" + srv.Addr().String() + "/",
			Workloads:  ws,
			Records:    int64(num("CAIRN_BENCH_RECORDS", 100_000)),
			Ops:        int64(num("CAIRN_BENCH_OPS", 100_000)),
			Threads:    num("CAIRN_BENCH_THREADS", 16),
			Monitoring: env("CAIRN_BENCH_MONITORING", ""),
			Progress:   os.Stderr,
		}
		if dir != "" {
			cfg.onRun = func(target, workload string, run int) func() {
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%s-run%d.pprof", workload, run+1)))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				return func() {
					pprof.StopCPUProfile()
					_ = f.Close()
				}
			}
		}
		var rep *Report
		pprof.Do(context.Background(), pprof.Labels("side", "client"), func(ctx context.Context) {
			rep, err = Run(ctx, cfg)
		})
		closeServer()
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range rep.Workloads {
			for _, t := range w.Targets {
				if t.Median != nil {
					b.ReportMetric(t.Median.Throughput, "ops/s-"+w.Workload)
				}
			}
		}
	}
}
