// Package memberclient is how one member of a Cairn cluster runs commands
// on another over the wire protocol: the router on shards and config
// servers, shards on the config servers and on each other (migrations),
// config servers on shards. Server packages may not import the Go driver
// (lint), and a member needs no more than this: one OP_MSG command (with
// an optional document sequence), one reply, on pooled connections;
// finding a replica set's primary; and, with the cluster's keyFile,
// MongoDB's internal authentication.
//
// Invariants:
//
//   - "Authenticated before use": with a key (Options.Key), a connection
//     runs no command until it has authenticated as __system@local with
//     SCRAM-SHA-256 and the key as the password (MongoDB's keyFile internal
//     authentication); a connection whose authentication fails is closed,
//     never pooled (TestAuthenticatesBeforeUse).
//   - "Replies as sent": Run returns a member's reply unchanged, ok: 0
//     included; Err turns an ok: 0 reply into a *ReplyError that keeps the
//     whole reply (a router passes it on as it came) and unwraps to a
//     *mongoerr.Error with the member's code (mongoerr.CodeOf works on it).
//   - "Broken connections are not reused": a connection that failed to
//     send or read is closed; only one that completed its round trip goes
//     back to the pool.
//   - "Cancelled round trips end": a command's round trip ends when its
//     context is cancelled or reaches its deadline, whatever the member
//     does, with an error that wraps the context's (errors.Is
//     context.Canceled / DeadlineExceeded); the connection is closed
//     (TestCancelledRoundTripEnds).
//   - "Network errors say so": a failure to connect, send or read is a
//     *NetError, which Retryable reports, as it does the codes that mean
//     "not the primary (now)".
//
// The client speaks OP_MSG without compression or checksums, one command
// at a time per connection; members answer on their client port.
package memberclient
