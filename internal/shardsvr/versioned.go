package shardsvr

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// refuseVersioned refuses to move a chunk of a versioned collection (issue
// #23). A migration copies documents with inserts and updates and the
// donor's range deletion deletes them: on a versioned collection the
// recipient would restart every document's history at version 1 (its
// version field too, breaking compare-and-swap) and the donor would keep
// the old history ending in tombstones. Until migrations carry the history
// keyspaces, a versioned collection's chunks stay on their shard.
func (n *Node) refuseVersioned(ctx context.Context, ns string) error {
	db, coll := splitNS(ns)
	reply, err := n.local(ctx, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: coll}}}})
	if err != nil {
		return err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	for _, v := range vals {
		d, _ := v.DocumentOK()
		if on, _ := d.Lookup("options", "versioning", "enabled").BooleanOK(); on {
			return mongoerr.New(mongoerr.IllegalOperation, "cannot move a chunk of %s: it is a versioned collection, and chunk migrations do not carry document history yet", ns)
		}
	}
	return nil
}
