package expr

import "github.com/cairndb/cairn/internal/mongoerr"

// Local names for the codes of expression errors; the numbers and
// codeNames live in mongoerr's one table.
const (
	codeInvalidPipelineOperator = mongoerr.InvalidPipelineOperator // unknown expression operator
	codeOverflow                = mongoerr.Overflow                // Overflow: date arithmetic out of range
	codeExpressionOneField      = mongoerr.ExpressionOneField      // {$op: …, other: …}
	codeWrongArgCount           = mongoerr.WrongArgCount           // "Expression $x takes exactly N arguments"
	codeFieldPathDollar         = mongoerr.FieldPathDollar         // field name starting with '$'
	codeFieldPathDot            = mongoerr.FieldPathDot            // field name containing '.'
	codeFieldPathEmpty          = mongoerr.FieldPathEmpty          // empty field name in a path
	codeFieldPathDollarOnly     = mongoerr.FieldPathDollarOnly     // "$" alone
	codeUndefinedVariable       = mongoerr.UndefinedVariable
	codeBadVariableName         = mongoerr.BadVariableName
	codeAddType                 = mongoerr.AddType
	codeMultiplyType            = mongoerr.MultiplyType
	codeSubtractType            = mongoerr.SubtractType
	codeDivideByZero            = mongoerr.BadValue     // MongoDB 5.0+: "can't $divide by zero"
	codeDivideType              = mongoerr.TypeMismatch // MongoDB 5.0+: "$divide only supports numeric types"
	codeModByZero               = mongoerr.ModByZero
	codeModType                 = mongoerr.ModType
	codeAddTwoDates             = mongoerr.AddTwoDates
	codeSubtractDateFromNumber  = mongoerr.SubtractDateFromNumber
	codeNumericArgType          = mongoerr.NumericArgType // $abs, $ceil, … given a non-number
	codeAbsLongMin              = mongoerr.AbsLongMin
	codeRoundPlaceType          = mongoerr.RoundPlaceType
	codeRoundPlaceIntegral      = mongoerr.RoundPlaceIntegral
	codeRoundPlaceRange         = mongoerr.RoundPlaceRange
	codeCondMissingIf           = mongoerr.CondMissingIf
	codeCondMissingThen         = mongoerr.CondMissingThen
	codeCondMissingElse         = mongoerr.CondMissingElse
	codeCondUnknownArg          = mongoerr.CondUnknownArg
	codeIfNullArgs              = mongoerr.IfNullArgs
	codeInNotArray              = mongoerr.InNotArray
	codeSizeNotArray            = mongoerr.SizeNotArray
	codeClusterTimeUnavailable  = mongoerr.ClusterTimeUnavailable // $$CLUSTER_TIME on a standalone server
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
