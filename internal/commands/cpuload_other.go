//go:build !linux

package commands

// cpuTimes is unavailable off Linux: cpuLoad then reports an idle machine
// (the change streams' pace is not stretched).
func cpuTimes() (busy, total uint64, ok bool) { return 0, 0, false }
