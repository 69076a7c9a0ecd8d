package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdHistoryPurge is _historyPurge: {_historyPurge: <coll>, ids: [...]}
// removes those documents of a versioned collection with their whole
// histories, leaving no tombstone (engine.PurgeHistories): the range
// deleter's removal of a donated range and a recipient's of an abandoned
// copy. It answers how many _ids had something to remove, {n}.
func cmdHistoryPurge(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	idv, ok := req.Arg("ids")
	if !ok || idv.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_historyPurge.ids' must be an array of _ids")
	}
	ids, _ := idv.Array().Values()
	n, err := s.Env.Exec.PurgeHistories(engine.Namespace{DB: req.DB, Coll: coll}, ids)
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Int64("n", int64(n)).Finish(), nil
}
