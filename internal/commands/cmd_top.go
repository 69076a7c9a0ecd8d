package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdTop serves top: per collection, the time (microseconds) and count of
// its commands in total, under read and write locks, and by kind, since
// the server started (usage.go counts them).
func cmdTop(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	return NewReply(dst).Doc("totals", s.Env.Usage.top()).Finish(), nil
}

// cmdGetDiagnosticData serves getDiagnosticData: MongoDB's full-time
// diagnostic data capture document, {data: {start, serverStatus, end}},
// which monitoring tools (percona's mongodb_exporter) read for connection,
// opcounter and memory metrics. A standalone has no replSetGetStatus or
// oplog sections.
func cmdGetDiagnosticData(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	start := time.Now()
	ss := NewReply(nil)
	appendServerStatus(ss, s)
	ss.Double("ok", 1)
	data := doc("start", bson.DateTime(start.UnixMilli()), "serverStatus", ss.End(), "end", bson.DateTime(time.Now().UnixMilli()))
	return NewReply(dst).Doc("data", data).Finish(), nil
}
