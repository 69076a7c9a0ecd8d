package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Commands whose engines arrive with later issues answer with a clear error
// naming what is missing, so a client fails loudly instead of being misled.

func notYet(what string) error {
	return mongoerr.New(mongoerr.CommandNotSupported, "%s is not supported by this build of Cairn yet", what)
}

func cmdExplain(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, notYet("explain")
}
