//go:build !unix

package cairn

import "time"

// processCPU is not measured off Unix; the benchmarks report wall time only.
func processCPU() time.Duration { return 0 }
