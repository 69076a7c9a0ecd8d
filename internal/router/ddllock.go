package router

import (
	"context"
	"os"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// The DDL lock: a router changing a collection's sharding metadata
// (shardCollection, split, mergeChunks, refineCollectionShardKey, drop)
// first inserts config.locks {_id: <ns>}, so two routers cannot interleave
// their config writes for one collection (MongoDB serializes these on the
// config primary). The insert's unique _id is the lock; a lock older than
// ddlLockExpiry (its router died holding it) may be taken over.

// ddlLockExpiry is how old a lock may get before another router takes it
// over: longer than any metadata change takes.
var ddlLockExpiry = 2 * time.Minute

// ddlLockWait is how long a router waits for another's lock.
var ddlLockWait = 30 * time.Second

// lockNS takes ns's DDL lock and returns its release.
func (r *Router) lockNS(ctx context.Context, ns string) (func(), error) {
	host, _ := os.Hostname()
	deadline := time.Now().Add(ddlLockWait)
	for {
		now := time.Now()
		owner := bson.NewObjectID() // this acquisition's token
		err := r.configInsert(ctx, "locks", marshal(bson.D{{Key: "_id", Value: ns}, {Key: "state", Value: int32(2)},
			{Key: "who", Value: host + ":router"}, {Key: "ts", Value: owner}, {Key: "when", Value: now}}))
		if err == nil {
			return func() {
				_ = r.configDelete(context.Background(), "locks", bson.D{{Key: "_id", Value: ns}, {Key: "ts", Value: owner}})
			}, nil
		}
		if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
			return nil, err
		}
		// Held: take over a lock its holder abandoned, else wait.
		_ = r.configDelete(ctx, "locks", bson.D{{Key: "_id", Value: ns}, {Key: "when", Value: bson.D{{Key: "$lt", Value: now.Add(-ddlLockExpiry)}}}})
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, mongoerr.New(mongoerr.LockBusy, "could not acquire the lock of %s within %v: another router is changing its sharding metadata", ns, ddlLockWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
