package agg

import "github.com/cairndb/cairn/internal/mongoerr"

// MongoDB's "location" codes for pipeline errors (sent without a codeName,
// so they live here rather than in the shared mongoerr table).
const (
	codeStageOneField        mongoerr.Code = 40323 // a stage document with != 1 field
	codeUnknownStage         mongoerr.Code = 40324 // "Unrecognized pipeline stage name: '$foo'"
	codeStageNotLast         mongoerr.Code = 40601 // $out/$merge not the final stage
	codeStageNotFirst        mongoerr.Code = 40602 // $documents not the first stage
	codeStageNotInFacet      mongoerr.Code = 40600 // a stage not allowed inside $facet
	codeChangeStreamNoRepl   mongoerr.Code = 40573 // $changeStream on a standalone
	codeMatchNotObject       mongoerr.Code = 15959
	codeProjectNotObject     mongoerr.Code = 15969
	codeProjectEmpty         mongoerr.Code = 51272
	codeAddFieldsEmpty       mongoerr.Code = 40177
	codeStageNotObject       mongoerr.Code = 40272 // "$addFields specification stage must be an object"
	codeProjEmptySub         mongoerr.Code = 51270
	codeProjPathCollision    mongoerr.Code = 31249 // "Path collision at a.b remaining portion b"
	codeProjPathCollisionEnd mongoerr.Code = 31250 // "Path collision at a"
	codeProjExprInExclusion  mongoerr.Code = 31252
	codeProjIncInExclusion   mongoerr.Code = 31253
	codeProjExcInInclusion   mongoerr.Code = 31254
	codeProjLiteralExclusion mongoerr.Code = 31310
	codeFieldPathEmpty       mongoerr.Code = 15998
	codeFieldPathDollar      mongoerr.Code = 16410
	codeFieldPathNull        mongoerr.Code = 16419
	codeUnsetType            mongoerr.Code = 31002
	codeUnsetEmpty           mongoerr.Code = 31119
	codeUnsetElemType        mongoerr.Code = 31120
	codeSortNotObject        mongoerr.Code = 15973
	codeSortEmpty            mongoerr.Code = 15976
	codeSkipArg              mongoerr.Code = 5107200
	codeLimitArg             mongoerr.Code = 5107201
	codeLimitPositive        mongoerr.Code = 15958
	codeCountNotString       mongoerr.Code = 40156
	codeCountEmpty           mongoerr.Code = 40157
	codeCountDollar          mongoerr.Code = 40158
	codeCountNull            mongoerr.Code = 40159
	codeCountDot             mongoerr.Code = 40160
	codeGroupNotObject       mongoerr.Code = 15947
	codeGroupIDTwice         mongoerr.Code = 15948
	codeGroupUnknownAcc      mongoerr.Code = 15952
	codeGroupNoID            mongoerr.Code = 15955
	codeGroupAccNotObject    mongoerr.Code = 40234
	codeGroupFieldDot        mongoerr.Code = 40235
	codeGroupFieldOperator   mongoerr.Code = 40236
	codeGroupAccUnary        mongoerr.Code = 40237
	codeGroupAccOneField     mongoerr.Code = 40238
	codeCountAccArg                        = mongoerr.TypeMismatch // "$count takes no arguments, i.e. $count:{}"
	codeStageNotInLookup     mongoerr.Code = 51047                 // "$out is not allowed within a $lookup's sub-pipeline"
	codeStageNotInUnionWith  mongoerr.Code = 31441                 // "$out is not allowed within a $unionWith's sub-pipeline"
	codeMergeObjectsType     mongoerr.Code = 40400
	codeUnwindSpecType       mongoerr.Code = 15981
	codeUnwindPathType       mongoerr.Code = 28808
	codeUnwindPreserveType   mongoerr.Code = 28809
	codeUnwindIndexType      mongoerr.Code = 28810
	codeUnwindUnknownOption  mongoerr.Code = 28811
	codeUnwindNoPath         mongoerr.Code = 28812
	codeUnwindPathDollar     mongoerr.Code = 28818
	codeUnwindIndexDollar    mongoerr.Code = 28822
	codeReplaceRootNotObject mongoerr.Code = 40228 // newRoot evaluated to a non-document
	codeSpecNotObject        mongoerr.Code = 40229 // "expected an object as specification for $replaceRoot stage"
	codeIDLMissingField      mongoerr.Code = 40414 // "BSON field '…' is missing but a required field"
	codeSortByCountObject    mongoerr.Code = 40147
	codeSortByCountPath      mongoerr.Code = 40148
	codeSortByCountType      mongoerr.Code = 40149
	codeDocumentsNotArray    mongoerr.Code = 5858203
	codeFacetSpec            mongoerr.Code = 40169
	codeFacetNotArray        mongoerr.Code = 40170
	codeFacetStageNotObject  mongoerr.Code = 40171
	codeSampleNotObject      mongoerr.Code = 28745
	codeSampleSizeType       mongoerr.Code = 28746
	codeSampleSizeNegative   mongoerr.Code = 28747
	codeSampleUnknownOption  mongoerr.Code = 28748
	codeSampleNoSize         mongoerr.Code = 28749
	codeBucketBoundaryCount  mongoerr.Code = 40192
	codeBucketBoundaryTypes  mongoerr.Code = 40193
	codeBucketNotSorted      mongoerr.Code = 40194
	codeBucketDefaultConst   mongoerr.Code = 40195
	codeBucketOutputType     mongoerr.Code = 40196
	codeBucketUnknownOption  mongoerr.Code = 40197
	codeBucketMissing        mongoerr.Code = 40198
	codeBucketDefaultRange   mongoerr.Code = 40199
	codeBucketBoundariesType mongoerr.Code = 40200
	codeBucketNotObject      mongoerr.Code = 40201
	codeBucketGroupByType    mongoerr.Code = 40202
	codeBucketNoMatch        mongoerr.Code = 40066 // $bucket is a $switch: "could not find a matching branch"
	codeLookupUnknownField   mongoerr.Code = 40415
	codeBadLetName           mongoerr.Code = 16867
)

func errorf(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
