//go:build unix

package cairn

import (
	"syscall"
	"time"
)

// processCPU is this process's user+system CPU time: on a machine shared
// with other work, CPU time per run is steadier than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
