package agg

import "github.com/cairndb/cairn/internal/mongoerr"

// Local names for the codes of pipeline errors; the numbers and codeNames
// live in mongoerr's one table.
const (
	codeStageOneField        = mongoerr.StageOneField    // a stage document with != 1 field
	codeUnknownStage         = mongoerr.UnknownStage     // "Unrecognized pipeline stage name: '$foo'"
	codeStageNotLast         = mongoerr.StageNotLast     // $out/$merge not the final stage
	codeStageNotFirst        = mongoerr.StageNotFirst    // $documents not the first stage
	codeStageNotInFacet      = mongoerr.StageNotInFacet  // a stage not allowed inside $facet
	codeSplitEventSpec       = mongoerr.SplitEventSpec   // $changeStreamSplitLargeEvent's argument is not {}
	codeNotChangeStream      = mongoerr.IllegalOperation // a change-stream-only stage elsewhere
	codeMatchNotObject       = mongoerr.MatchNotObject
	codeProjectNotObject     = mongoerr.ProjectNotObject
	codeProjectEmpty         = mongoerr.ProjectEmpty
	codeAddFieldsEmpty       = mongoerr.AddFieldsEmpty
	codeStageNotObject       = mongoerr.AddFieldsSpecNotObject // "$addFields specification stage must be an object"
	codeFieldPathEmpty       = mongoerr.FieldPathEmpty
	codeFieldPathDollar      = mongoerr.FieldPathDollar
	codeFieldPathNull        = mongoerr.FieldPathNull
	codeUnsetType            = mongoerr.UnsetType
	codeUnsetEmpty           = mongoerr.UnsetEmpty
	codeUnsetElemType        = mongoerr.UnsetElemType
	codeSortNotObject        = mongoerr.SortNotObject
	codeSortEmpty            = mongoerr.SortEmpty
	codeSkipArg              = mongoerr.SkipArg
	codeLimitArg             = mongoerr.LimitArg
	codeLimitPositive        = mongoerr.LimitPositive
	codeCountNotString       = mongoerr.CountNotString
	codeCountEmpty           = mongoerr.CountEmpty
	codeCountDollar          = mongoerr.CountDollar
	codeCountNull            = mongoerr.CountNull
	codeCountDot             = mongoerr.CountDot
	codeGroupNotObject       = mongoerr.GroupNotObject
	codeGroupIDTwice         = mongoerr.GroupIDTwice
	codeGroupUnknownAcc      = mongoerr.GroupUnknownAcc
	codeGroupNoID            = mongoerr.GroupNoID
	codeGroupAccNotObject    = mongoerr.GroupAccNotObject
	codeGroupFieldDot        = mongoerr.GroupFieldDot
	codeGroupFieldOperator   = mongoerr.GroupFieldOperator
	codeGroupAccUnary        = mongoerr.GroupAccUnary
	codeGroupAccOneField     = mongoerr.GroupAccOneField
	codeGraphMemory          = mongoerr.GraphLookupMemory
	codeGraphMaxDepthType    = mongoerr.GraphLookupMaxDepthType
	codeGraphMaxDepthNeg     = mongoerr.GraphLookupMaxDepthNeg
	codeGraphMaxDepthLong    = mongoerr.GraphLookupMaxDepthLong
	codeGraphStringArg       = mongoerr.GraphLookupStringArg
	codeGraphUnknownArg      = mongoerr.GraphLookupUnknownArg
	codeGraphMissingArg      = mongoerr.GraphLookupMissingArg
	codeGraphRestrictType    = mongoerr.GraphLookupRestrictType
	codeGraphNoID            = mongoerr.GraphLookupNoID
	codeCountAccArg          = mongoerr.TypeMismatch        // "$count takes no arguments, i.e. $count:{}"
	codeStageNotInLookup     = mongoerr.StageNotInLookup    // "$out is not allowed within a $lookup's sub-pipeline"
	codeStageNotInUnionWith  = mongoerr.StageNotInUnionWith // "$out is not allowed within a $unionWith's sub-pipeline"
	codeMergeObjectsType     = mongoerr.MergeObjectsType
	codeUnwindSpecType       = mongoerr.UnwindSpecType
	codeUnwindPathType       = mongoerr.UnwindPathType
	codeUnwindPreserveType   = mongoerr.UnwindPreserveType
	codeUnwindIndexType      = mongoerr.UnwindIndexType
	codeUnwindUnknownOption  = mongoerr.UnwindUnknownOption
	codeUnwindNoPath         = mongoerr.UnwindNoPath
	codeUnwindPathDollar     = mongoerr.UnwindPathDollar
	codeUnwindIndexDollar    = mongoerr.UnwindIndexDollar
	codeReplaceRootNotObject = mongoerr.ReplaceRootNotObject     // newRoot evaluated to a non-document
	codeSpecNotObject        = mongoerr.ReplaceRootSpecNotObject // "expected an object as specification for $replaceRoot stage"
	codeIDLMissingField      = mongoerr.IDLMissingField          // "BSON field '…' is missing but a required field"
	codeSortByCountObject    = mongoerr.SortByCountObject
	codeSortByCountPath      = mongoerr.SortByCountPath
	codeSortByCountType      = mongoerr.SortByCountType
	codeDocumentsNotArray    = mongoerr.DocumentsNotArray
	codeFacetSpec            = mongoerr.FacetSpec
	codeFacetNotArray        = mongoerr.FacetNotArray
	codeFacetStageNotObject  = mongoerr.FacetStageNotObject
	codeSampleNotObject      = mongoerr.SampleNotObject
	codeSampleSizeType       = mongoerr.SampleSizeType
	codeSampleSizeNegative   = mongoerr.SampleSizeNegative
	codeSampleUnknownOption  = mongoerr.SampleUnknownOption
	codeSampleNoSize         = mongoerr.SampleNoSize
	codeBucketBoundaryCount  = mongoerr.BucketBoundaryCount
	codeBucketBoundaryTypes  = mongoerr.BucketBoundaryTypes
	codeBucketNotSorted      = mongoerr.BucketNotSorted
	codeBucketDefaultConst   = mongoerr.BucketDefaultConst
	codeBucketOutputType     = mongoerr.BucketOutputType
	codeBucketUnknownOption  = mongoerr.BucketUnknownOption
	codeBucketMissing        = mongoerr.BucketMissing
	codeBucketDefaultRange   = mongoerr.BucketDefaultRange
	codeBucketBoundariesType = mongoerr.BucketBoundariesType
	codeBucketNotObject      = mongoerr.BucketNotObject
	codeBucketGroupByType    = mongoerr.BucketGroupByType
	codeBucketNoMatch        = mongoerr.BucketNoMatch // $bucket is a $switch: "could not find a matching branch"
	codeLookupUnknownField   = mongoerr.UnknownField
	codeBadLetName           = mongoerr.VariableNameFirstChar
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
