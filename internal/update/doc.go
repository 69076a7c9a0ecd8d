// Package update is MongoDB's update language over raw BSON: operator
// updates ($set, $inc, $push, … with positional "$", "$[]" and
// "$[ident]" paths), replacement updates, and the documents upserts
// insert. It follows MongoDB 7.0's documented behaviour (8.0 where 7.0 is
// silent); every rule it implements has a case in testdata/, which also
// runs over the wire (package updatetest).
//
// # Use
//
//	u, err := update.Parse(stmt.U, update.Options{ArrayFilters: af, Multi: multi})
//	matched, pos := filter.MatchDetails(doc)               // package query
//	newDoc, modified, err := u.Apply(doc, update.ApplyContext{ArrayPos: pos, Now: now})
//	inserted, err := u.Upsert(filterDoc, update.ApplyContext{Now: now, NewID: gen})
//
// # Invariants
//
//   - Parse once, apply many. Parse validates everything MongoDB validates
//     before touching a document (operators, arguments, paths, conflicts,
//     array filters) and returns MongoDB's codes through mongoerr; an
//     Update is immutable, owns a copy of its bytes, and is safe for
//     concurrent use. Apply reports the errors that depend on the document
//     (type mismatches, non-viable paths, _id changes, sizes).
//   - Apply never modifies its input and never panics, even on malformed
//     BSON (FuzzUpdate checks this). It returns modified == false exactly
//     when the new document is byte-identical to the old one, and then
//     returns the old document itself: a no-op writes nothing and does not
//     count in nModified.
//   - Raw bytes stay raw. A document is decoded only as deep as the
//     update's paths reach (node.go: a small mutable tree whose untouched
//     values are slices of the original bytes), then serialized once.
//   - Flat sets splice. An update that is only $set of at most eight
//     top-level fields (not _id, not $-prefixed), applied to a document
//     holding them all, builds no tree: one walk finds the fields and the
//     new document is the old bytes with the new values spliced in, byte
//     for byte what the tree would write (flat.go; any other case goes to
//     the tree). TestFlatSetMatchesTree and TestFlatSetRandom (seeded,
//     the seed logged) compare both ways' documents, flags and errors;
//     invariants builds apply every flat update by the tree as well and
//     fail on a difference (TestFlatSetInvariantCheck).
//   - Flat parse agrees. Such a $set — alone in its update, its names
//     without dots and no two alike — is parsed without the tree as well
//     (flat.go's parseFlat): the same fields in the same order as the
//     tree's parse lists them, and the tree it would build, made on first
//     use when a document needs it; every other update parses by the
//     tree. TestFlatParseAgrees (seeded, the seed logged) compares both
//     parses of random $sets; invariants builds parse each flat one by the
//     tree as well.
//   - Order is MongoDB's. Paths apply in the update tree's order (field
//     names bytewise, numeric names numerically: comparePathParts), so new
//     fields are appended in that order whatever the operator; existing
//     fields keep their place; $rename's destination, when new, goes last.
//   - _id is immutable: no operator may change an existing _id (a no-op
//     $set of the same bytes is allowed); a replacement keeps it.
//   - Every result is storable: at most 16 MiB (17419, 17420 for upserts),
//     at most 100 levels deep (15), no $-prefixed top-level names outside
//     inserts, update pipelines (MongoDB 5.0+ stores what $setField,
//     $literal and $replaceWith make) and DBRefs (52, 55), a valid _id (53).
//
// # Design
//
// An operator update parses into a tree like MongoDB's UpdateNode tree
// (tree.go): internal nodes per path component, one leaf per operator and
// path. Conflicts between paths surface while the tree is built; "$",
// "$[]" and "$[ident]" resolve per document, and leaves that land on the
// same element merge or conflict then. A cursor (tree.go) carries each
// node to its place in the document: the deepest existing element and the
// components still to create. Operators live one family per file
// (op_set.go, op_inc.go, op_push.go, …) and register their parsers in a
// table (parse.go).
//
// Array filters and $pull conditions are query filters (package query)
// matched against a one-field document {ident: element}; decimal
// arithmetic is delegated to package expr's $add and $multiply.
//
// # Deviations and choices
//
//   - Pipeline updates (an array) run through package agg (pipeline.go):
//     the pipeline's output replaces the document as a replacement update
//     does, so its _id goes first, as replace.go explains.
//   - "modified" is byte identity of the result. MongoDB counts a $push
//     with $sort (or an $unset of a null array element) as a modification
//     even when no byte changes; Cairn does not.
//   - An upsert's seed fields are ordered by path (MongoDB's canonical
//     query sorts them; newer servers iterate a hash map).
//   - Zero timestamps in replacement documents and $currentDate's
//     timestamps come from ApplyContext (Timestamp, or Now with increment
//     1), not from a cluster clock.
//   - Comparisons use the simple collation; update-level collations are
//     not supported yet.
package update
