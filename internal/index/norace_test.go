//go:build !race

package index_test

// raceEnabled is true under the race detector, whose sync.Pool drops items
// at random: allocation counts are meaningless there.
const raceEnabled = false
