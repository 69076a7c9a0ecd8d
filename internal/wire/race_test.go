//go:build race

package wire

// raceEnabled: the race detector makes sync.Pool drop items on purpose, so
// allocation counts of pooled paths are not meaningful under it.
const raceEnabled = true
