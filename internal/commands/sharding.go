package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Sharding is a shard server's part of the commands (package shardsvr):
// the shard version checks every command on a collection goes through,
// and the internal commands of shards and config servers (the shard
// identity, migrations, their commit). Env.Sharding is nil on a server
// that is neither: it refuses shardVersion and databaseVersion
// (genericArgs) and the internal commands (ShardingStateNotInitialized).
type Sharding interface {
	// Admit checks a command on namespace ns against this shard's
	// filtering metadata: shardVersion and databaseVersion, when given
	// (Type 0 when not), must be this shard's, or Admit answers
	// StaleConfig / StaleDbVersion. With write (a write that does not
	// hold ns's migration gate yet) the command is admitted only outside
	// a migration's critical section of ns (it waits for its end) and
	// holds the gate until release, which lets a critical section that
	// waits for its holders begin. owns, for a command whose shardVersion
	// names a sharded collection, reports whether a document lies in a
	// chunk this shard owns, by the same routing table the version was
	// checked against (the SHARDING_FILTER of its reads and writes); nil
	// otherwise.
	Admit(ctx context.Context, ns string, write bool, shardVersion, dbVersion bsoncore.Value) (release func(), owns func(bsoncore.Document) bool, err error)
	// Dropped is told before this server drops database db (coll "") or
	// collection db.coll, so that no cached version of what goes admits
	// a command afterwards.
	Dropped(ctx context.Context, db, coll string)
	// Command runs one of the internal sharding commands (shardCommands).
	Command(ctx context.Context, name string, body bsoncore.Document) (bsoncore.Document, error)
}

// shardingInternal are the internal sharding commands and their fields,
// in MongoDB 7.0's names; package shardsvr runs them.
var shardingInternal = map[string]struct{ help, fields string }{
	"_addShard":                      {"make this server a shard: store the shard identity the config servers give it (admin.system.version)", "shardIdentity"},
	"_shardsvrMoveRange":             {"migrate the chunk [min, max) of a collection from this shard to toShard (the donor's part of moveChunk and moveRange)", "toShard min max waitForDelete fromShard epoch collectionTimestamp"},
	"_recvChunkStart":                {"begin receiving a chunk: clone it from the donor, then catch up from the donor's oplog", "sessionId from fromShard toShard min max shardKeyPattern epoch collectionTimestamp"},
	"_recvChunkStatus":               {"the state of the chunk this shard receives", "sessionId"},
	"_recvChunkCommit":               {"finish receiving a chunk: the donor is in its critical section, so drain its last changes", "sessionId"},
	"_recvChunkAbort":                {"abandon receiving a chunk and delete what was copied of it", "sessionId"},
	"_recvChunkReleaseCritSec":       {"the migration committed: the received chunk's copy is this shard's own", "sessionId"},
	"_migrateClone":                  {"the next batch of the donor's documents of the migrating chunk", "sessionId"},
	"_transferMods":                  {"the migrating chunk's documents changed on the donor since the last batch", "sessionId"},
	"_shardsvrChunkSizes":            {"the data size of this shard's documents in each of the given chunks (the balancer's input)", "shardKeyPattern chunks"},
	"_flushRoutingTableCacheUpdates": {"reload a collection's routing table from the config servers (a router, after sharding or refining it)", "syncFromConfig"},
	"_shardsvrParticipantBlock":      {"begin (blockType Writes) or end (Unblock) a DDL operation's critical section of a collection on this shard: its writes wait, and the routing table is reloaded at the end (a router, around shardCollection's config write)", "blockType reason"},
	"coordinateCommitTransaction":    {"commit a transaction that wrote on several shards (this shard coordinates): prepare every participant, record the decision durably, then commit or abort each", "participants"},
	"_configsvrBalancerStatus":       {"the balancer's mode, whether a round is running and how many rounds ran (config server; a router's balancerStatus)", ""},
	"_configsvrCommitChunkMigration": {"commit a migrated chunk's new owner in config.chunks (config server primary)", "fromShard toShard migratedChunk fromShardCollectionVersion validAfter"},
}

// cmdSharding runs an internal sharding command through Env.Sharding.
func cmdSharding(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Sharding == nil {
		return nil, mongoerr.New(mongoerr.ShardingStateNotInitialized, "%s needs a server started with --shardsvr or as a config server: this one is not part of a sharded cluster", req.Name)
	}
	out, err := s.Env.Sharding.Command(ctx, req.Name, req.Body)
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	els, _ := out.Elements()
	for _, el := range els {
		r.Value(el.Key(), el.Value())
	}
	return r.Finish(), nil
}

// admitSharded runs Sharding.Admit for a command on a collection: its
// first field names the collection (explain's, its inner command's).
// Commands on no collection pass. A command that Admit gives a filter
// keeps it on the session for its reads and the documents its writes
// choose (Session.x): a shard's versioned write skips orphans, as its
// reads do. A write in a transaction hands its hold of the collection's
// migration gate to the transaction, which keeps it until it commits or
// aborts (engine.Txn.Hold): a migration's critical section waits for it,
// as mongod's for a transaction's collection locks. The transaction's
// later writes there hold it already and do not ask again (a critical
// section waiting to begin would otherwise wait for them while they wait
// for it).
func admitSharded(ctx context.Context, s *Session, req *Request, write bool) (func(), error) {
	sv, _ := req.Arg("shardVersion")
	dv, _ := req.Arg("databaseVersion")
	if !write && sv.Type == 0 && dv.Type == 0 {
		return nil, nil
	}
	coll, err := req.Collection()
	if inner, ok := req.First().DocumentOK(); ok && req.Name == "explain" {
		coll, ok = inner.Index(0).Value().StringValueOK()
		if ok && coll != "" {
			err = nil
		}
	}
	if err != nil {
		return nil, nil // not a collection command: nothing to check
	}
	ns := req.DB + "." + coll
	t := s.sess.etx
	gate := write && (t == nil || !t.Holds(ns))
	release, owns, err := s.Env.Sharding.Admit(ctx, ns, gate, sv, dv)
	if err != nil {
		return nil, err
	}
	if t != nil && release != nil {
		t.Hold(ns, release)
		release = nil
	}
	if owns == nil {
		return release, nil
	}
	s.scope.OwnedNS, s.scope.Owned = engine.Namespace{DB: req.DB, Coll: coll}, owns
	return func() {
		s.scope.OwnedNS, s.scope.Owned = engine.Namespace{}, nil
		if release != nil {
			release()
		}
	}, nil
}

// batchedWrites are the write commands whose statements each get a result:
// a shard version error is the write error of the statements it stops.
var batchedWrites = map[string]string{"insert": "documents", "update": "updates", "delete": "deletes"}

// staleWriteReply is a batched write's answer to a shard version error
// (StaleConfig, StaleDbVersion), as mongod gives it: ok: 1 with the error
// as the write error of the statement it stopped — the first, since the
// version is checked before any statement runs — and, unordered, repeated
// for every later statement, none of which ran (mongod's serializeReply),
// so that a router retries exactly those on the right shard. Inside a
// transaction, and for any other command, the error stays the command's.
func staleWriteReply(dst []byte, s *Session, req *Request, err error) (bsoncore.Document, bool) {
	code := mongoerr.CodeOf(err)
	field, batched := batchedWrites[req.Name]
	if err == nil || !batched || code != mongoerr.StaleConfig && code != mongoerr.StaleDbVersion || s.sess.inTxn {
		return nil, false
	}
	stmts, perr := req.Docs(field)
	if perr != nil || len(stmts) == 0 {
		return nil, false
	}
	n := 1
	if ordered, ok := req.Arg("ordered"); ok && ordered.Type == bsoncore.TypeBoolean && !ordered.Boolean() {
		n = len(stmts)
	}
	if e, ok := mongoerr.As(err); ok { // a write error carries its details in errInfo only
		we := mongoerr.New(e.Code, "%s", e.Msg)
		for _, f := range e.Extra {
			if f.Name == "errInfo" {
				we.Extra = append(we.Extra, f)
			}
		}
		err = we
	}
	errs := make([]engine.WriteError, n)
	for i := range errs {
		errs[i] = engine.WriteError{Index: i, Err: err}
	}
	r := NewReply(dst).Int32("n", 0)
	if req.Name == "update" {
		r.Int32("nModified", 0)
	}
	appendWriteErrors(r, errs)
	return r.Finish(), true
}
