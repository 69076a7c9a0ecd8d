//go:build invariants

package invariants

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
)

// Enabled is true in builds with the invariants tag.
const Enabled = true

// CloseChecker records that the value holding it was closed, to catch a
// second Close (invariant "Closed once", package storage) and to remember
// where the value was opened, for reporting a leak.
type CloseChecker struct {
	closed atomic.Bool
	opened []byte // the stack that opened the value
}

// Opened records the caller's stack as the value's origin.
func (c *CloseChecker) Opened() {
	buf := make([]byte, 4096)
	c.opened = buf[:runtime.Stack(buf, false)]
}

// Close marks the value closed; a second call fails the invariant "Closed
// once" for what (the type being closed).
func (c *CloseChecker) Close(what string) {
	if c.closed.Swap(true) {
		Fail("Closed once", "%s closed twice; it was opened at\n%s", what, c.opened)
	}
}

// Origin is the stack that opened the value, for a leak report.
func (c *CloseChecker) Origin() string { return string(c.opened) }

// GoroutineID is the running goroutine's id, read from its stack header
// ("goroutine 42 [running]:"): slow, so for checks only.
func GoroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
