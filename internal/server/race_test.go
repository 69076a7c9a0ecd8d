//go:build race

package server_test

// raceSlowdown scales the few liveness bounds of this package's tests
// that time CPU-bound work the race detector slows several times (one
// RE2 match over 10 MiB: ~1 s plain, 14–20 s under -race at load 10).
const raceSlowdown = 4
