//go:build race

package commands

// raceEnabled: the race detector makes sync.Pool drop items on purpose
// (Pebble pools its iterators), so allocation counts vary.
const raceEnabled = true
