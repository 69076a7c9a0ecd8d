package memberclient

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// ReplyError is a member's ok: 0 reply as an error. It keeps the whole
// reply (writeErrors, errorLabels, errInfo…), so a router can pass it on
// unchanged, and unwraps to a *mongoerr.Error with the member's code and
// message (and errInfo), so mongoerr.CodeOf and the command layer's error
// replies work on it ("Replies as sent").
type ReplyError struct {
	Reply bsoncore.Document
	err   *mongoerr.Error
}

// Err is nil for an ok: 1 reply and a *ReplyError for any other.
func Err(reply bsoncore.Document) error {
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
		return nil
	}
	code, _ := reply.Lookup("code").AsInt64OK()
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	e := mongoerr.New(mongoerr.Code(code), "%s", msg)
	if info, ok := reply.Lookup("errInfo").DocumentOK(); ok {
		e.Extra = append(e.Extra, mongoerr.Field{Name: "errInfo", Value: bson.Raw(info)})
	}
	return &ReplyError{Reply: reply, err: e}
}

// Check is Err for a Run's result: err as it is, else the reply's error.
func Check(reply bsoncore.Document, err error) (bsoncore.Document, error) {
	if err != nil {
		return nil, err
	}
	if err := Err(reply); err != nil {
		return nil, err
	}
	return reply, nil
}

func (e *ReplyError) Error() string { return e.err.Error() }

// Unwrap is the member's code and message as a *mongoerr.Error.
func (e *ReplyError) Unwrap() error { return e.err }

// Code is the member's code.
func (e *ReplyError) Code() mongoerr.Code { return e.err.Code }

// NetError is a failure to connect to a member, send it a command or read
// its reply ("Network errors say so").
type NetError struct {
	Host, Op string
	Err      error
}

func (e *NetError) Error() string {
	return fmt.Sprintf("memberclient: %s on %s: %v", e.Op, e.Host, e.Err)
}

func (e *NetError) Unwrap() error { return e.Err }

// NotPrimary reports a code that means the member is not (or no longer)
// the primary, or is going away: ask the set for its primary again.
func NotPrimary(code mongoerr.Code) bool {
	switch code {
	case mongoerr.NotWritablePrimary, mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.PrimarySteppedDown, mongoerr.ShutdownInProgress,
		mongoerr.InterruptedAtShutdown, mongoerr.HostUnreachable, mongoerr.NotYetInitialized:
		return true
	}
	return false
}

// Retryable reports an error another member, or the same one a moment
// later, may not give: a network error, no primary, a step-down.
func Retryable(err error) bool {
	var ne *NetError
	if errors.As(err, &ne) {
		return true
	}
	e, ok := mongoerr.As(err)
	return ok && NotPrimary(e.Code)
}
