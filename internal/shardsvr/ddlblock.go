package shardsvr

import (
	"bytes"
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// A DDL operation's critical section on a shard: _shardsvrParticipantBlock
// (MongoDB 7.0's internal command), which Cairn's router sends to every
// shard of a collection around shardCollection's config write, as
// mongod's shardCollection coordinator holds a critical section on the
// primary shard from before its commit until the shards refreshed. With
// blockType "Writes" the collection's writes wait (the migration gate's
// critical section: the writes in flight and open transactions finish
// first, within migrationLockAcquisitionMaxWaitMS); "Unblock" reloads the
// collection's routing table and lets them go on, so that a write from a
// router that has not seen the change — carrying UNSHARDED or the old
// epoch — is refused with StaleConfig rather than admitted by a table
// from before it (outside the chunks the config servers now give this
// shard). Both are idempotent for one reason. A block never unblocked
// (the router died) ends after ddlBlockMax, with the same reload.
//
// Deviation from MongoDB 7.0: blockType "ReadsAndWrites" (its default) is
// refused: Cairn's critical sections hold writes only (reads are filtered
// by the map their version was judged by instead). The block is kept in
// memory, not recorded: a restarted shard has none, and loads the map
// from the config servers at its next versioned command.

// ddlBlockMax bounds a block whose router never unblocked it.
const ddlBlockMax = 30 * time.Second

// ddlBlock is one collection's DDL critical section.
type ddlBlock struct {
	reason []byte // the reason document, as the router sent it
	end    func(ctx context.Context)
}

// participantBlock is _shardsvrParticipantBlock. The collection is named
// by its namespace and the command runs on admin, as Cairn's other
// internal sharding commands (mongod's names the collection in its
// database).
func (n *Node) participantBlock(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, ok := body.Index(0).Value().StringValueOK()
	if !ok || strings.IndexByte(ns, '.') <= 0 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "_shardsvrParticipantBlock needs a namespace db.collection")
	}
	blockType := "ReadsAndWrites"
	if v, err := body.LookupErr("blockType"); err == nil {
		if blockType, ok = v.StringValueOK(); !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '_shardsvrParticipantBlock.blockType' is the wrong type '%s', expected type 'string'", v.Type)
		}
	}
	reason, ok := body.Lookup("reason").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field '_shardsvrParticipantBlock.reason' is missing but a required field")
	}
	var err error
	switch blockType {
	case "Writes":
		err = n.blockWrites(ns, reason)
	case "Unblock":
		err = n.unblock(ctx, ns, reason)
	case "ReadsAndWrites":
		err = mongoerr.New(mongoerr.InvalidOptions, "_shardsvrParticipantBlock blockType 'ReadsAndWrites' is not supported by Cairn yet: its critical sections block writes only")
	default:
		err = mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '_shardsvrParticipantBlock.blockType' is not a valid value", blockType)
	}
	if err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().Build(), nil
}

// blockWrites begins ns's DDL critical section for reason (again: nothing).
func (n *Node) blockWrites(ns string, reason bsoncore.Document) error {
	n.mu.Lock()
	b := n.blocks[ns]
	n.mu.Unlock()
	if b != nil {
		if bytes.Equal(b.reason, reason) {
			return nil
		}
		return mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s is blocked by another operation: %s", ns, bsoncore.Document(b.reason))
	}
	cm := n.meta(ns)
	exit, err := cm.enterCritical(MigrationLockWait())
	if err != nil {
		return err
	}
	b = &ddlBlock{reason: append([]byte(nil), reason...)}
	ended := make(chan struct{})
	b.end = n.reloadThenExit(cm, exit, ended)
	n.mu.Lock()
	n.blocks[ns] = b
	n.mu.Unlock()
	n.unlessEnded(ddlBlockMax, ended, func() {
		n.opts.Log.Warn("a DDL critical section was not released by its router; reading the map from the config servers", "ns", ns)
		n.endBlock(n.ctx, ns, b)
	})
	return nil
}

// reloadThenExit is the end of a critical section that exit ends: the
// collection's map is reloaded first, then the waiting writes go on, and
// ended closes.
func (n *Node) reloadThenExit(cm *collMeta, exit func(), ended chan struct{}) func(ctx context.Context) {
	return func(ctx context.Context) {
		n.refreshAfterCommit(ctx, cm)
		exit()
		close(ended)
	}
}

// unlessEnded runs end after d unless ended closes first or the node
// stops: the bound of a critical section whose ender may never come.
func (n *Node) unlessEnded(d time.Duration, ended <-chan struct{}, end func()) {
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			end()
		case <-ended:
		case <-n.ctx.Done():
		}
	}()
}

// unblock ends ns's DDL critical section for reason: the map is reloaded,
// then the waiting writes go on. None (already ended): nothing to do.
func (n *Node) unblock(ctx context.Context, ns string, reason bsoncore.Document) error {
	n.mu.Lock()
	b := n.blocks[ns]
	n.mu.Unlock()
	if b == nil {
		return nil
	}
	if !bytes.Equal(b.reason, reason) {
		return mongoerr.New(mongoerr.ConflictingOperationInProgress, "%s is blocked by another operation: %s", ns, bsoncore.Document(b.reason))
	}
	n.endBlock(ctx, ns, b)
	return nil
}

// endBlock ends block b of ns once.
func (n *Node) endBlock(ctx context.Context, ns string, b *ddlBlock) {
	n.mu.Lock()
	if n.blocks[ns] != b {
		n.mu.Unlock()
		return
	}
	delete(n.blocks, ns)
	n.mu.Unlock()
	b.end(context.WithoutCancel(ctx))
}
