package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
)

// privRule is what a command needs to run under --auth. Invariant "Every
// command has a rule": TestEveryCommandHasPrivilegeRule fails for a
// registered command missing here, and authorize refuses one at run time.
type privRule struct {
	// pre: runs before authentication (the handshake and SASL commands).
	pre bool
	// anyUser: any authenticated user may run it (its own cursors,
	// sessions and transactions).
	anyUser bool
	// on is the resource the actions apply to; actions, what they are.
	on      resKind
	actions []string
	// more adds needs that depend on the request (an upsert also
	// inserts; $out writes its target).
	more func(req *Request) []need
}

type resKind uint8

const (
	onColl    resKind = iota // the collection the command names (its database for {cmd: 1})
	onDB                     // the command's database
	onCluster                // the cluster
	onNS                     // a "db.coll" namespace in the command-name field (dataSize, renameCollection)
)

// need is actions required on one resource.
type need struct {
	res     auth.Resource
	actions []string
}

func (r privRule) needs(_ *Session, req *Request) []need {
	var res auth.Resource
	switch r.on {
	case onColl:
		if c, ok := req.First().StringValueOK(); ok {
			res = auth.CollResource(req.DB, c)
		} else {
			res = auth.DBResource(req.DB)
		}
	case onDB:
		res = auth.DBResource(req.DB)
	case onCluster:
		res = auth.Cluster
	case onNS:
		res = nsResource(req.First())
	}
	out := []need{{res, r.actions}}
	if ok, _ := req.Bool("bypassDocumentValidation", false); ok {
		out = append(out, need{res, []string{"bypassDocumentValidation"}})
	}
	if r.more != nil {
		out = append(out, r.more(req)...)
	}
	return out
}

// nsResource is the collection of a "db.coll" value (a database when it
// has no dot; nothing at all when it is not a string, which the command
// then refuses).
func nsResource(v bsoncore.Value) auth.Resource {
	s, _ := v.StringValueOK()
	db, coll, _ := strings.Cut(s, ".")
	return auth.CollResource(db, coll)
}

func coll(actions ...string) privRule    { return privRule{on: onColl, actions: actions} }
func db(actions ...string) privRule      { return privRule{on: onDB, actions: actions} }
func cluster(actions ...string) privRule { return privRule{on: onCluster, actions: actions} }

var (
	preAuth = privRule{pre: true}
	anyUser = privRule{anyUser: true}
)

// privilegeRules gives every registered command its privilege actions,
// MongoDB's for the same command (its per-command "required privileges").
var privilegeRules = map[string]privRule{
	// Cluster members' internal sharding commands (sharding.go): MongoDB
	// gives them to the internal action alone (the __system role).
	"_addShard":                      cluster("internal"),
	"_configsvrCommitChunkMigration": cluster("internal"),
	"_configsvrBalancerStatus":       cluster("internal"),
	"_historyInstall":                cluster("internal"),
	"_historyPurge":                  cluster("internal"),
	"_historyRead":                   cluster("internal"),
	"_flushRoutingTableCacheUpdates": cluster("internal"),
	"_migrateClone":                  cluster("internal"),
	"_recvChunkAbort":                cluster("internal"),
	"_recvChunkCommit":               cluster("internal"),
	"_recvChunkReleaseCritSec":       cluster("internal"),
	"_recvChunkStart":                cluster("internal"),
	"_recvChunkStatus":               cluster("internal"),
	"_shardsvrChunkSizes":            cluster("internal"),
	"_shardsvrMoveRange":             cluster("internal"),
	"_shardsvrParticipantBlock":      cluster("internal"),
	"_transferMods":                  cluster("internal"),
	// Two-phase commit (transactions.go, shardsvr's coordinator): between
	// members only, as MongoDB's.
	"coordinateCommitTransaction":    cluster("internal"),
	"prepareTransaction":             cluster("internal"),
	"abortTransaction":               anyUser,
	"aggregate":                      {on: onColl, actions: []string{"find"}, more: pipelineNeeds},
	"authenticate":                   preAuth,
	"buildInfo":                      preAuth,
	"buildinfo":                      preAuth,
	"cloneCollectionAsCapped":        {on: onColl, actions: []string{"find"}, more: cloneCappedNeeds},
	"collMod":                        coll("collMod"),
	"advise":                         coll("find", "collStats"),
	"collStats":                      coll("collStats"),
	"commitTransaction":              anyUser,
	"compact":                        coll("compact"),
	"configureFailPoint":             cluster("setParameter"),
	"connectionStatus":               preAuth, // MongoDB answers it before authentication too
	"convertToCapped":                coll("convertToCapped"),
	"count":                          coll("find"),
	"create":                         coll("createCollection"),
	"createBackup":                   cluster("fsync"), // a host-level file operation, like fsync
	"createIndexes":                  coll("createIndex"),
	"createRole":                     {on: onDB, actions: []string{"createRole"}, more: grantNeeds("roles")},
	"createUser":                     {on: onDB, actions: []string{"createUser"}, more: grantNeeds("roles")},
	"currentOp":                      cluster("inprog"),
	"dataSize":                       {on: onNS, actions: []string{"find"}},
	"dbStats":                        db("dbStats"),
	"dbstats":                        db("dbStats"),
	"delete":                         coll("remove"),
	"distinct":                       coll("find"),
	"drop":                           coll("dropCollection"),
	"dropAllUsersFromDatabase":       db("dropUser"),
	"dropDatabase":                   db("dropDatabase"),
	"dropIndexes":                    coll("dropIndex"),
	"dropRole":                       db("dropRole"),
	"dropUser":                       db("dropUser"),
	"endSessions":                    anyUser,
	"find":                           coll("find"),
	"findAndModify":                  {on: onColl, actions: []string{"find"}, more: findAndModifyNeeds},
	"findandmodify":                  {on: onColl, actions: []string{"find"}, more: findAndModifyNeeds},
	"fsync":                          cluster("fsync"),
	"fsyncUnlock":                    cluster("unlock"),
	"getClusterParameter":            cluster("getClusterParameter"),
	"getCmdLineOpts":                 cluster("getCmdLineOpts"),
	"getDiagnosticData":              cluster("serverStatus", "getCmdLineOpts"),
	"getLog":                         cluster("getLog"),
	"getMore":                        anyUser,
	"getParameter":                   cluster("getParameter"),
	"grantPrivilegesToRole":          db("grantRole"),
	"grantRolesToUser":               {on: onDB, more: grantNeeds("roles")},
	"hello":                          preAuth,
	"hostInfo":                       cluster("hostInfo"),
	"insert":                         coll("insert"),
	"isMaster":                       preAuth,
	"ismaster":                       preAuth,
	"killAllSessions":                cluster("killAnySession"),
	"killAllSessionsByPattern":       cluster("killAnySession"),
	"killCursors":                    anyUser,
	"killOp":                         cluster("killop"),
	"killSessions":                   anyUser,
	"listCollections":                db("listCollections"),
	"listCommands":                   anyUser,
	"logRotate":                      cluster("logRotate"),
	"listDatabases":                  cluster("listDatabases"),
	"listIndexes":                    coll("listIndexes"),
	"logout":                         preAuth,
	"ping":                           preAuth,
	"refreshSessions":                anyUser,
	"startSession":                   anyUser,
	"planCacheClear":                 coll("planCacheWrite"),
	"profile":                        db("enableProfiler"),
	"renameCollection":               {on: onNS, actions: []string{"find", "dropCollection"}, more: renameNeeds},
	"replSetFreeze":                  cluster("replSetStateChange"),
	"replSetGetConfig":               cluster("replSetGetConfig"),
	"replSetGetStatus":               cluster("replSetGetStatus"),
	"replSetInitiate":                cluster("replSetConfigure"),
	"replSetReconfig":                cluster("replSetConfigure"),
	"replSetStepDown":                cluster("replSetStateChange"),
	"revertDocument":                 {on: onColl, actions: []string{"find", "update", "insert"}},
	"revokePrivilegesFromRole":       db("revokeRole"),
	"revokeRolesFromUser":            {on: onDB, more: revokeNeeds},
	"saslContinue":                   preAuth,
	"saslStart":                      preAuth,
	"serverStatus":                   cluster("serverStatus"),
	"setClusterParameter":            cluster("setClusterParameter"),
	"setFeatureCompatibilityVersion": cluster("setFeatureCompatibilityVersion"),
	"setParameter":                   cluster("setParameter"),
	"rolesInfo":                      db("viewRole"),
	"updateRole":                     {on: onDB, actions: []string{"grantRole", "revokeRole"}, more: grantNeeds("roles")},
	"shutdown":                       cluster("shutdown"),
	"top":                            cluster("top"),
	"update":                         {on: onColl, actions: []string{"update"}, more: upsertNeeds("updates", "upsert")},
	"updateUser":                     {on: onDB, more: updateUserNeeds},
	"usersInfo":                      {on: onDB, actions: []string{"viewUser"}},
	"validate":                       coll("validate"),
	"waitForFailPoint":               cluster("setParameter"),
	"whatsmyuri":                     anyUser,
}

// routerRules are the commands only a router runs (the cluster's metadata
// commands, package router), with MongoDB's actions: sharding a database
// or collection and moving or splitting its chunks act on its namespace;
// shards, zones and the router's cache act on the cluster; the balancer's
// switches read and write config.settings.
var routerRules = map[string]privRule{
	"addShard":                 cluster("addShard"),
	"addShardToZone":           cluster("enableSharding"),
	"balancerStart":            {on: onCluster, more: configSettings("update")},
	"balancerStatus":           {on: onCluster, more: configSettings("find")},
	"balancerStop":             {on: onCluster, more: configSettings("update")},
	"enableSharding":           {on: onNS, actions: []string{"enableSharding"}},
	"flushRouterConfig":        cluster("flushRouterConfig"),
	"getLastError":             anyUser,
	"listShards":               cluster("listShards"),
	"mergeChunks":              {on: onNS, actions: []string{"splitChunk"}},
	"moveChunk":                {on: onNS, actions: []string{"moveChunk"}},
	"moveRange":                {on: onNS, actions: []string{"moveChunk"}},
	"refineCollectionShardKey": {on: onNS, actions: []string{"refineCollectionShardKey"}},
	"removeShard":              cluster("removeShard"),
	"removeShardFromZone":      cluster("enableSharding"),
	"shardCollection":          {on: onNS, actions: []string{"enableSharding"}},
	"split":                    {on: onNS, actions: []string{"splitChunk"}},
	"updateZoneKeyRange":       cluster("enableSharding"),

	// balancerCollectionStatus reads the collection's chunks and sizes;
	// the others are refused by the router for now (its cmd_sh.go),
	// checked all the same.
	"balancerCollectionStatus":     {on: onNS, actions: []string{"enableSharding"}},
	"movePrimary":                  {on: onNS, actions: []string{"moveChunk"}},
	"reshardCollection":            {on: onNS, actions: []string{"enableSharding"}},
	"commitReshardCollection":      {on: onNS, actions: []string{"enableSharding"}},
	"abortReshardCollection":       {on: onNS, actions: []string{"enableSharding"}},
	"configureCollectionBalancing": {on: onNS, actions: []string{"enableSharding"}},
	"checkMetadataConsistency":     cluster("enableSharding"),
	"setAllowMigrations":           {on: onNS, actions: []string{"enableSharding"}},
}

// configSettings: the balancer's switches need action on config.settings
// (their rule names no action on the cluster itself).
func configSettings(action string) func(*Request) []need {
	return func(*Request) []need { return []need{{auth.CollResource("config", "settings"), []string{action}}} }
}

// explain's rule reads the table (set here to break the init cycle).
func init() { privilegeRules["explain"] = privRule{on: onDB, more: explainNeeds} }

// upsertNeeds: a statement with upsert may insert.
func upsertNeeds(field, flag string) func(req *Request) []need {
	return func(req *Request) []need {
		docs, _ := req.Docs(field)
		for _, d := range docs {
			if v, err := d.LookupErr(flag); err == nil && v.Type == bsoncore.TypeBoolean && v.Boolean() {
				return []need{{collOf(req), []string{"insert"}}}
			}
		}
		return nil
	}
}

func collOf(req *Request) auth.Resource {
	c, _ := req.First().StringValueOK()
	return auth.CollResource(req.DB, c)
}

func findAndModifyNeeds(req *Request) []need {
	if rm, _ := req.Bool("remove", false); rm {
		return []need{{collOf(req), []string{"remove"}}}
	}
	acts := []string{"update"}
	if up, _ := req.Bool("upsert", false); up {
		acts = append(acts, "insert")
	}
	return []need{{collOf(req), acts}}
}

// pipelineNeeds: the stages that read or write other collections need
// find on what they read and insert/remove (and update, for $merge) on
// what they write, at any depth of $lookup and $unionWith sub-pipelines.
func pipelineNeeds(req *Request) []need {
	v, ok := req.Arg("pipeline")
	if !ok {
		return nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	var out []need
	stagesNeeds(req.DB, arr, &out)
	if first, err := arr.IndexErr(0); err == nil {
		if st, ok := first.DocumentOK(); ok {
			if el, err := st.IndexErr(0); err == nil && el.Key() == "$changeStream" {
				out = append(out, changeStreamNeed(req, el.Value()))
			}
		}
	}
	return out
}

// changeStreamNeed is what MongoDB asks of a $changeStream: changeStream
// (with the aggregate's find) on the collection or database watched, and
// on every normal collection ({db: "", collection: ""}) for a
// whole-deployment stream.
func changeStreamNeed(req *Request, arg bsoncore.Value) need {
	if d, ok := arg.DocumentOK(); ok {
		if all, _ := d.Lookup("allChangesForCluster").BooleanOK(); all {
			return need{auth.CollResource("", ""), []string{"changeStream", "find"}}
		}
	}
	if c, ok := req.First().StringValueOK(); ok {
		return need{auth.CollResource(req.DB, c), []string{"changeStream"}}
	}
	return need{auth.DBResource(req.DB), []string{"changeStream"}}
}

func stagesNeeds(dbName string, stages bsoncore.Array, out *[]need) {
	vals, _ := stages.Values()
	for _, sv := range vals {
		st, ok := sv.DocumentOK()
		if !ok {
			continue
		}
		el, err := st.IndexErr(0)
		if err != nil {
			continue
		}
		arg := el.Value()
		switch el.Key() {
		case "$lookup", "$graphLookup", "$unionWith":
			target := auth.CollResource(dbName, "")
			if s, ok := arg.StringValueOK(); ok {
				target.Collection = s
			} else if d, ok := arg.DocumentOK(); ok {
				if s, ok := d.Lookup("from").StringValueOK(); ok {
					target.Collection = s
				} else if s, ok := d.Lookup("coll").StringValueOK(); ok {
					target.Collection = s
				}
				if p, ok := d.Lookup("pipeline").ArrayOK(); ok {
					stagesNeeds(dbName, p, out)
				}
			}
			*out = append(*out, need{target, []string{"find"}})
		case "$out", "$merge":
			target := auth.CollResource(dbName, "")
			if s, ok := arg.StringValueOK(); ok {
				target.Collection = s
			} else if d, ok := arg.DocumentOK(); ok {
				into := d
				if el.Key() == "$merge" {
					if s, ok := d.Lookup("into").StringValueOK(); ok {
						target.Collection = s
					}
					into, _ = d.Lookup("into").DocumentOK()
				}
				if into != nil {
					if s, ok := into.Lookup("db").StringValueOK(); ok {
						target.DB = s
					}
					if s, ok := into.Lookup("coll").StringValueOK(); ok {
						target.Collection = s
					}
				}
			}
			acts := []string{"insert", "remove"}
			if el.Key() == "$merge" {
				acts = []string{"insert", "update"}
			}
			*out = append(*out, need{target, acts})
		}
	}
}

// explainNeeds: explain needs what the explained command needs.
func explainNeeds(req *Request) []need {
	inner, err := req.Document("explain")
	if err != nil || inner == nil {
		return []need{{auth.DBResource(req.DB), []string{"find"}}}
	}
	sub, err := NewRequest(inner, req.DB, nil)
	if err != nil {
		return []need{{auth.DBResource(req.DB), []string{"find"}}}
	}
	rule, ok := privilegeRules[sub.Name]
	if !ok || rule.pre || rule.anyUser || sub.Name == "explain" {
		return []need{{auth.DBResource(req.DB), []string{"find"}}}
	}
	return rule.needs(nil, sub)
}

// renameNeeds: the source is read and dropped, the target inserted into
// and indexed (MongoDB's rule across databases, which also covers one).
func renameNeeds(req *Request) []need {
	to, _ := req.Arg("to")
	acts := []string{"insert", "createIndex"}
	if drop, _ := req.Bool("dropTarget", false); drop {
		acts = append(acts, "dropCollection")
	}
	return []need{{nsResource(to), acts}}
}

// rolesOf reads a roles array: names (the command's database) or {role, db}.
func rolesOf(req *Request, field string) []auth.RoleName {
	var out []auth.RoleName
	for _, rv := range req.arrayValues(field) {
		if r, err := roleName(req.DB, rv); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// grantNeeds: granting a role needs grantRole on the role's database.
func grantNeeds(field string) func(req *Request) []need {
	return func(req *Request) []need { return roleNeeds(req, field, "grantRole") }
}

func revokeNeeds(req *Request) []need { return roleNeeds(req, "roles", "revokeRole") }

func roleNeeds(req *Request, field, action string) []need {
	out := []need{}
	for _, r := range rolesOf(req, field) {
		out = append(out, need{auth.DBResource(r.DB), []string{action}})
	}
	if len(out) == 0 {
		out = append(out, need{auth.DBResource(req.DB), []string{action}})
	}
	return out
}

// updateUserNeeds: a new password needs changePassword, new roles
// grantRole and revokeRole, new customData changeCustomData.
func updateUserNeeds(req *Request) []need {
	var out []need
	dbRes := auth.DBResource(req.DB)
	if _, ok := req.Arg("pwd"); ok {
		out = append(out, need{dbRes, []string{"changePassword"}})
	}
	if _, ok := req.Arg("customData"); ok {
		out = append(out, need{dbRes, []string{"changeCustomData"}})
	}
	if _, ok := req.Arg("roles"); ok {
		out = append(out, roleNeeds(req, "roles", "grantRole")...)
		out = append(out, need{dbRes, []string{"revokeRole"}})
	}
	return out
}

// cloneCollectionAsCapped reads its source (find, the rule's own action)
// and creates and fills its target, as MongoDB requires.
func cloneCappedNeeds(req *Request) []need {
	to, _ := req.String("toCollection", "")
	return []need{{auth.CollResource(req.DB, to), []string{"insert", "createCollection"}}}
}
