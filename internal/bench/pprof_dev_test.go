//go:build cairnpprof

package bench

// A test build for profiling only (go test -tags cairnpprof): when
// CAIRN_PPROF names an address, the test binary playing `cairn serve`
// (childEnv) serves net/http/pprof there, so the soak's server can be
// profiled under its load (BENCHMARKS.md, "The soak's memory, counted").
// The parent test process does not listen.

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("CAIRN_PPROF")
	if addr == "" || os.Getenv(childEnv) != "1" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pprof: %v\n", err)
		return
	}
	http.Handle("/debug/cairn/", ProfileHandler())
	go func() { _ = http.Serve(ln, nil) }()
}

// profilingBuild: this test build serves ProfileHandler in its children.
const profilingBuild = true
