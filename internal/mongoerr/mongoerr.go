// Package mongoerr is the one table of MongoDB error codes Cairn replies with.
//
// Engine packages return *Error values (or wrap them) for anything a client
// caused; the command layer turns them into {ok: 0, code, codeName, errmsg}.
// Drivers decide retries and surface exceptions by code, so tests assert codes,
// never message text.
package mongoerr

import (
	"errors"
	"fmt"
)

// Code is a MongoDB server error code.
type Code int32

// The codes Cairn uses, with MongoDB's numbers, in numeric order. Every one
// has a codeName in names (TestEveryCodeHasAName).
const (
	InternalError             Code = 1
	BadValue                  Code = 2
	NoSuchKey                 Code = 4
	FailedToParse             Code = 9
	Unauthorized              Code = 13
	TypeMismatch              Code = 14
	InvalidLength             Code = 16
	IllegalOperation          Code = 20
	NamespaceNotFound         Code = 26
	IndexNotFound             Code = 27
	ConflictingUpdateOps      Code = 40
	CursorNotFound            Code = 43
	NamespaceExists           Code = 48
	MaxTimeMSExpired          Code = 50
	DollarPrefixedFieldName   Code = 52
	InvalidIDField            Code = 53
	CommandNotFound           Code = 59
	ImmutableField            Code = 66
	CannotCreateIndex         Code = 67
	IndexAlreadyExists        Code = 68
	InvalidOptions            Code = 72
	InvalidNamespace          Code = 73
	IndexOptionsConflict      Code = 85
	IndexKeySpecsConflict     Code = 86
	OperationFailed           Code = 96
	CommandNotSupported       Code = 115
	CommandFailed             Code = 125
	CannotIndexParallelArrays Code = 171
	InvalidIndexSpecOption    Code = 197
	QueryFeatureNotAllowed    Code = 224
	IndexBuildAborted         Code = 276
	ClientDisconnect          Code = 279
	QueryExceededMemory       Code = 292
	UnsupportedOpQueryCommand Code = 352
	BSONObjectTooLarge        Code = 10334
	DuplicateKey              Code = 11000
	Interrupted               Code = 11601
	MergeStageNoMatchingDoc   Code = 13113
	DatabaseDifferCase        Code = 13297
	OpIDOutOfRange            Code = 26823 // killOp's op beyond 32 bits; MongoDB leaves it unnamed
	UnknownField              Code = 40415
	CursorInUse               Code = 50738
	ValueNegative             Code = 51024 // an IDL validator's "must be >= 0"; MongoDB leaves it unnamed
)

var names = map[Code]string{
	InternalError:             "InternalError",
	BadValue:                  "BadValue",
	NoSuchKey:                 "NoSuchKey",
	FailedToParse:             "FailedToParse",
	Unauthorized:              "Unauthorized",
	TypeMismatch:              "TypeMismatch",
	InvalidLength:             "InvalidLength",
	IllegalOperation:          "IllegalOperation",
	NamespaceNotFound:         "NamespaceNotFound",
	IndexNotFound:             "IndexNotFound",
	ConflictingUpdateOps:      "ConflictingUpdateOperators",
	CursorNotFound:            "CursorNotFound",
	NamespaceExists:           "NamespaceExists",
	MaxTimeMSExpired:          "MaxTimeMSExpired",
	DollarPrefixedFieldName:   "DollarPrefixedFieldName",
	InvalidIDField:            "InvalidIdField",
	CommandNotFound:           "CommandNotFound",
	ImmutableField:            "ImmutableField",
	CannotCreateIndex:         "CannotCreateIndex",
	IndexAlreadyExists:        "IndexAlreadyExists",
	InvalidOptions:            "InvalidOptions",
	InvalidNamespace:          "InvalidNamespace",
	IndexOptionsConflict:      "IndexOptionsConflict",
	IndexKeySpecsConflict:     "IndexKeySpecsConflict",
	OperationFailed:           "OperationFailed",
	CommandNotSupported:       "CommandNotSupported",
	CommandFailed:             "CommandFailed",
	CannotIndexParallelArrays: "CannotIndexParallelArrays",
	InvalidIndexSpecOption:    "InvalidIndexSpecificationOption",
	QueryFeatureNotAllowed:    "QueryFeatureNotAllowed",
	IndexBuildAborted:         "IndexBuildAborted",
	QueryExceededMemory:       "QueryExceededMemoryLimitNoDiskUseAllowed",
	UnsupportedOpQueryCommand: "UnsupportedOpQueryCommand",
	BSONObjectTooLarge:        "BSONObjectTooLarge",
	DuplicateKey:              "DuplicateKey",
	Interrupted:               "Interrupted",
	ClientDisconnect:          "ClientDisconnect",
	ValueNegative:             "Location51024",
	OpIDOutOfRange:            "Location26823",
	MergeStageNoMatchingDoc:   "MergeStageNoMatchingDocument",
	DatabaseDifferCase:        "DatabaseDifferCase",
	UnknownField:              "Location40415",
	CursorInUse:               "Location50738",
}

// Name is MongoDB's codeName for c, or "" for a code without one (MongoDB
// sends "Location<code>" style errors without a codeName).
func (c Code) Name() string { return names[c] }

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
	if n := e.Code.Name(); n != "" {
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
