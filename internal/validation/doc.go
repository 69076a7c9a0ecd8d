// Package validation owns document validation: a collection's validator
// (a query filter, $jsonSchema included), its validationLevel and
// validationAction, read from the collection's options and checked against
// a document that is about to be written, with MongoDB 7.0's
// DocumentValidationFailure (121) and errInfo when it fails.
//
// The engine calls it from inside the commit pipeline, for every document
// a write stores (see engine's "Valid on commit"); create and collMod call
// CheckOptions before the options reach the catalog.
//
// Invariants:
//   - Options are the one source. A Rules value is compiled from the
//     collection's options as the catalog holds them; nothing else carries
//     validation settings, so listCollections shows exactly what is
//     enforced.
//   - Parse once, check many: Rules are immutable and safe for concurrent
//     use; Check allocates only when a document fails (to explain why).
//   - A validator that cannot be evaluated for a document (an $expr that
//     divides by zero) fails the document, as in MongoDB; under
//     validationAction "warn" the write goes on.
//
// The errInfo explanation (failingDocumentId, details: operatorName,
// specifiedAs, reason, consideredValue, clausesNotSatisfied,
// schemaRulesNotSatisfied, …) is built by query.Filter.Explain, which owns
// the filter language; doc.go there lists where it is coarser than
// MongoDB's.
package validation
