// Package idgen makes the _id values the server generates: ObjectIds by
// default, and sequential ids for collections created with
// idGenerator: "sequential".
//
// A sequential id is 28 lower-case hex characters, as MySQL's server-side
// document ids: 4 of unique prefix (documentIdUniquePrefix, one per server
// or shard), 8 of the server's start timestamp in seconds, 16 of serial.
//
// Invariant "Strictly increasing": every id a Sequential returns is greater,
// as a string and so in MongoDB's order, than every id it or an earlier run
// of the same server returned, provided the prefix is not lowered. Across
// restarts this rests on the start timestamp: a new run takes
// max(now, last persisted + 1) and persists it before issuing any id; when
// the serial overflows the timestamp advances by one, persisted first.
//
// Invariant "Disjoint serials": serials are offset + k·increment
// (autoIncrementOffset, autoIncrementIncrement), so members writing the same
// collection with distinct offsets never collide.
package idgen
