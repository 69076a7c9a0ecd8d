//go:build cairnpprof

package main

// A build for profiling only (go build -tags cairnpprof): when CAIRN_PPROF
// names an address, the process serves net/http/pprof there, so a running
// server can be profiled under a real client load (BENCHMARKS.md's issue 15
// profiles). Release builds do not contain it.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("CAIRN_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
