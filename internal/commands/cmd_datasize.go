package commands

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdDataSize answers dataSize for a whole collection: the BSON bytes and
// count of its documents, exact (so estimate is honoured either way). The
// key-range form (keyPattern, min, max) is refused until it exists.
func cmdDataSize(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	began := time.Now()
	full, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'dataSize.dataSize' is the wrong type '%s', expected type 'string'", typeName(req.First().Type))
	}
	db, coll, ok := strings.Cut(full, ".")
	if !ok || db == "" || coll == "" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", full)
	}
	for _, f := range []string{"keyPattern", "min", "max"} {
		if _, ok := req.Arg(f); ok {
			return nil, mongoerr.New(mongoerr.CommandNotSupported, "dataSize with %s is not supported by Cairn; it sizes whole collections", f)
		}
	}
	estimate, err := req.Bool("estimate", false)
	if err != nil {
		return nil, err
	}
	st, err := s.Env.Engine.CollectionStats(ctx, engine.Namespace{DB: db, Coll: coll})
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	r.Bool("estimate", estimate)
	r.Int64("size", st.DataSize)
	r.Int64("numObjects", st.Count)
	r.Int64("millis", time.Since(began).Milliseconds())
	return r.Finish(), nil
}
