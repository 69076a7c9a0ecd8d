package index

import "github.com/cairndb/cairn/internal/mongoerr"

// MongoDB codes that index specifications and key generation raise and
// that the shared mongoerr table does not have yet. The named ones
// (CannotIndexParallelArrays, QueryFeatureNotAllowed) carry a codeName in
// MongoDB's replies and belong in that table; the others are "location"
// codes, sent without a codeName.
const (
	// CodeCannotIndexParallelArrays (171, codeName
	// "CannotIndexParallelArrays"): a compound key would need two arrays
	// expanded at once ("cannot index parallel arrays [b] [a]").
	CodeCannotIndexParallelArrays mongoerr.Code = 171
	// CodeQueryFeatureNotAllowed (224, codeName "QueryFeatureNotAllowed"):
	// $expr, $text or $jsonSchema in a partialFilterExpression.
	CodeQueryFeatureNotAllowed mongoerr.Code = 224
	// CodeHashedArray (16766): an array on the path of a hashed index field
	// ("Error: hashed indexes do not currently support array values").
	CodeHashedArray mongoerr.Code = 16766
	// CodeAmbiguousFieldName (16746): a numeric path component that names
	// both an array position and a field of an element of that array.
	CodeAmbiguousFieldName mongoerr.Code = 16746
	// CodeTooManyHashedFields (31303): more than one hashed field in a key
	// pattern.
	CodeTooManyHashedFields mongoerr.Code = 31303
	// CodeHashedUnique (16764): "Currently hashed indexes cannot guarantee
	// uniqueness. Use a regular index."
	CodeHashedUnique mongoerr.Code = 16764
	// CodeTooManyCompoundKeys (13103): more than 32 fields in a key pattern.
	CodeTooManyCompoundKeys mongoerr.Code = 13103
	// CodeWildcardProjectionComputed (51271): a wildcardProjection value
	// that is neither a number, a boolean nor a sub-projection.
	CodeWildcardProjectionComputed mongoerr.Code = 51271
)

// maxCompoundFields is MongoDB's Ordering::kMaxCompoundIndexKeys.
const maxCompoundFields = 32

// maxKeyPatternSize is the largest key pattern document MongoDB accepts, in
// bytes.
const maxKeyPatternSize = 2048

// maxPartialFilterDepth is the default of MongoDB's
// internalPartialFilterExpressionMaxDepth server parameter.
const maxPartialFilterDepth = 4

func cannotCreate(format string, args ...any) error {
	return mongoerr.New(mongoerr.CannotCreateIndex, format, args...)
}
