// Package index turns documents into index keys: it parses and validates
// index specifications as MongoDB 7.0's createIndexes does (ParseSpec,
// Spec) and generates the keys a document has in an index by MongoDB's
// rules (Spec.Keys). The engine stores the keys; the planner reads them
// back with Spec.DecodeKey.
//
// # Key layout
//
// A key is the concatenation of one keystring encoding per key pattern
// field, in key pattern order: keystring.Append for ascending fields,
// keystring.AppendDesc for descending ones, keystring.Append of the int64
// Hash for a hashed field. A wildcard index ("$**", "a.$**") has two parts,
// the dotted path as a string (ascending) and the value (in the direction
// of the pattern's number). The engine stores
//
//	i/<indexID>/<key>/<keystring(_id)>  →  typeBits        for a non-unique index
//	i/<indexID>/<key>  →  keystring(_id) typeBits          for a unique one
//
// A text index (text.go) is stored with the key pattern {<prefix>, _fts:
// "text", _ftsx: 1, <suffix>}: one key per term of the document's indexed
// strings, the term (a string) then its score (a double) between the
// values of the other fields; internal/fts tokenizes and scores.
//
// Keys returns keys without the _id suffix. KeysAndTypeBits also returns
// the key's type bits (keystring.TypeBitsWriter: number types, symbols,
// and which null parts are missing fields) for a document with one key made
// without expanding an array, the only kind of key a covered plan reads;
// DecodeKeyTyped restores the exact values from key and bits. Indexes
// created before type bits existed have entries without them
// (catalog.Index.TypeBits unset) and keep being written that way.
//
// # Invariants
//
//   - Key order equals index order: bytes.Compare of two keys of a spec
//     orders them as MongoDB orders index entries of that key pattern
//     (keystring's Order and Self-delimiting invariants, applied per part).
//   - Dedup: Keys returns each key once, sorted: {a: [1, 1]} has one key in
//     {a: 1}, so a unique index does not conflict with itself.
//   - One array per key: a compound key expands at most one array per
//     document level; two fields reaching different arrays is
//     CannotIndexParallelArrays (171), two fields reaching the same array
//     ({"a.b": 1, "a.c": 1} over a: [{b, c}]) expand it together.
//   - Spec decides: Keys applies the whole specification (partial filter,
//     sparse), so the engine indexes exactly what Keys returns, on insert
//     as on delete.
//   - Hash compatibility: Hash equals MongoDB's BSONElementHasher::hash64
//     (seed 0) on every value; MongoDB's published vectors are tests.
//
// # Key generation rules (MongoDB's BtreeKeyGenerator)
//
// A missing field is null (a sparse index skips a document only when all
// its fields are missing). A path runs through subdocuments and through
// arrays of subdocuments; an array at the end of a path gives one key per
// element, an empty array gives undefined, and inner arrays are indexed
// as whole values ({a: [[1, 2]]} has key [1, 2] in {a: 1}). A numeric path
// component that names an element of an array ("a.0") selects that element
// and does not make the index multikey; if an element of the array is a
// document with that field too, the component is ambiguous (16746). Hashed
// indexes admit no array anywhere on a field's path (16766). Wildcard
// indexes key every leaf under their root as (path, value), with arrays
// traversed without growing the path.
//
// # For the planner
//
// Keys are a superset of what equality queries see: a path that runs
// through an array and finds nothing in a non-document element or an empty
// array yields a null key ({"a.b": 1} over {a: [1]} or {a: []}), yet in
// MongoDB 7.0 {"a.b": null} does not match those documents; an empty array
// yields undefined, which no filter can name. So, as in MongoDB, a null
// equality on a multikey field must fetch and filter the documents, never
// be answered from the keys alone (TestKeysMatchQueries checks everything
// else against the query engine). Multikey says which path components held
// arrays, for bounds and covering decisions.
//
// # Deviations from MongoDB
//
// 2dsphere indexes (geo.go) key a geometry by the int64 ids of the S2 cells
// covering it, as MongoDB's index version 3 does; versions 1 and 2 and
// unique 2dsphere indexes are refused with CannotCreateIndex. Their keys
// are Cairn's coverings (golang/geo's RegionCoverer with MongoDB's levels
// and cell count), which need not be the exact cells S2-C++ picks.
//
// 2d indexes (geo2d.go) key a legacy pair by its geohash on the index's
// grid as an int64 (MongoDB stores a BinData geohash), so explain prints
// their bounds as int64 ranges; unique 2d indexes are refused.
//
// Columnstore indexes, compound wildcard indexes (MongoDB 7.0 has them)
// and collations other than simple are refused with CannotCreateIndex (67) as not supported yet. MongoDB 4.2+ has no index key
// size limit and no index name length limit; neither has Cairn. A wildcard
// index with a negative direction ({"$**": -1}) stores its paths ascending
// and its values descending, which is what the direction means to a query
// on one path; MongoDB's key string, as far as its source shows
// (Ordering::make over the one-field key pattern), puts the sign on the
// path part instead. Keys are an on-disk format of Cairn's own, so only
// the order of entries within a path is observable, and it agrees.
// Checking MongoDB's restrictions on partialFilterExpression, Cairn reads
// the filter document's structure rather than MongoDB's optimized match
// expression tree; error messages name the refused operator but are not
// MongoDB's debug strings.
package index
