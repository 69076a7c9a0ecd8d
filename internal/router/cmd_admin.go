package router

import (
	"context"
	"os"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/mongoerr"
)

type handler func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error)

// handlers are the router's commands; any other is CommandNotFound.
var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"hello": cmdHello, "isMaster": cmdHello, "ismaster": cmdHello,
		"ping": okCmd, "getLastError": okCmd,
		"startSession": cmdStartSession, "refreshSessions": cmdRefreshSessions, "endSessions": cmdEndSessions,
		"killSessions": cmdKillSessions, "commitTransaction": cmdCommitTransaction, "abortTransaction": cmdAbortTransaction,
		"buildInfo": cmdBuildInfo, "buildinfo": cmdBuildInfo,
		"whatsmyuri": func(context.Context, *Router, *request) (bsoncore.Document, error) {
			return okReply("you", "127.0.0.1"), nil
		},
		"getCmdLineOpts": func(context.Context, *Router, *request) (bsoncore.Document, error) {
			return okReply("argv", bson.A{"cairn", "router"}), nil
		},
		"getParameter": cmdGetParameter,

		"find": cmdFind, "getMore": cmdGetMore, "killCursors": cmdKillCursors,
		"count": cmdCount, "distinct": cmdDistinct, "aggregate": cmdAggregate, "explain": cmdExplain,
		"insert": cmdInsert, "update": cmdUpdateOrDelete("update", "updates"), "delete": cmdUpdateOrDelete("delete", "deletes"),
		"findAndModify": cmdFindAndModify, "findandmodify": cmdFindAndModify,

		"create": toPrimary(true), "listIndexes": toPrimary(false), "listCollections": toPrimary(false),
		"collMod": toAll(false), "dropIndexes": toAll(false), "createIndexes": cmdCreateIndexes,
		"drop": cmdDrop, "dropDatabase": cmdDropDatabase, "listDatabases": cmdListDatabases,

		"addShard": admin(cmdAddShard), "listShards": admin(cmdListShards), "removeShard": admin(cmdRemoveShard),
		"enableSharding": admin(cmdEnableSharding), "shardCollection": admin(cmdShardCollection),
		"refineCollectionShardKey": admin(cmdRefine),
		"split":                    admin(cmdSplit), "mergeChunks": admin(cmdMergeChunks),
		"moveChunk": admin(cmdMoveChunk), "moveRange": admin(cmdMoveChunk),
		"addShardToZone": admin(cmdShardZone(true)), "removeShardFromZone": admin(cmdShardZone(false)),
		"updateZoneKeyRange": admin(cmdUpdateZoneKeyRange),
		"flushRouterConfig":  cmdFlush,
		"balancerStart":      admin(cmdBalancerMode("full")), "balancerStop": admin(cmdBalancerMode("off")),
		"balancerStatus": admin(cmdBalancerStatus), "balancerCollectionStatus": admin(cmdBalancerCollectionStatus),
		"setAllowMigrations": admin(cmdSetAllowMigrations),

		"saslStart": cmdSaslStart, "saslContinue": cmdSaslContinue, "logout": cmdLogout, "authenticate": cmdAuthenticate,
		"connectionStatus": cmdConnectionStatus,
	}
	for _, name := range userCommands {
		handlers[name] = toConfigServers
	}
	for name, why := range notYetCommands { // cmd_sh.go
		handlers[name] = notYet(why)
	}
}

// admin wraps a cluster command that only the admin database takes.
func admin(h handler) handler {
	return func(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
		if req.db != "admin" {
			return nil, mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", req.name)
		}
		return h(ctx, r, req)
	}
}

func okReply(kv ...any) bsoncore.Document {
	d := bson.D{}
	for i := 0; i+1 < len(kv); i += 2 {
		d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return marshal(append(d, bson.E{Key: "ok", Value: 1.0}))
}

func okCmd(context.Context, *Router, *request) (bsoncore.Document, error) { return okReply(), nil }

func cmdHello(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	first := "isWritablePrimary"
	if req.name != "hello" {
		first = "ismaster"
	}
	kv := []any{first, true, "msg", "isdbgrid", "maxBsonObjectSize", int32(16 << 20), "maxMessageSizeBytes", int32(48000000),
		"maxWriteBatchSize", int32(100000), "localTime", time.Now(), "maxWireVersion", int32(commands.MaxWireVersion),
		"minWireVersion", int32(commands.MinWireVersion), "connectionId", int32(req.conn), "readOnly", false,
		"logicalSessionTimeoutMinutes", int32(sessionTimeout / time.Minute)}
	if mechs := r.saslSupportedMechs(ctx, req); mechs != nil {
		kv = append(kv, "saslSupportedMechs", mechs)
	}
	if spec := r.speculativeAuth(ctx, req); spec != nil {
		kv = append(kv, "speculativeAuthenticate", bson.Raw(spec))
	}
	return okReply(kv...), nil
}

// saslSupportedMechs answers hello's saslSupportedMechs "<db>.<user>": the
// user's SCRAM mechanisms (nil without the field; an empty list for an
// unknown user, as mongod).
func (r *Router) saslSupportedMechs(ctx context.Context, req *request) bson.A {
	name, ok := req.body.Lookup("saslSupportedMechs").StringValueOK()
	if !ok {
		return nil
	}
	out := bson.A{}
	db, user, ok := strings.Cut(name, ".")
	if !ok {
		return out
	}
	users, err := r.userStore(ctx, false)
	if err != nil {
		return out
	}
	u, ok := users.Lookup(db, user)
	if !ok { // made since the last read, perhaps through another router
		users, _ = r.userStore(ctx, true)
		u, ok = users.Lookup(db, user)
	}
	if ok {
		for _, m := range u.Mechanisms() {
			out = append(out, m)
		}
	}
	return out
}

func serverInfo() bsoncore.Document {
	host, _ := os.Hostname()
	return marshal(bson.D{{Key: "host", Value: host}, {Key: "version", Value: commands.MongoVersion}, {Key: "process", Value: "mongos"}})
}

func cmdBuildInfo(context.Context, *Router, *request) (bsoncore.Document, error) {
	return okReply("version", commands.MongoVersion, "versionArray", bson.A{int32(7), int32(0), int32(14), int32(0)},
		"process", "mongos", "maxBsonObjectSize", int32(16<<20), "bits", int32(64), "cairnVersion", "router"), nil
}

func cmdGetParameter(_ context.Context, _ *Router, req *request) (bsoncore.Document, error) {
	if _, ok := req.arg("featureCompatibilityVersion"); ok {
		return okReply("featureCompatibilityVersion", bson.D{{Key: "version", Value: "7.0"}}), nil
	}
	return nil, mongoerr.New(mongoerr.InvalidOptions, "the router answers getParameter only for featureCompatibilityVersion")
}

func cmdFlush(_ context.Context, r *Router, _ *request) (bsoncore.Document, error) {
	r.cache.flush()
	return okReply("flushed", true), nil
}
