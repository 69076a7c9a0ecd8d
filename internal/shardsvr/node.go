package shardsvr

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// Options configure a Node.
type Options struct {
	// Local runs a command on this server, through the same command path
	// as a client's (so writes replicate and are logged like any other).
	Local func(ctx context.Context, db string, cmd bsoncore.Document) bsoncore.Document
	// Self is this server's host:port, as other members reach it.
	Self string
	// ShardSvr: started with --shardsvr. Without it the node serves only
	// the config server's part (_configsvrCommitChunkMigration, the
	// balancer) and refuses the shard's commands.
	ShardSvr bool
	// IsPrimary reports whether this server may write now (a standalone
	// always may); the balancer and recovery run only then.
	IsPrimary func() bool
	// ConfigServer reports whether this server holds the config servers'
	// metadata (config.shards exists); the balancer runs only then, so a
	// plain replica set runs no balancer commands. nil: never.
	ConfigServer func() bool
	Log          *slog.Logger
	// Key is the cluster's keyFile key: with it every connection to
	// another member authenticates as __system (memberclient).
	Key []byte
	// TLS, when set, is the configuration connections to other members
	// use (tlsconn.Member; preferTLS and requireTLS).
	TLS *tls.Config
	// BalancerInterval is the balancer's round interval (10 s, MongoDB's,
	// when zero).
	BalancerInterval time.Duration
	// FailPoints is the server's fail point registry, where the node
	// defines its points (CommitPartialFailPoint). nil: none.
	FailPoints *failpoint.Registry
	// Sessions is the server's session table: a migration moves the
	// retryable-write records of the sessions that wrote its collection
	// (sessions.go). nil: none move.
	Sessions *session.Table
}

// CommitPartialFailPoint makes _configsvrCommitChunkMigration fail after
// its first config.chunks write (the donor's version bump) and before the
// next (the moved chunk's): a config primary dying mid-commit, made
// certain.
const CommitPartialFailPoint = "configsvrCommitChunkMigrationPartial"

// The donor's fail points (MongoDB's names): a migration that hangs once
// the recipient is steady, before its critical section asks to begin; and
// one that hangs in its critical section after the commit and the
// refresh, before the waiting writes go on.
const (
	HangBeforeEnteringCriticalSectionFailPoint = "hangBeforeEnteringCriticalSection"
	HangBeforeLeavingCriticalSectionFailPoint  = "hangBeforeLeavingCriticalSection"
)

// MoveChunkHangAtStepFailPoints are the donor's steps as MongoDB 7.0
// numbers them (moveChunkHangAtStep1 … 6, its chunk_manipulation_util's
// moveChunkStepNames): 1 the options parsed; 2 the metadata checked and
// the migration registered, before its coordinator document; 3 the
// coordinator written and the recipient started (_recvChunkStart); 4 the
// recipient steady, before the critical section; 5 the recipient holding
// the chunk's data (_recvChunkCommit), before the config servers' commit;
// 6 committed and the critical section left, before the range deletion
// is recorded and the coordinator forgotten. A move that reaches a step
// whose point is on holds there while it stays on.
var MoveChunkHangAtStepFailPoints = [6]string{"moveChunkHangAtStep1", "moveChunkHangAtStep2", "moveChunkHangAtStep3",
	"moveChunkHangAtStep4", "moveChunkHangAtStep5", "moveChunkHangAtStep6"}

// HangInCommitChunkMigrationFailPoint holds _configsvrCommitChunkMigration
// on the config server once it has checked the request, before its first
// write (Cairn's own: MongoDB 7.0's config server defines no hang there,
// only migrationCommitVersionError and migrateCommitInvalidChunkQuery).
const HangInCommitChunkMigrationFailPoint = "hangInCommitChunkMigration"

// HangBeforeFlushRoutingTableFailPoint makes _flushRoutingTableCacheUpdates
// hang before it reloads the table (Cairn's own): the window between a
// shardCollection's config write and this shard's refresh, made wide.
const HangBeforeFlushRoutingTableFailPoint = "hangBeforeFlushRoutingTable"

// Node is a server's sharding role: a shard (filtering metadata, shard
// version checks, donor and recipient of migrations, the range deleter)
// and the config server's commit of migrations and its balancer.
type Node struct {
	opts  Options
	peers *memberclient.Client // other members: the config servers, a migration's other shard

	mu       sync.Mutex
	identity *identity            // nil until _addShard (or loaded at start)
	colls    map[string]*collMeta // filtering metadata by namespace
	dbs      map[string]*dbMeta   // cached database versions by name (dbversion.go)
	donating *donation            // the migration this shard donates, if any
	receipts map[string]*receipt  // migrations this shard receives, by sessionId
	blocks   map[string]*ddlBlock // DDL critical sections by namespace (ddlblock.go)
	rangeMu  sync.Mutex           // one range deletion or receipt clearing at a time
	commitMu sync.Mutex           // config server: one commit at a time
	partial  *failpoint.Point     // CommitPartialFailPoint (nil: none)
	// hangBeforeDecision, hangBeforeDelivery: coordinator.go's fail points.
	hangBeforeDecision, hangBeforeDelivery *failpoint.Point
	// hangBeforeCritical, hangBeforeLeavingCritical: the donor's fail
	// points around its critical section (HangBeforeEnteringCriticalSection...).
	hangBeforeCritical, hangBeforeLeavingCritical *failpoint.Point
	// moveStep: MoveChunkHangAtStepFailPoints; hangInCommit:
	// HangInCommitChunkMigrationFailPoint.
	moveStep     [6]*failpoint.Point
	hangInCommit *failpoint.Point
	// hangBeforeFlush: HangBeforeFlushRoutingTableFailPoint.
	hangBeforeFlush *failpoint.Point
	// overrideInterval: OverrideBalanceRoundIntervalFailPoint.
	overrideInterval *failpoint.Point
	inRound          atomic.Bool  // a balancer round is running (balancer.go)
	rounds           atomic.Int64 // balancer rounds run on this config server
	coords           coordinators // two-phase commit's coordinations in progress (coordinator.go)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // wakes the range deleter
}

// New starts a node: it loads the shard identity, resumes interrupted
// migrations and pending range deletions, and (on a config server) runs
// the balancer.
func New(opts Options) *Node {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.IsPrimary == nil {
		opts.IsPrimary = func() bool { return true }
	}
	if opts.BalancerInterval == 0 {
		opts.BalancerInterval = 10 * time.Second
	}
	n := &Node{opts: opts, peers: memberclient.New(memberclient.Options{Key: opts.Key, TLS: opts.TLS, Timeout: peerTimeout}), colls: map[string]*collMeta{}, dbs: map[string]*dbMeta{}, receipts: map[string]*receipt{}, blocks: map[string]*ddlBlock{}, kick: make(chan struct{}, 1)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if opts.FailPoints != nil {
		n.partial = opts.FailPoints.Define(CommitPartialFailPoint)
		n.hangBeforeDecision = opts.FailPoints.Define(HangBeforeWritingDecisionFailPoint)
		n.hangBeforeDelivery = opts.FailPoints.Define(HangBeforeSendingCommitDecisionFailPoint)
		n.hangBeforeCritical = opts.FailPoints.Define(HangBeforeEnteringCriticalSectionFailPoint)
		n.hangBeforeLeavingCritical = opts.FailPoints.Define(HangBeforeLeavingCriticalSectionFailPoint)
		n.hangBeforeFlush = opts.FailPoints.Define(HangBeforeFlushRoutingTableFailPoint)
		n.overrideInterval = opts.FailPoints.Define(OverrideBalanceRoundIntervalFailPoint)
		for i, name := range MoveChunkHangAtStepFailPoints {
			n.moveStep[i] = opts.FailPoints.Define(name)
		}
		n.hangInCommit = opts.FailPoints.Define(HangInCommitChunkMigrationFailPoint)
	}
	if opts.ShardSvr {
		n.wg.Add(1)
		go n.background()
	}
	n.wg.Add(1)
	go n.balancerLoop()
	return n
}

// peerTimeout bounds a command to another member when its context has no
// deadline.
const peerTimeout = 2 * time.Minute

// Close stops the node's background work.
func (n *Node) Close() {
	n.cancel()
	n.wg.Wait()
	n.peers.Close()
}

// Command runs an internal sharding command (commands.Sharding).
func (n *Node) Command(ctx context.Context, name string, body bsoncore.Document) (bsoncore.Document, error) {
	if name == "_configsvrCommitChunkMigration" {
		return n.commitChunkMigration(ctx, body)
	}
	if name == "_configsvrBalancerStatus" {
		if n.opts.ShardSvr || n.opts.ConfigServer == nil || !n.opts.ConfigServer() {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "_configsvrBalancerStatus can only be run on config servers")
		}
		return n.balancerStatus(ctx)
	}
	if !n.opts.ShardSvr {
		return nil, mongoerr.New(mongoerr.ShardingStateNotInitialized, "%s runs on a shard: this server was not started with --shardsvr", name)
	}
	if name == "_addShard" {
		return n.addShard(ctx, body)
	}
	if _, err := n.shardIdentity(ctx); err != nil {
		return nil, err
	}
	switch name {
	case "coordinateCommitTransaction":
		return n.coordinateCommit(ctx, body)
	case "_shardsvrMoveRange":
		return n.moveRange(ctx, body)
	case "_recvChunkStart":
		return n.recvChunkStart(ctx, body)
	case "_recvChunkStatus", "_recvChunkCommit", "_recvChunkAbort", "_recvChunkReleaseCritSec":
		return n.recvChunkControl(ctx, name, body)
	case "_migrateClone":
		return n.migrateClone(ctx, body)
	case "_transferMods":
		return n.transferMods(ctx, body)
	case "_shardsvrChunkSizes":
		return n.chunkSizesCmd(ctx, body)
	case "_flushRoutingTableCacheUpdates":
		return n.flushRoutingTable(ctx, body)
	case "_shardsvrParticipantBlock":
		return n.participantBlock(ctx, body)
	}
	return nil, mongoerr.New(mongoerr.CommandNotFound, "no such sharding command: '%s'", name)
}

// local runs a command on this server and returns its reply, or the
// error an ok: 0 reply carries.
func (n *Node) local(ctx context.Context, db string, cmd bson.D) (bsoncore.Document, error) {
	body, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	reply := n.opts.Local(ctx, db, body)
	if err := memberclient.Err(reply); err != nil {
		return reply, err
	}
	return reply, writeError(reply)
}

// writeError is the first of a write reply's writeErrors, or its
// writeConcernError, as an error (nil when there is neither).
func writeError(reply bsoncore.Document) error {
	if werrs, ok := reply.Lookup("writeErrors").ArrayOK(); ok {
		if first, ok := werrs.Index(0).DocumentOK(); ok {
			return memberclient.Err(first)
		}
	}
	if wce, ok := reply.Lookup("writeConcernError").DocumentOK(); ok {
		return memberclient.Err(wce)
	}
	return nil
}

// command is a command document with its $db, for a peer.
func command(db string, cmd bson.D) bsoncore.Document {
	b, err := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: db}))
	if err != nil {
		panic(fmt.Errorf("shardsvr: a command of our own does not marshal: %w", err))
	}
	return b
}

// configRun runs cmd on the config servers' primary.
func (n *Node) configRun(ctx context.Context, db string, cmd bson.D) (bsoncore.Document, error) {
	id, err := n.shardIdentity(ctx)
	if err != nil {
		return nil, err
	}
	return n.peers.RunPrimary(ctx, id.ConfigConn, command(db, cmd))
}

// findAll runs a find through run and returns every document (the batches
// of its cursor).
func findAll(ctx context.Context, run func(ctx context.Context, db string, cmd bson.D) (bsoncore.Document, error), db, coll string, filter any) ([]bsoncore.Document, error) {
	reply, err := run(ctx, db, bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 100000}})
	if err != nil {
		return nil, err
	}
	var out []bsoncore.Document
	for {
		vals, id := batchOf(reply)
		for _, v := range vals {
			d, _ := v.DocumentOK()
			out = append(out, d)
		}
		if id == 0 {
			return out, nil
		}
		if reply, err = run(ctx, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "batchSize", Value: 100000}}); err != nil {
			return nil, err
		}
	}
}

// batchOf is a find or getMore reply's batch and its cursor id.
func batchOf(reply bsoncore.Document) ([]bsoncore.Value, int64) {
	cur, _ := reply.Lookup("cursor").DocumentOK()
	batch, ok := cur.Lookup("firstBatch").ArrayOK()
	if !ok {
		batch, _ = cur.Lookup("nextBatch").ArrayOK()
	}
	vals, _ := batch.Values()
	id, _ := cur.Lookup("id").AsInt64OK()
	return vals, id
}

func (n *Node) configFind(ctx context.Context, coll string, filter any) ([]bsoncore.Document, error) {
	return findAll(ctx, n.configRun, "config", coll, filter)
}

func (n *Node) localFind(ctx context.Context, db, coll string, filter any) ([]bsoncore.Document, error) {
	return findAll(ctx, n.local, db, coll, filter)
}

// rawDoc is a document as a value the reply and bson.Marshal take.
func rawDoc(d bsoncore.Document) bson.Raw { return bson.Raw(d) }

// majority is the write concern of every metadata write.
var majority = bson.D{{Key: "w", Value: "majority"}}
