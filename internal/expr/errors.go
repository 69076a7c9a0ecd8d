package expr

import "github.com/cairndb/cairn/internal/mongoerr"

// MongoDB's codes for expression errors. They are "location" codes (MongoDB
// sends them without a codeName), so they live here rather than in the
// shared mongoerr table.
const (
	codeInvalidPipelineOperator mongoerr.Code = 168   // unknown expression operator
	codeOverflow                mongoerr.Code = 15    // Overflow: date arithmetic out of range
	codeExpressionOneField      mongoerr.Code = 15983 // {$op: …, other: …}
	codeWrongArgCount           mongoerr.Code = 16020 // "Expression $x takes exactly N arguments"
	codeFieldPathDollar         mongoerr.Code = 16410 // field name starting with '$'
	codeFieldPathDot            mongoerr.Code = 16412 // field name containing '.'
	codeFieldPathEmpty          mongoerr.Code = 15998 // empty field name in a path
	codeFieldPathDollarOnly     mongoerr.Code = 16872 // "$" alone
	codeUndefinedVariable       mongoerr.Code = 17276
	codeBadVariableName         mongoerr.Code = 16870
	codeAddType                 mongoerr.Code = 16554
	codeMultiplyType            mongoerr.Code = 16555
	codeSubtractType            mongoerr.Code = 16556
	codeDivideByZero            mongoerr.Code = 16608
	codeDivideType              mongoerr.Code = 16609
	codeModByZero               mongoerr.Code = 16610
	codeModType                 mongoerr.Code = 16611
	codeAddTwoDates             mongoerr.Code = 16612
	codeSubtractDateFromNumber  mongoerr.Code = 16613
	codeNumericArgType          mongoerr.Code = 28765 // $abs, $ceil, … given a non-number
	codeAbsLongMin              mongoerr.Code = 28680
	codeRoundPlaceType          mongoerr.Code = 51081
	codeRoundPlaceIntegral      mongoerr.Code = 51082
	codeRoundPlaceRange         mongoerr.Code = 51083
	codeCondMissingIf           mongoerr.Code = 17080
	codeCondMissingThen         mongoerr.Code = 17081
	codeCondMissingElse         mongoerr.Code = 17082
	codeCondUnknownArg          mongoerr.Code = 17083
	codeIfNullArgs              mongoerr.Code = 1257300
	codeInNotArray              mongoerr.Code = 40081
	codeSizeNotArray            mongoerr.Code = 17124
	codeClusterTimeUnavailable  mongoerr.Code = 51144 // $$CLUSTER_TIME on a standalone server
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
