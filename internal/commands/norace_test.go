//go:build !race

package commands

// raceEnabled is true under the race detector (race_test.go).
const raceEnabled = false
