//go:build cairntrace

package main

// A build for tracing only (go build -tags cairntrace): package hoptrace
// times each hop of the write path; SIGUSR2 writes every hop's histogram
// to standard error (a member's log under `cairn cluster up`) and empties
// them, so one signal before a bench run and one after give that run's
// breakdown (BENCHMARKS.md, issue 18, session 10). Release builds do not
// contain it.

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cairndb/cairn/internal/hoptrace"
)

func init() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR2)
	go func() {
		for range sigs {
			fmt.Fprintf(os.Stderr, "hoptrace: pid %d at %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
			hoptrace.Write(os.Stderr)
			hoptrace.Reset()
		}
	}()
}
