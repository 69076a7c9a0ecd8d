package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdHistoryInstall is _historyInstall: {_historyInstall: <coll>,
// histories: [...], horizon: <Timestamp>} writes migrated histories (and
// the documents their newest versions are) in one request
// (engine.InstallHistories); a migration's recipient runs it.
func cmdHistoryInstall(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	docs, err := req.Docs("histories")
	if err != nil {
		return nil, err
	}
	hs := make([]engine.DocHistory, 0, len(docs))
	for _, d := range docs {
		h, err := parseHistory(d)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	var horizon hlc.Timestamp
	if v, ok := req.Arg("horizon"); ok {
		t, i, ok := v.TimestampOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_historyInstall.horizon' is the wrong type '%s', expected type 'timestamp'", typeName(v.Type))
		}
		horizon = hlc.New(t, i)
	}
	if err := s.Env.Exec.InstallHistories(engine.Namespace{DB: req.DB, Coll: coll}, hs, horizon); err != nil {
		return nil, err
	}
	return NewReply(dst).Int64("n", int64(len(hs))).Finish(), nil
}
