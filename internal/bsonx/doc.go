// Package bsonx holds what the official bson packages lack and a MongoDB
// server needs: MongoDB's total order over BSON values (Compare, Equal,
// CompareDocuments, CanonicalType), computed on raw bytes without allocating.
// ValueSize and NextElement expose how it reads raw BSON, so that package
// keystring reads values exactly alike. Field and its helpers (fields.go)
// are the one way aggregation stages and projections take a document apart
// and build it again.
//
// # Order
//
// Values order first by canonical type rank, as MongoDB's
// canonicalizeBSONType:
//
//	MinKey(-1) < Undefined(0) < Null(5) < numbers(10) < String,Symbol(15)
//	< Object(20) < Array(25) < BinData(30) < ObjectId(35) < Bool(40)
//	< Date(45) < Timestamp(47) < Regex(50) < DBPointer(55)
//	< JavaScript(60) < JavaScriptWithScope(65) < MaxKey(127)
//
// and then, within a rank, as MongoDB's compareElementValues with the simple
// collation:
//
//   - numbers (int32, int64, double, decimal128) by exact mathematical value,
//     whatever their types; NaN equals NaN and sorts below every other number
//     (below -Inf); -0 equals 0;
//   - strings and symbols bytewise (memcmp, then length; embedded NULs count);
//     JavaScript code likewise;
//   - documents element by element: canonical type rank, then field name
//     (bytewise), then value; a document that is a prefix of another is
//     smaller. Field order matters: {a:1,b:2} != {b:2,a:1};
//   - arrays element by element by value (their "0","1",… keys are not
//     compared: MongoDB compares them, but in well-formed arrays they are
//     always equal position by position);
//   - binData by length, then subtype, then bytes;
//   - ObjectId bytewise; false < true; Date as signed int64 milliseconds;
//     Timestamp as unsigned (seconds, then increment);
//   - regex by pattern, then options; DBPointer by namespace length, then
//     namespace bytes, then ObjectId; code-with-scope by code, then scope
//     (document rule).
//
// This is the order of indexes and of sorting scalars; $sort's treatment of
// arrays (sorting by the smallest or largest element) belongs to the query
// layer, which calls Compare on the elements.
//
// # Numbers
//
// Comparison across numeric types is exact: int64 2^53+1 > double 2^53, and
// decimal128 0.1 < double 0.1 (the double is
// 0.1000000000000000055511151231257827…). MongoDB 7.0 is exact too: it
// compares int64 with double without rounding either, and a decimal with a
// double by converting the decimal to a double rounding toward -Inf and
// breaking ties with the inexact flag, which decides every pair as exact
// arithmetic does. Here a decimal is compared digit by digit with the
// double's exact decimal expansion when their decimal exponents are too
// close to decide. Decimal128 values with a non-canonical coefficient (above
// 10^34-1) are zero, as in IEEE 754-2008 and MongoDB.
//
// # Malformed values
//
// Compare never panics. It expects well-formed BSON; a value it cannot read
// (unknown type, too few bytes, inconsistent length prefixes, a boolean byte
// other than 0 or 1) compares as null, and inside a document or array the
// first element it cannot read ends that document or array. Containers
// (documents, arrays, code-with-scope) nested deeper than MaxDepth compare as
// null, which bounds recursion; MongoDB refuses such documents anyway.
// Package keystring follows exactly the same rules, so that its encoding
// agrees with Compare even on malformed input.
//
// # Deviations from MongoDB
//
// All concern input MongoDB would refuse or never store. MongoDB raises an
// error on unreadable BSON (including a boolean byte other than 0 or 1),
// where Compare ranks it as null; it refuses documents nested deeper than
// MaxDepth, whose deep parts Compare ranks as null; and it compares the keys
// of arrays, which Compare skips (they differ only in malformed arrays).
package bsonx
