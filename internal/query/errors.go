package query

import "github.com/cairndb/cairn/internal/mongoerr"

// MongoDB's "location" codes (sent without a codeName) that the query
// language raises. They are not in the shared mongoerr table because no
// other package raises them.
const (
	codeRegexOptionsBoth1        mongoerr.Code = 51074 // $regex flags, then $options
	codeRegexOptionsBoth2        mongoerr.Code = 51075 // $options, then $regex flags
	codeRegexBadFlag             mongoerr.Code = 51108 // "invalid flag in regex options: z"
	codeRegexInvalid             mongoerr.Code = 51091 // "Regular expression is invalid: …"
	codeProjPositionalElem1      mongoerr.Code = 31255 // $elemMatch after a positional projection
	codeProjPositionalElem2      mongoerr.Code = 31256 // positional projection after $elemMatch
	codeProjSliceSkipType        mongoerr.Code = 31257
	codeProjSliceLimitType       mongoerr.Code = 31258
	codeProjSliceLimitSign       mongoerr.Code = 31259
	codeProjPositionalEnd        mongoerr.Code = 31270 // path ending in ".$."
	codeProjPositionalObject     mongoerr.Code = 31271 // positional projection with a sub-object
	codeProjSliceArrayForm       mongoerr.Code = 31272
	codeProjSliceType            mongoerr.Code = 31273
	codeProjElemMatchType        mongoerr.Code = 31274
	codeProjElemMatchNested      mongoerr.Code = 31275
	codeProjPositionalTwice      mongoerr.Code = 31276 // more than one positional projection
	codeProjPositionalRepeat     mongoerr.Code = 31287 // "a.$.b.$"
	codeProjPositionalValue      mongoerr.Code = 31308 // positional projection with a literal
	codeProjUnknownExpr          mongoerr.Code = 31325 // "Unknown expression $foo"
	codeProjPositionalNoMatch    mongoerr.Code = 51246 // no element position recorded by the filter
	codeProjPositionalMismatch   mongoerr.Code = 51247
	codeProjPositionalNeedsQuery mongoerr.Code = 51050
	codeFieldPathEmpty           mongoerr.Code = 15998 // empty component in a projection path
	codeFieldPathDollar          mongoerr.Code = 16410 // projection path component starting with '$'
	codeSortBadValue             mongoerr.Code = 15974 // "Illegal key in $sort specification"
	codeSortBadDirection         mongoerr.Code = 15975 // "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
	codeSortMemoryLimit          mongoerr.Code = 292   // QueryExceededMemoryLimitNoDiskUseAllowed
	codeSortMeta                 mongoerr.Code = 17312 // "$meta is the only expression supported by $sort right now"
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}

func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}
