//go:build !race

package exec

// raceEnabled is true under the race detector (race_test.go).
const raceEnabled = false
