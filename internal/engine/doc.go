// Package engine is a node's database engine: it turns document operations
// (insert, get, scan, replace, delete) and catalog operations (create, drop,
// rename) into commit-pipeline requests over the storage keyspaces, keeping
// documents, indexes and catalog records consistent in one atomic commit.
//
// The command layer (wire protocol) and the embedded Go API both call it;
// query, update and planner packages build on its document access.
//
// Invariant "Clustered by _id": a document lives at DocKey(collID,
// keystring(_id)), so _id uniqueness is one point read inside the pipeline
// and a scan in key order is a scan in _id order.
//
// Invariant "_id first": stored documents begin with their _id field, as
// MongoDB stores them; a missing _id is generated (an ObjectId) on insert.
package engine
