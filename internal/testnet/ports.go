// Package testnet holds what tests that start processes on loopback share:
// finding free ports for processes that take consecutive ones (cairn
// cluster up).
package testnet

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// FreeRange returns the first of n consecutive loopback ports that are
// free now (another process may take one before the caller does; tests
// that start several processes accept that small race).
func FreeRange(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(30000)
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no range of free loopback ports")
	return 0
}
