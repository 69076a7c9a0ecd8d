package testnet

import "time"

// ConnectWait is the server selection timeout of a test's client that is
// expected to connect. CI runs every package at once on two cores, and
// there a fresh server's (or a fresh client's) first hello has taken more
// than 10 s to be answered: stops 31, 33 and 41 failed on 5 s and 10 s
// timeouts, with nothing wrong but the load. A client that a test expects
// to fail to connect keeps its own short timeout.
const ConnectWait = 30 * time.Second
