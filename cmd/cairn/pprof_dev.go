//go:build cairnpprof

package main

// A build for profiling only (go build -tags cairnpprof): when CAIRN_PPROF
// names an address, the process serves net/http/pprof there, so a running
// server can be profiled under a real client load (BENCHMARKS.md's issue 15
// profiles). Release builds do not contain it. CAIRN_PPROF=auto listens on
// a free loopback port and prints it to stderr ("pprof: http://..."), for
// the members `cairn cluster up` starts with one environment (issue 18's
// profiles of all three members). It also serves /debug/cairn/, the
// profiles `cairn bench --profile-dir` brackets each measured phase with
// (bench.ProfileHandler).

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/cairndb/cairn/internal/bench"
)

func init() {
	addr := os.Getenv("CAIRN_PPROF")
	if addr == "" {
		return
	}
	if addr == "auto" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pprof: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "pprof: http://%s/debug/pprof/ (pid %d)\n", ln.Addr(), os.Getpid())
	http.Handle("/debug/cairn/", bench.ProfileHandler()) // cairn bench --profile-dir
	go func() { _ = http.Serve(ln, nil) }()
}
