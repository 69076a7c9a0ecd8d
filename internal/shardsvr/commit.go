package shardsvr

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// commitChunkMigration is _configsvrCommitChunkMigration, on the config
// servers' primary: it gives the migrated chunk to toShard in
// config.chunks with shard.Map.Move's versions, as majority writes. The
// donor's version bump is written first and the moved chunk's document
// last: that one write alone changes the owner, so a primary that dies
// between them leaves the map tiled, owned once, with the donor's version
// risen (a retry bumps it again and moves the chunk). Written the other
// way round, a death in between would leave the donor's version where a
// router's map from before the migration still names it, and writes of
// the moved range carrying that version would be admitted on the donor,
// which no longer owns them. A retried commit that finds the chunk
// already on toShard succeeds (the donor may have lost the reply).
func (n *Node) commitChunkMigration(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, ok := body.Index(0).Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "_configsvrCommitChunkMigration needs a namespace string")
	}
	from, _ := body.Lookup("fromShard").StringValueOK()
	to, _ := body.Lookup("toShard").StringValueOK()
	mc, ok := body.Lookup("migratedChunk").DocumentOK()
	if !ok || from == "" || to == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "_configsvrCommitChunkMigration needs fromShard, toShard and migratedChunk")
	}
	min, okMin := mc.Lookup("min").DocumentOK()
	max, okMax := mc.Lookup("max").DocumentOK()
	if !okMin || !okMax {
		return nil, mongoerr.New(mongoerr.BadValue, "migratedChunk needs min and max")
	}
	var expect *shard.ShardVersion
	if v := body.Lookup("fromShardCollectionVersion"); v.Type != 0 {
		sv, err := shard.ParseShardVersion(v)
		if err != nil {
			return nil, err
		}
		expect = &sv
	}
	var since hlc.Timestamp
	if t, i, ok := body.Lookup("validAfter").TimestampOK(); ok {
		since = hlc.New(t, i)
	}
	n.commitMu.Lock()
	defer n.commitMu.Unlock()
	colls, err := n.localFind(ctx, "config", "collections", bson.D{{Key: "_id", Value: ns}})
	if err != nil {
		return nil, err
	}
	if len(colls) == 0 {
		return nil, mongoerr.New(mongoerr.NamespaceNotSharded, "%s is not sharded", ns)
	}
	m, coll, err := mapOf(ctx, n.localChunks, colls[0])
	if err != nil {
		return nil, err
	}
	if coll.NoMigrations { // setAllowMigrations: false, written since the migration began
		return nil, errNoMigrations(ns)
	}
	if expect != nil && (expect.Epoch != m.Epoch || expect.Timestamp != coll.Timestamp) {
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s was dropped or resharded during the migration (epoch %s, now %s)", ns, expect.Epoch.Hex(), m.Epoch.Hex())
	}
	ci, _, err := exactChunk(m, min, max)
	if err != nil {
		return nil, err
	}
	if ci < 0 {
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "no chunk of %s is [%s, %s) any more: it was split or merged during the migration", ns, min, max)
	}
	reply := func() bsoncore.Document {
		sv := m.ShardVersionFor(from, coll.Timestamp)
		return bsoncore.NewDocumentBuilder().AppendDocument("shardVersion", sv.Doc()).Build()
	}
	switch owner := m.Chunks[ci].Shard; owner {
	case to:
		return reply(), nil // committed already
	case from:
	default:
		return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "chunk [%s, %s) of %s is on shard %s, not on the donor %s", min, max, ns, owner, from)
	}
	hang(ctx, n.hangInCommit)
	before := append([]shard.Chunk(nil), m.Chunks...)
	if err := m.Move(ci, to); err != nil {
		return nil, err
	}
	m.Chunks[ci].Since = since
	docs := m.ChunkDocs(coll.UUID)
	var order []int
	for i := range m.Chunks {
		if i != ci && m.Chunks[i].Version != before[i].Version {
			order = append(order, i)
		}
	}
	order = append(order, ci) // last: it alone changes the owner
	for k, i := range order {
		if k == 1 {
			if _, on := n.partial.Eval(nil); on {
				return nil, mongoerr.New(mongoerr.InternalError, "fail point %s: the commit stops after the donor's version bump, before the moved chunk", CommitPartialFailPoint)
			}
		}
		if _, err := n.local(ctx, "config", bson.D{{Key: "update", Value: "chunks"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: m.Chunks[i].ID}}}, {Key: "u", Value: bson.Raw(docs[i])}}}},
			{Key: "writeConcern", Value: majority}}); err != nil {
			return nil, err
		}
	}
	n.opts.Log.Info("committed a chunk migration", "ns", ns, "min", min.String(), "max", max.String(), "from", from, "to", to, "version", m.Version().String())
	return reply(), nil
}

// errNoMigrations refuses a migration of a collection whose
// config.collections entry says permitMigrations: false, with MongoDB
// 7.0's code and message.
func errNoMigrations(ns string) error {
	return mongoerr.New(mongoerr.ConflictingOperationInProgress, "Collection %s is undergoing changes so moveChunk is not allowed.", ns)
}
