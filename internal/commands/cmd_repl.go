package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdNoReplication serves replSetGetConfig and replSetGetStatus on a
// standalone: NoReplicationEnabled (76), as mongod started without
// --replSet answers, which monitoring tools (mongodb_exporter's topology
// labels) read as "standalone".
func cmdNoReplication(_ context.Context, _ *Session, _ *Request, _ []byte) (bsoncore.Document, error) {
	return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
}
