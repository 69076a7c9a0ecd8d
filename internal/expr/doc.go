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
//     bracketing here, unlike query predicates.
package expr
