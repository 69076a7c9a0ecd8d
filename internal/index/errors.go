package index

import "github.com/cairndb/cairn/internal/mongoerr"

// The codes index specifications and key generation raise, under the names
// callers of this package test for; the numbers and codeNames live in
// mongoerr's one table.
const (
	// CodeCannotIndexParallelArrays (171, codeName
	// "CannotIndexParallelArrays"): a compound key would need two arrays
	// expanded at once ("cannot index parallel arrays [b] [a]").
	CodeCannotIndexParallelArrays = mongoerr.CannotIndexParallelArrays
	// CodeQueryFeatureNotAllowed (224, codeName "QueryFeatureNotAllowed"):
	// $expr, $text or $jsonSchema in a partialFilterExpression.
	CodeQueryFeatureNotAllowed = mongoerr.QueryFeatureNotAllowed
	// CodeHashedArray (16766): an array on the path of a hashed index field
	// ("Error: hashed indexes do not currently support array values").
	CodeHashedArray = mongoerr.HashedArray
	// CodeAmbiguousFieldName (16746): a numeric path component that names
	// both an array position and a field of an element of that array.
	CodeAmbiguousFieldName = mongoerr.AmbiguousFieldName
	// CodeTooManyHashedFields (31303): more than one hashed field in a key
	// pattern.
	CodeTooManyHashedFields = mongoerr.TooManyHashedFields
	// CodeHashedUnique (16764): "Currently hashed indexes cannot guarantee
	// uniqueness. Use a regular index."
	CodeHashedUnique = mongoerr.HashedUnique
	// CodeTooManyCompoundKeys (13103): more than 32 fields in a key pattern.
	CodeTooManyCompoundKeys = mongoerr.TooManyCompoundKeys
	// CodeWildcardProjectionComputed (51271): a wildcardProjection value
	// that is neither a number, a boolean nor a sub-projection.
	CodeWildcardProjectionComputed = mongoerr.WildcardProjectionComputed
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
