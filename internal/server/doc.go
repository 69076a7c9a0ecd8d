// Package server accepts MongoDB client connections and runs their commands:
// the listener, one goroutine per connection, the legacy OP_QUERY handshake,
// compression, unacknowledged writes, connection limits and panic recovery.
//
// It owns sockets and sessions, not semantics: framing is package wire's,
// command behaviour package commands'.
//
// A client that closes its socket while a command runs cancels the command
// (ClientDisconnect) through its session (watch.go: the socket is watched
// only once a command has run a few milliseconds, so short commands pay
// two atomic stores, one atomic load and an uncontended lock for it; the
// loop that looks for such commands parks while there are none). A
// command in a short wait a timer ends (a change stream's pace, at most
// 10 ms: commands.Session.ShortWait) is not watched during it, and counts
// as begun again after it (TestShortWaitNotWatched).
//
// Invariant "The server outlives its clients": nothing a client sends can stop
// the process. Malformed messages get an error reply or a closed connection;
// a panic while serving one connection is recovered and logged, and that
// connection is closed; every other connection carries on.
package server
