package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdCompact compacts a collection's documents and indexes for real
// (engine.Compact: a Pebble manual compaction of their key ranges) and
// answers {bytesFreed, ok: 1} as MongoDB 7.0 does. force is accepted: a
// standalone needs no force, as in MongoDB. freeSpaceTargetMB (compact only
// when that much would be freed) is refused: Cairn cannot predict it.
func cmdCompact(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	if _, err := req.Bool("force", false); err != nil {
		return nil, err
	}
	if _, ok := req.Arg("freeSpaceTargetMB"); ok {
		return nil, mongoerr.New(mongoerr.CommandNotSupported, "compact with freeSpaceTargetMB is not supported by Cairn")
	}
	ns := engine.Namespace{DB: req.DB, Coll: name}
	freed, exists, err := s.Env.Engine.Compact(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "collection does not exist")
	}
	return NewReply(dst).Int64("bytesFreed", freed).Finish(), nil
}
