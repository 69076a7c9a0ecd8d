package update

import (
	"fmt"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Local names for the codes the update language raises; the numbers and
// codeNames live in mongoerr's one table.
const (
	codeOverflow               = mongoerr.Overflow               // nesting deeper than 100 levels
	codeInvalidBSON            = mongoerr.InvalidBSON            // a stored document that cannot be read
	codePathNotViable          = mongoerr.PathNotViable          // "Cannot create field 'b' in element {a: 1}"
	codeCannotBackfillArray    = mongoerr.CannotBackfillArray    // padding an array by more than 1,500,000 nulls
	codeNotSingleValueField    = mongoerr.NotSingleValueField    // upsert: a path matched twice; _id an array
	codeInvalidDBRef           = mongoerr.InvalidDBRef           // top-level $ref/$id/$db out of order
	codeEmptyFieldName         = mongoerr.EmptyFieldName         // "a..b" or "" as an update path
	codeNotExactValueField     = mongoerr.NotExactValueField     // replacement upsert with a dotted _id filter
	codeQueryFeatureNotAllowed = mongoerr.QueryFeatureNotAllowed // $expr in an upsert's filter
	codeDocTooLargeAfterUpdate = mongoerr.DocTooLargeAfterUpdate // "Resulting document after update is larger than 16777216"
	codeConstantsNotPipeline   = mongoerr.ConstantsNotPipeline   // c given with a non-pipeline update
	codeDocTooLargeForUpsert   = mongoerr.DocTooLargeForUpsert   // "Document to upsert is larger than 16777216"
)

// MaxDocumentSize is MongoDB's BSONObjMaxUserSize: no update may produce a
// document larger than this.
const MaxDocumentSize = 16 * 1024 * 1024

// maxStorageDepth is BSONDepth::getMaxDepthForUserStorage: a top-level
// field is at depth 1; no element may be deeper than this.
const maxStorageDepth = 100

// maxPadding is MongoDB's kMaxPaddingAllowed: how many nulls a path into an
// array may add before the element it creates.
const maxPadding = 1500000

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}

func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}

func failedToParse(format string, args ...any) error {
	return mongoerr.New(mongoerr.FailedToParse, format, args...)
}

func typeMismatch(format string, args ...any) error {
	return mongoerr.New(mongoerr.TypeMismatch, format, args...)
}

// wrapContext prefixes an error's message as MongoDB's Status::withContext
// does ("Error parsing array filter :: caused by :: …"), keeping its code.
func wrapContext(err error, context string) error {
	if e, ok := mongoerr.As(err); ok {
		return &mongoerr.Error{Code: e.Code, Msg: context + " :: caused by :: " + e.Msg, Extra: e.Extra}
	}
	return fmt.Errorf("%s: %w", context, err)
}
