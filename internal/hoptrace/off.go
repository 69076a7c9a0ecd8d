//go:build !cairntrace

package hoptrace

import "io"

// Enabled is false in normal builds: blocks guarded by it compile away.
const Enabled = false

// Now is 0 without the cairntrace tag.
func Now() int64 { return 0 }

// Since records nothing without the cairntrace tag.
func Since(Hop, int64) int64 { return 0 }

// Count records nothing without the cairntrace tag.
func Count(Hop, int) {}

// Write writes nothing without the cairntrace tag.
func Write(io.Writer) {}

// Reset does nothing without the cairntrace tag.
func Reset() {}
