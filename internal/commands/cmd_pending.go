package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Commands whose engines arrive with later issues answer with a clear error
// naming what is missing, so a client fails loudly instead of being misled.

func notYet(what string) error {
	return mongoerr.New(mongoerr.CommandNotSupported, "%s is not supported by this build of Cairn yet", what)
}

func cmdAggregate(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, notYet("aggregate")
}

func cmdExplain(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, notYet("explain")
}

func cmdCreateIndexes(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, notYet("createIndexes")
}

func cmdDropIndexes(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, notYet("dropIndexes")
}

// cmdListIndexes lists the _id index (the only one until secondary indexes land).
func cmdListIndexes(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	if s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll) == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
	}
	if err := catalog.ValidateCollectionName(ns.DB, ns.Coll); err != nil {
		return nil, err
	}
	return cursorReply(dst, ns.String(), 0, []bsoncore.Document{idIndexSpec()}), nil
}
