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
// free now, below Linux's ephemeral range (32768 and up), so the outgoing
// connections of the processes being started cannot take one in between;
// another listener may still, and tests that start several processes
// accept that small race.
func FreeRange(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		base := 10000 + rand.IntN(22000)
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
