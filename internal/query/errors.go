package query

import "github.com/cairndb/cairn/internal/mongoerr"

// Local names for the codes the query language raises; the numbers and
// codeNames live in mongoerr's one table.
const (
	codeRegexOptionsBoth1        = mongoerr.RegexOptionsBoth1   // $regex flags, then $options
	codeRegexOptionsBoth2        = mongoerr.RegexOptionsBoth2   // $options, then $regex flags
	codeRegexBadFlag             = mongoerr.RegexBadFlag        // "invalid flag in regex options: z"
	codeRegexInvalid             = mongoerr.RegexInvalid        // "Regular expression is invalid: …"
	codeProjPositionalElem1      = mongoerr.ProjPositionalElem1 // $elemMatch after a positional projection
	codeProjPositionalElem2      = mongoerr.ProjPositionalElem2 // positional projection after $elemMatch
	codeProjSliceSkipType        = mongoerr.ProjSliceSkipType
	codeProjSliceLimitType       = mongoerr.ProjSliceLimitType
	codeProjSliceLimitSign       = mongoerr.ProjSliceLimitSign
	codeProjPositionalEnd        = mongoerr.ProjPositionalEnd    // path ending in ".$."
	codeProjPositionalObject     = mongoerr.ProjPositionalObject // positional projection with a sub-object
	codeProjSliceArrayForm       = mongoerr.ProjSliceArrayForm
	codeProjSliceType            = mongoerr.ProjSliceType
	codeProjElemMatchType        = mongoerr.ProjElemMatchType
	codeProjElemMatchNested      = mongoerr.ProjElemMatchNested
	codeProjPositionalTwice      = mongoerr.ProjPositionalTwice     // more than one positional projection
	codeProjPositionalRepeat     = mongoerr.ProjPositionalRepeat    // "a.$.b.$"
	codeProjPositionalValue      = mongoerr.ProjPositionalValue     // positional projection with a literal
	codeProjPositionalExclusion  = mongoerr.ProjPositionalExclusion // positional projection excluded
	codeProjUnknownExpr          = mongoerr.ProjUnknownExpr         // "Unknown expression $foo"
	codeProjPositionalNoMatch    = mongoerr.ProjPositionalNoMatch   // no element position recorded by the filter
	codeProjPositionalMismatch   = mongoerr.ProjPositionalMismatch
	codeProjPositionalNeedsQuery = mongoerr.ProjPositionalNeedsQuery
	codeFieldPathEmpty           = mongoerr.FieldPathEmpty      // empty component in a projection path
	codeFieldPathDollar          = mongoerr.FieldPathDollar     // projection path component starting with '$'
	codeSortBadValue             = mongoerr.SortBadValue        // "Illegal key in $sort specification"
	codeSortBadDirection         = mongoerr.SortBadDirection    // "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
	codeSortMemoryLimit          = mongoerr.QueryExceededMemory // QueryExceededMemoryLimitNoDiskUseAllowed
	codeSortMeta                 = mongoerr.SortMeta            // "$meta is the only expression supported by $sort right now"
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}

func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}
