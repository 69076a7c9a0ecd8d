//go:build !invariants

package invariants

// Enabled is false in normal builds: checks guarded by it compile away.
const Enabled = false

// CloseChecker is empty in normal builds (zero bytes, no-op methods).
type CloseChecker struct{}

// Opened does nothing without the invariants tag.
func (*CloseChecker) Opened() {}

// Close does nothing without the invariants tag.
func (*CloseChecker) Close(string) {}

// Origin is empty without the invariants tag.
func (*CloseChecker) Origin() string { return "" }

// GoroutineID is 0 without the invariants tag.
func GoroutineID() uint64 { return 0 }
