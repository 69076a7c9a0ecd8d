// Package query is MongoDB's query language over raw BSON: filters
// (Parse, Filter), find projections (ParseProjection, Projection) and sorts
// (ParseSort, Sort, Sorter), and why a document fails a filter
// (Filter.Explain, the errInfo.details of document validation; explain.go,
// explain_schema.go). It follows MongoDB 7.0's documented behaviour;
// every rule it implements has a case in testdata/, which also runs over
// the wire (package querytest).
//
// It is the one reader of filter BSON: code that reasons about a filter
// rather than matching it (the planner, partial indexes) reads
// Filter.Tree (tree.go), a read-only tree of the parsed filter —
// conjunctions of path clauses with their operators, $and/$or/$nor
// branches, $elemMatch sub-trees, $expr and $jsonSchema as opaque clauses —
// so that it cannot disagree with the matcher about what a field means.
// Find projections are built on internal/projection's tree, which $project
// shares; projection.go holds only what find does differently (positional
// "a.$", $slice, $elemMatch).
//
// # Invariants
//
//   - Raw bytes in, raw bytes out. Documents are bsoncore.Documents read
//     lazily, field by field; the read path never decodes a document into a
//     tree. Match allocates nothing for the plain operators, and Projection
//     appends to the caller's buffer.
//   - One reading of a filter: Filter.Tree classifies each field exactly as
//     the parser does (isOperatorDoc, the $elemMatch forms, $all's items);
//     TestTreeFollowsParse checks it.
//   - Parse once, match many. All validation (operator names, argument
//     types, regex syntax and options) happens in Parse/ParseProjection/
//     ParseSort and reports MongoDB's error codes through mongoerr; the
//     parsed values are immutable and safe for concurrent use. At match
//     time only $expr can fail (e.g. division by zero), reported by
//     Filter.Exec.
//   - $expr reads the command's variables (ParseWith's Options): its let
//     and one $$NOW, fixed at parse time, so that every document a
//     command matches sees the same instant.
//   - Malformed input never panics. Parse validates its documents;
//     matching a malformed document stops reading at the first unreadable
//     element (FuzzFilter checks this).
//   - Path semantics are MongoDB's element iterator (path.go, "walker"):
//     implicit traversal of arrays at every level of a dotted path, numeric
//     components as array indexes and as field names, arrays of arrays
//     entered only through an index, a leaf array seen both element-wise
//     and whole, and a missing field seen once as "missing", which
//     comparisons treat like undefined (equal to null for $eq/$lte/$gte).
//   - Type bracketing: a comparison only matches values of its argument's
//     canonical type class (bsonx.CanonicalType), except null/undefined,
//     MinKey and MaxKey as MongoDB specifies.
//   - Negations ($ne, $nin, $not, $nor, $exists: false) apply to the whole
//     path, never per element: {a: {$ne: 1}} rejects [1, 2].
//   - Array positions: Filter.MatchDetails reports the position, in the
//     first array traversed implicitly, of the element that satisfied the
//     filter (MongoDB's elemMatchKey), for "a.$" projections and updates.
//     Negations never report one.
//
// # Deviations from MongoDB
//
// Regular expressions run on Go's RE2 engine (regex.go lists what is
// translated and what is refused). A compound sort picks each path's array
// value independently. $text, $where and $meta sorts and projections return
// errors. See the package's tests for the rest.
//
// Geospatial operators (op_geo.go) test values with package geo (S2):
// $near and $nearSphere match by their distance bounds only; ordering by
// distance and requiring a geospatial index are the planner's.
// value independently. Geospatial operators and $where return errors.
// $text is parsed and checked here (text.go) but decided by a text plan
// (internal/planner), which binds it (Filter.BindText); matched without
// one it is IndexNotFound. {$meta: "textScore"} in sorts and projections
// reads the score a text plan appends (TextScoreField); other $meta kinds
// return errors. See the package's tests for the rest.
//
// The bit tests ($bitsAllSet & co.) test a decimal128 only when it is an
// integer in int64's range (NaN, fractions and larger values never
// match), as MongoDB's matcher does since it gained a decimal branch; older
// servers, 7.0 among them as far as its source shows, read a decimal with
// toLong (rounding half to even, NaN and out-of-range values as int64's
// minimum).
//
// Filter.Explain follows doc_validation_error.cpp's shapes and reasons for
// every operator Cairn supports, and json_schema_parser.cpp's order of a
// schema's rules; where MongoDB's exact output could not be confirmed it
// is coarser but truthful: a $jsonSchema "not" that matched says only
// {operatorName: "not", reason: "child expression matched"} (MongoDB may
// add the keyword's annotation); the size bound of an explanation is package validation's (8 MiB, past
// which it drops specifiedAs and the quoted values), not MongoDB's exact
// limit and depth rule; undefined values are left out of consideredValues.
package query
