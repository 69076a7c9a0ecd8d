// Package clusterkeys owns the keys that sign cluster times and the
// signatures themselves: MongoDB's admin.system.keys (documents {_id:
// keyId, purpose: "HMAC", key: 20 random bytes, expiresAt: Timestamp})
// and the $clusterTime signature {hash, keyId}, an HMAC-SHA-1 (the
// standard library's crypto/hmac) of the cluster time under a key.
//
// Keys are made by the primary only (Rotate, from a background loop) and
// reach the other members as ordinary replicated writes; every member
// reads them through a Backing the command layer supplies, so this
// package does no I/O of its own.
//
// Invariants:
//
//   - "A key per time": after Rotate(now), a key whose expiresAt is above
//     now exists, and so does the next one (made a rotation interval
//     ahead, as MongoDB keeps two), so a time signed just before a
//     rotation still validates after it (TestRotate).
//   - "Proofs cover a range": as MongoDB's TimeProofService, the proof is
//     of the time with its low 16 increment bits set, so one signature
//     serves up to 65,536 consecutive times of one second (TestProof).
//   - "Validate before advancing": a client without the advanceClusterTime
//     privilege advances the clock only with a time signed by a known key
//     that is valid for it (KeyNotFound 211) whose proof matches
//     (TimeProofMismatch 204); package commands enforces it with --auth,
//     as mongod does.
//
// Deviations from MongoDB: the HMAC input is the 8-byte big-endian form of
// the time (MongoDB's own byte order is an internal detail no client
// checks: clients only echo signatures back).
package clusterkeys
