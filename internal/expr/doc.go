// Package expr evaluates MongoDB aggregation expressions ($add, "$a.b",
// $cond, …) over raw BSON documents.
//
// An expression is parsed once (Parse) into an Expr tree and evaluated many
// times against a Context that names the document being processed ($$ROOT)
// and the current value ($$CURRENT, the same document unless a stage rebinds
// it). Values are bsoncore.Value; the zero Value (Type 0) is MongoDB's
// "missing", which is distinct from null: {$eq: ["$nosuchfield", null]} is
// false, and missing sorts below every other value.
//
// # Variables
//
// $$ROOT, $$CURRENT and $$REMOVE come from the document; user variables
// ($let, $map's "as", $reduce's $$value and $$this, a command's let) are
// declared in a Scope at parse time, so an undefined one is a parse error
// (17276), and bound in the Context at run time. $$NOW is one date per
// Context: what Context.SetNow fixed (the agg layer binds it once per
// command), or else the clock read at first use. $$CLUSTER_TIME is a
// timestamp set with Context.SetClusterTime; without one, reading it fails
// with 51144, as on a standalone MongoDB server.
//
// # Extending
//
// Operators live in a table filled by one file per family (op_compare.go,
// op_arith.go, op_string.go, op_type.go, …; every op_*.go): each file registers
// its operators' parsers with register in an init function. A parser
// receives the operator's raw argument and a Scope, and returns an Expr.
// Adding an operator is adding a parser to a family file (or a new family
// file); nothing else changes.
//
// # Invariants
//
//   - Parse validates everything that MongoDB validates at parse time
//     (argument counts, unknown operators, field path syntax) and returns a
//     *mongoerr.Error with MongoDB's code; Eval returns MongoDB's codes for
//     what is only known at run time (a string given to $add, division by
//     zero).
//   - Eval never modifies the document it reads and never panics, even on
//     malformed bytes; values it builds are freshly allocated and owned by
//     the caller.
//   - Comparisons use MongoDB's total order over BSON values (bsonx.Compare),
//     with missing below MinKey's rank, as aggregation does; there is no type
//     bracketing here, unlike query predicates. Strings compare by the
//     Context's collation (SetCollator; nil is simple) in every operator
//     that compares values: $eq … $cmp, $in, $indexOfArray, the set
//     operators (members equal under it are one member), $min, $max,
//     $minN, $maxN and $sortArray. Operators that look at characters
//     ($strcasecmp, $indexOfBytes, $regexMatch, …) ignore it, as in MongoDB.
//   - An Expr is immutable after Parse and may be evaluated concurrently,
//     one Context per goroutine. The only state shared between
//     evaluations is a regex operator's pattern, compiled once when regex
//     and options are constants (sync.Once), and the process-wide cache of
//     resolved time zones (op_date_zone.go, a sync.Map that holds only
//     valid names, so it is bounded by the zone database).
//   - Rules the stages of package agg share with the operators are
//     exported rather than copied: Integral64 (an integral argument),
//     ValidN (the n of $firstN … $bottomN), AddDateUnits ($dateAdd in UTC,
//     for $densify steps and window range bounds), Summation (the totals
//     of $sum and $avg, accumulators and expressions alike).
//
// # Deviations from MongoDB
//
//   - Regular expressions ($regexMatch, $regexFind, $regexFindAll) use Go's
//     RE2 syntax rather than PCRE: backreferences and lookaround do not
//     compile (51111), and "$" without the m flag matches only at the very
//     end, not before a final newline.
//   - Decimal $exp, $ln, $log, $log10, $pow and $sqrt are computed with
//     about 90 significant digits and rounded to decimal128's 34; the last
//     digit can differ from MongoDB's Intel library in rare halfway cases.
//   - A double joining a decimal $sum/$avg total converts with 34
//     significant digits (MongoDB's Decimal128(double, kRoundTo34Digits));
//     an integral double converts with exponent 0, a fractional one keeps
//     34 digits. The value is MongoDB's; the trailing zeros of a
//     fractional one's representation are not checked against Intel's
//     binary64_to_bid128.
package expr
