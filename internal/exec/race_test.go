//go:build race

package exec

// raceEnabled: the race detector makes sync.Pool drop items on purpose,
// so allocation counts vary.
const raceEnabled = true
