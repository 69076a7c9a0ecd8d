package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file adds the RetryableWriteError label as mongod's
// ErrorLabelBuilder does: to the reply of a retryable write (a command
// with txnNumber and no autocommit, or commitTransaction /
// abortTransaction) whose error, or whose writeConcernError, has a code in
// MongoDB's RetriableError category. Drivers on wire version 9 and later
// retry a write on the label alone, never on the code, so a reply without
// it is not retried. A failCommand that names errorLabels (even an empty
// list) replaces the server's labels, as in mongod (cmd_failpoint.go sets
// Session.labelsSet).

// retriableCode is MongoDB's RetriableError category as drivers see it
// (the retryable writes specification's list).
func retriableCode(c mongoerr.Code) bool {
	switch c {
	case mongoerr.HostUnreachable, mongoerr.HostNotFound, mongoerr.NetworkTimeout,
		mongoerr.ShutdownInProgress, mongoerr.PrimarySteppedDown, mongoerr.ExceededTimeLimit,
		mongoerr.SocketException, mongoerr.NotWritablePrimary, mongoerr.InterruptedAtShutdown,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.NotPrimaryNoSecondaryOk,
		mongoerr.NotPrimaryOrSecondary:
		return true
	}
	return false
}

// retryableWriteCommand is mongod's isRetryableWrite for labels: the
// command carries txnNumber outside a multi-document transaction, or ends
// a transaction.
func retryableWriteCommand(req *Request) bool {
	switch req.Name {
	case "commitTransaction", "abortTransaction":
		return true
	}
	if _, ok := req.Arg("txnNumber"); !ok {
		return false
	}
	_, inTxn := req.Arg("autocommit")
	return !inTxn
}

// withRetryableWriteLabel returns reply with errorLabels:
// ["RetryableWriteError"] appended when MongoDB would label it, else reply
// unchanged. reply must end dst's used bytes (it is extended in place).
func withRetryableWriteLabel(reply bsoncore.Document, s *Session, req *Request) bsoncore.Document {
	if s.labelsSet || !retryableWriteCommand(req) {
		return reply
	}
	if _, err := reply.LookupErr("errorLabels"); err == nil {
		return reply
	}
	code := func(d bsoncore.Document) mongoerr.Code {
		n, _ := d.Lookup("code").AsInt64OK()
		return mongoerr.Code(n)
	}
	ok, _ := reply.Lookup("ok").AsFloat64OK()
	label := ok == 0 && retriableCode(code(reply))
	if wce, isDoc := reply.Lookup("writeConcernError").DocumentOK(); isDoc && retriableCode(code(wce)) {
		label = true
	}
	if !label {
		return reply
	}
	b := []byte(reply[:len(reply)-1])
	idx, b := bsoncore.AppendArrayElementStart(b, "errorLabels")
	b = bsoncore.AppendStringElement(b, "0", "RetryableWriteError")
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	b = append(b, 0)
	bsoncore.UpdateLength(b, 0, int32(len(b)))
	return b
}
