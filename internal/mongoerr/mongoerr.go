// Package mongoerr is the one table of MongoDB error codes Cairn replies with.
//
// Every code is a constant of codes.go, defined there once; other packages
// refer to it, by a local name at most, never by number (the root package's
// TestLintErrorCodes). A code's codeName is MongoDB's name from its
// error_codes.yml, or Location<code> for the codes MongoDB leaves unnamed,
// as its servers spell them, so every error reply carries one
// (TestCodeTable).
//
// Engine packages return *Error values (or wrap them) for anything a client
// caused; the command layer turns them into {ok: 0, code, codeName, errmsg}.
// Drivers decide retries and surface exceptions by code, so tests assert codes,
// never message text.
package mongoerr

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is a MongoDB server error code. Every code Cairn uses is a constant
// of codes.go, defined there once.
type Code int32

// names holds MongoDB's codeName of every named code in codes.go, as
// error_codes.yml spells it.
var names = map[Code]string{
	ShardKeyNotFound:                           "ShardKeyNotFound",
	ShardNotFound:                              "ShardNotFound",
	NamespaceNotSharded:                        "NamespaceNotSharded",
	LockBusy:                                   "LockBusy",
	CannotSplit:                                "CannotSplit",
	ZoneNotFound:                               "ZoneNotFound",
	RangeOverlapConflict:                       "RangeOverlapConflict",
	ConflictingOperationInProgress:             "ConflictingOperationInProgress",
	ShardingStateNotInitialized:                "ShardingStateNotInitialized",
	StaleDbVersion:                             "StaleDbVersion",
	MigrationConflict:                          "MigrationConflict",
	StaleConfig:                                "StaleConfig",
	ClusterTimeFailsRateLimiter:                "ClusterTimeFailsRateLimiter",
	TimeProofMismatch:                          "TimeProofMismatch",
	KeyNotFound:                                "KeyNotFound",
	HostUnreachable:                            "HostUnreachable",
	HostNotFound:                               "HostNotFound",
	LockTimeout:                                "LockTimeout",
	WriteConcernFailed:                         "WriteConcernFailed",
	NetworkTimeout:                             "NetworkTimeout",
	ShutdownInProgress:                         "ShutdownInProgress",
	UnsatisfiableWriteConcern:                  "UnsatisfiableWriteConcern",
	FailedToSatisfyReadPreference:              "FailedToSatisfyReadPreference",
	PrimarySteppedDown:                         "PrimarySteppedDown",
	ExceededTimeLimit:                          "ExceededTimeLimit",
	FailPointSetFailed:                         "FailPointSetFailed",
	SocketException:                            "SocketException",
	NotWritablePrimary:                         "NotWritablePrimary",
	InterruptedAtShutdown:                      "InterruptedAtShutdown",
	InterruptedDueToReplStateChange:            "InterruptedDueToReplStateChange",
	NotPrimaryNoSecondaryOk:                    "NotPrimaryNoSecondaryOk",
	NotPrimaryOrSecondary:                      "NotPrimaryOrSecondary",
	NoReplicationEnabled:                       "NoReplicationEnabled",
	InvalidResumeToken:                         "InvalidResumeToken",
	ChangeStreamFatalError:                     "ChangeStreamFatalError",
	ChangeStreamHistoryLost:                    "ChangeStreamHistoryLost",
	NoMatchingDocument:                         "NoMatchingDocument",
	ClientMetadataImmutable:                    "ClientMetadataCannotBeMutated",
	APIVersionError:                            "APIVersionError",
	APIStrictError:                             "APIStrictError",
	InternalError:                              "InternalError",
	BadValue:                                   "BadValue",
	NoSuchKey:                                  "NoSuchKey",
	GraphContainsCycle:                         "GraphContainsCycle",
	IncompatibleCollationVer:                   "IncompatibleCollationVersion",
	ViewDepthLimitExceeded:                     "ViewDepthLimitExceeded",
	CommandNotSupportedOnView:                  "CommandNotSupportedOnView",
	OptionNotSupportedOnView:                   "OptionNotSupportedOnView",
	InvalidViewDefinition:                      "InvalidViewDefinition",
	FailedToParse:                              "FailedToParse",
	Unauthorized:                               "Unauthorized",
	UserNotFound:                               "UserNotFound",
	ProtocolError:                              "ProtocolError",
	AuthenticationFailed:                       "AuthenticationFailed",
	RoleNotFound:                               "RoleNotFound",
	InvalidRoleModification:                    "InvalidRoleModification",
	MechanismUnavailable:                       "MechanismUnavailable",
	TypeMismatch:                               "TypeMismatch",
	Overflow:                                   "Overflow",
	InvalidLength:                              "InvalidLength",
	IllegalOperation:                           "IllegalOperation",
	NoSuchSession:                              "NoSuchSession",
	TransactionTooOld:                          "TransactionTooOld",
	WriteConflict:                              "WriteConflict",
	NoSuchTransaction:                          "NoSuchTransaction",
	TransactionCommitted:                       "TransactionCommitted",
	OperationNotSupportedInTransaction:         "OperationNotSupportedInTransaction",
	TransactionTooLarge:                        "TransactionTooLarge",
	PreparedTransactionInProgress:              "PreparedTransactionInProgress",
	TransactionCoordinatorSteppingDown:         "TransactionCoordinatorSteppingDown",
	TransactionCoordinatorReachedAbortDecision: "TransactionCoordinatorReachedAbortDecision",
	NotARetryableWriteCommand:                  "NotARetryableWriteCommand",
	InvalidBSON:                                "InvalidBSON",
	NamespaceNotFound:                          "NamespaceNotFound",
	IndexNotFound:                              "IndexNotFound",
	PathNotViable:                              "PathNotViable",
	CannotBackfillArray:                        "CannotBackfillArray",
	ConflictingUpdateOps:                       "ConflictingUpdateOperators",
	CursorNotFound:                             "CursorNotFound",
	NamespaceExists:                            "NamespaceExists",
	MaxTimeMSExpired:                           "MaxTimeMSExpired",
	ManualInterventionRequired:                 "ManualInterventionRequired",
	DollarPrefixedFieldName:                    "DollarPrefixedFieldName",
	InvalidIDField:                             "InvalidIdField",
	NotSingleValueField:                        "NotSingleValueField",
	InvalidDBRef:                               "InvalidDBRef",
	EmptyFieldName:                             "EmptyFieldName",
	CommandNotFound:                            "CommandNotFound",
	ImmutableField:                             "ImmutableField",
	CannotCreateIndex:                          "CannotCreateIndex",
	IndexAlreadyExists:                         "IndexAlreadyExists",
	InvalidOptions:                             "InvalidOptions",
	CappedPositionLost:                         "CappedPositionLost",
	QueryPlanKilled:                            "QueryPlanKilled",
	InvalidNamespace:                           "InvalidNamespace",
	IndexOptionsConflict:                       "IndexOptionsConflict",
	IndexKeySpecsConflict:                      "IndexKeySpecsConflict",
	OperationFailed:                            "OperationFailed",
	NotExactValueField:                         "NotExactValueField",
	CommandNotSupported:                        "CommandNotSupported",
	DocumentValidationFailure:                  "DocumentValidationFailure",
	CommandFailed:                              "CommandFailed",
	ExceededMemoryLimit:                        "ExceededMemoryLimit",
	InvalidPipelineOperator:                    "InvalidPipelineOperator",
	CannotIndexParallelArrays:                  "CannotIndexParallelArrays",
	InvalidIndexSpecOption:                     "InvalidIndexSpecificationOption",
	CannotConvertIndexToUnique:                 "CannotConvertIndexToUnique",
	QueryFeatureNotAllowed:                     "QueryFeatureNotAllowed",
	ConversionFailure:                          "ConversionFailure",
	IndexBuildAborted:                          "IndexBuildAborted",
	UnsatisfiableCommitQuorum:                  "UnsatisfiableCommitQuorum",
	ClientDisconnect:                           "ClientDisconnect",
	NoQueryExecutionPlans:                      "NoQueryExecutionPlans",
	QueryExceededMemory:                        "QueryExceededMemoryLimitNoDiskUseAllowed",
	UnsupportedOpQueryCommand:                  "UnsupportedOpQueryCommand",
	BSONObjectTooLarge:                         "BSONObjectTooLarge",
	DuplicateKey:                               "DuplicateKey",
	Interrupted:                                "Interrupted",
	MergeStageNoMatchingDoc:                    "MergeStageNoMatchingDocument",
	DatabaseDifferCase:                         "DatabaseDifferCase",
	OutOfDiskSpace:                             "OutOfDiskSpace",
	AlreadyInitialized:                         "AlreadyInitialized",
	NodeNotFound:                               "NodeNotFound",
	InvalidReplicaSetConfig:                    "InvalidReplicaSetConfig",
	NotYetInitialized:                          "NotYetInitialized",
	NotSecondary:                               "NotSecondary",
	UnknownReplWriteConcern:                    "UnknownReplWriteConcern",
	NewReplicaSetConfigurationIncompatible:     "NewReplicaSetConfigurationIncompatible",
	SnapshotTooOld:                             "SnapshotTooOld",
	SnapshotUnavailable:                        "SnapshotUnavailable",
}

// Name is c's codeName: MongoDB's name for a named code, and
// "Location<code>" for the others, as MongoDB's ErrorCodes::errorString
// spells a code error_codes.yml does not name. A reply therefore always
// carries a codeName, whatever its code.
func (c Code) Name() string {
	if n, ok := names[c]; ok {
		return n
	}
	return "Location" + strconv.Itoa(int(c))
}

// Error is an error a client caused, carrying MongoDB's code. Extra holds
// additional reply fields some errors carry (keyPattern and keyValue for
// DuplicateKey), in order, as alternating name/value pairs understood by the
// command layer.
type Error struct {
	Code  Code
	Msg   string
	Extra []Field
}

// Field is one extra reply field of an Error.
type Field struct {
	Name  string
	Value any
}

// Error formats the error as MongoDB's shells print it.
func (e *Error) Error() string {
	if n, ok := names[e.Code]; ok {
		return fmt.Sprintf("%s (%s %d)", e.Msg, n, int32(e.Code))
	}
	return fmt.Sprintf("%s (code %d)", e.Msg, int32(e.Code))
}

// New returns an *Error with the given code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// As finds the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf is the MongoDB code of err: its own for an *Error, InternalError for
// any other non-nil error, and 0 for nil.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	if e, ok := As(err); ok {
		return e.Code
	}
	return InternalError
}
