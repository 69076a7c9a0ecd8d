//go:build !race

package server_test

// raceSlowdown: see race_test.go.
const raceSlowdown = 1
