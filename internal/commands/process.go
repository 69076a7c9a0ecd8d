package commands

import (
	"sync"
	"time"
)

// Process is what commands ask of the process that runs the server: the
// shutdown and logRotate commands. cmd/cairn provides it; an Env without
// one (embedded use, in-process tests) answers those commands with
// IllegalOperation, since there is no process of its own to stop or log
// file to rotate.
type Process interface {
	// Shutdown begins a shutdown and returns at once: with force, the
	// operations in progress are interrupted; without, they get up to
	// timeout to finish.
	Shutdown(force bool, timeout time.Duration)
	// RotateLog rotates the log file as --logRotate says (rename or
	// reopen). It reports whether there was a file to rotate.
	RotateLog() (rotated bool, err error)
}

// fsyncLock counts fsync's lock: true holds (cmd_fsync.go).
type fsyncLock struct {
	mu    sync.Mutex
	count int
}
