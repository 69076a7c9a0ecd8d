// Package catalog owns the metadata of databases, collections and indexes:
// their names, numeric ids, options, and where their data lives.
//
// Records are BSON under the storage package's meta keyspace, one per
// collection (its indexes inside it), written in the same commit-pipeline
// request as the data change they describe, so a crash never leaves a
// collection without its record or a record without its data range.
//
// Invariant "Ids are never reused": collection and index ids come from one
// persisted sequence; a dropped id's key range is deleted, never recycled.
//
// Invariant "One writer": the working State is read and changed only on the
// commit pipeline's goroutine (inside request functions); readers use
// Current, the State as of the last committed group, which is immutable.
// Builds with the invariants tag check it on every change (a change through
// a Txn used outside its request panics).
// A reader that pairs the catalog with a storage snapshot (a query plan)
// uses [Catalog.ReadBegin] instead (invariant "Catalog matches snapshot"):
// a group's writes are visible before its State is published.
// A database exists while it holds at least one collection or view, as in
// MongoDB (where its views live in system.views).
//
// Views (views.go) are records of their own, one per view in MongoDB's
// system.views shape, and share the collections' namespace (invariant
// "Views and collections share one namespace"). CheckViews keeps their
// graph acyclic and at most MaxViewDepth deep; Resolve turns a view into its
// source collection and the pipeline to run over it.
package catalog
