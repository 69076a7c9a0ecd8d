package update

import (
	"fmt"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// MongoDB codes the update language raises that the shared mongoerr table
// does not have (yet). They are defined here because no other package
// raises them; names follow MongoDB's error_codes.yml. Numbers without a
// name are MongoDB "location" codes, sent without a codeName.
const (
	codeOverflow               mongoerr.Code = 15    // nesting deeper than 100 levels
	codeInvalidBSON            mongoerr.Code = 22    // a stored document that cannot be read
	codePathNotViable          mongoerr.Code = 28    // "Cannot create field 'b' in element {a: 1}"
	codeCannotBackfillArray    mongoerr.Code = 34    // padding an array by more than 1,500,000 nulls
	codeNotSingleValueField    mongoerr.Code = 54    // upsert: a path matched twice; _id an array
	codeInvalidDBRef           mongoerr.Code = 55    // top-level $ref/$id/$db out of order
	codeEmptyFieldName         mongoerr.Code = 56    // "a..b" or "" as an update path
	codeNotExactValueField     mongoerr.Code = 111   // replacement upsert with a dotted _id filter
	codeQueryFeatureNotAllowed mongoerr.Code = 224   // $expr in an upsert's filter
	codeDocTooLargeAfterUpdate mongoerr.Code = 17419 // "Resulting document after update is larger than 16777216"
	codeConstantsNotPipeline   mongoerr.Code = 51198 // c given with a non-pipeline update
	codeDocTooLargeForUpsert   mongoerr.Code = 17420 // "Document to upsert is larger than 16777216"
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
