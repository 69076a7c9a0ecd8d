package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// defaultShutdownTimeout is timeoutSecs's default (MongoDB 5.0 and later).
const defaultShutdownTimeout = 15 * time.Second

// cmdShutdown serves shutdown: the server stops accepting connections, lets
// operations in progress finish for up to timeoutSecs (force: interrupts
// them at once), and exits. As mongod, it sends no reply: the connection
// closes. Without access control it must come from this host (with it, the
// shutdown privilege is checked before the command runs).
func cmdShutdown(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	force, err := req.Bool("force", false)
	if err != nil {
		return nil, err
	}
	secs, err := req.SafeInt("timeoutSecs", int64(defaultShutdownTimeout/time.Second))
	if err != nil {
		return nil, err
	}
	if secs < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "timeoutSecs must be non-negative, got %d", secs)
	}
	if !s.Env.Access.Enabled && !isLoopback(s.Remote) {
		return nil, mongoerr.New(mongoerr.Unauthorized, "shutdown must run from localhost when running db without auth")
	}
	p := s.Env.Process
	if p == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "shutdown is not available: this server is embedded in another program, which stops it")
	}
	s.Env.Log.Info("shutdown command received", "force", force, "timeoutSecs", secs, "remote", s.Remote)
	s.hangUp = true
	p.Shutdown(force, time.Duration(secs)*time.Second)
	return OK(dst), nil
}
