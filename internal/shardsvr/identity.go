package shardsvr

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// identity is the shard identity addShard gives a shard: its name in
// config.shards, the config servers' connection string and the cluster's
// id. It is stored where MongoDB keeps it, admin.system.version {_id:
// "shardIdentity"}, so it survives restarts.
type identity struct {
	ShardName  string
	ConfigConn string
	ClusterID  bson.ObjectID
}

const identityID = "shardIdentity"

func parseIdentity(d bsoncore.Document) (*identity, error) {
	var id identity
	var ok bool
	if id.ShardName, ok = d.Lookup("shardName").StringValueOK(); !ok || id.ShardName == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "shardIdentity needs a string shardName")
	}
	if id.ConfigConn, ok = d.Lookup("configsvrConnectionString").StringValueOK(); !ok || id.ConfigConn == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "shardIdentity needs a string configsvrConnectionString")
	}
	if id.ClusterID, ok = d.Lookup("clusterId").ObjectIDOK(); !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "shardIdentity needs an ObjectId clusterId")
	}
	els, _ := d.Elements()
	for _, el := range els {
		switch el.Key() {
		case "_id", "shardName", "configsvrConnectionString", "clusterId":
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "unknown field %q in shardIdentity", el.Key())
		}
	}
	return &id, nil
}

// addShard stores the identity; a second _addShard with the same identity
// is a no-op (addShard retried), one with another is refused.
func (n *Node) addShard(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	d, ok := body.Lookup("shardIdentity").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "_addShard needs a shardIdentity document")
	}
	id, err := parseIdentity(d)
	if err != nil {
		return nil, err
	}
	if have, err := n.loadIdentity(ctx); err != nil {
		return nil, err
	} else if have != nil {
		if *have != *id {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "this server is already shard %q of cluster %s (config servers %s); it cannot become shard %q of cluster %s",
				have.ShardName, have.ClusterID.Hex(), have.ConfigConn, id.ShardName, id.ClusterID.Hex())
		}
		return bsoncore.NewDocumentBuilder().Build(), nil
	}
	doc := bson.D{{Key: "_id", Value: identityID}, {Key: "shardName", Value: id.ShardName},
		{Key: "clusterId", Value: id.ClusterID}, {Key: "configsvrConnectionString", Value: id.ConfigConn}}
	if _, err := n.local(ctx, "admin", bson.D{{Key: "update", Value: "system.version"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: identityID}}}, {Key: "u", Value: doc}, {Key: "upsert", Value: true}},
	}}, {Key: "writeConcern", Value: majority}}); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.identity = id
	n.mu.Unlock()
	n.opts.Log.Info("this server is now a shard", "shard", id.ShardName, "configsvr", id.ConfigConn)
	n.wake()
	return bsoncore.NewDocumentBuilder().Build(), nil
}

// loadIdentity reads the stored identity (nil when there is none).
func (n *Node) loadIdentity(ctx context.Context) (*identity, error) {
	docs, err := n.localFind(ctx, "admin", "system.version", bson.D{{Key: "_id", Value: identityID}})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return parseIdentity(docs[0])
}

// shardIdentity is this shard's identity, or ShardingStateNotInitialized.
func (n *Node) shardIdentity(ctx context.Context) (*identity, error) {
	n.mu.Lock()
	id := n.identity
	n.mu.Unlock()
	if id != nil {
		return id, nil
	}
	id, err := n.loadIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if id == nil {
		return nil, mongoerr.New(mongoerr.ShardingStateNotInitialized, "Cannot accept sharding commands if sharding state has not been initialized with a shardIdentity document (addShard this server first)")
	}
	n.mu.Lock()
	n.identity = id
	n.mu.Unlock()
	return id, nil
}
