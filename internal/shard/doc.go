// Package shard owns the routing rules of a sharded collection, as pure
// functions a router, a shard and the config servers all use: the shard
// key pattern and a document's shard key, the chunk map (ranges of shard
// key values, each owned by one shard, with MongoDB's chunk versions),
// targeting a filter to the shards that may hold its documents, the
// initial split of a hashed key, and the balancer's choice of migrations.
//
// Shard key values are compared as their KeyString encoding (one value per
// key field, in pattern order), the order index scans read them in, so a
// chunk's range [min, max) is a byte range and a range scan on the shard
// key index reads exactly one chunk's documents.
//
// # Invariants
//
// "Chunks tile the key space": a Map's chunks, in order, start at the
// all-MinKey key, each ends where the next begins, and the last ends at
// the all-MaxKey key; every shard key falls in exactly one chunk.
// Map.Check verifies it; every mutation (Split, Move, Merge) keeps it, and
// TestMapMutationsKeepTiling drives random mutations and checks after each.
//
// "Versions rise": the collection version (the greatest chunk version)
// rises with every Split, Move and Merge, so a router or shard holding an
// older version can tell its map is stale (StaleConfig). Checked by the
// same test.
//
// "Targeting is sound": every document a filter matches lives on a shard
// Target returns (it may return more). TestTargetSound checks random
// documents and filters against the chunk owning each matching document.
package shard
