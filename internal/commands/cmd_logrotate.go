package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdLogRotate serves logRotate: {logRotate: 1} or {logRotate: "server"}
// rotates the server's log file as --logRotate says (rename it aside and
// start a new one, or reopen it). Logging to standard output there is no
// file, and nothing to do. "audit" names the audit log, which Cairn does
// not have.
func cmdLogRotate(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if which, ok := req.First().StringValueOK(); ok && which != "server" {
		if which == "audit" {
			return nil, mongoerr.New(mongoerr.CommandNotSupported, "Cairn has no audit log to rotate")
		}
		return nil, mongoerr.New(mongoerr.NoSuchKey, "unknown log type for rotate: %s", which)
	}
	p := s.Env.Process
	if p == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "logRotate is not available: this server is embedded in another program, which owns its log")
	}
	if _, err := p.RotateLog(); err != nil {
		return nil, mongoerr.New(mongoerr.InternalError, "log rotation failed: %v", err)
	}
	return OK(dst), nil
}
