package auth

// MongoDB's built-in roles and the privilege actions each grants, from its
// "Built-In Roles" reference (7.0). Database roles exist in every database
// and apply to it; the cluster and any-database roles exist only in admin.

// RoleName names a role: its name and the database it is defined in.
type RoleName struct {
	Role, DB string
}

// The actions of the database roles, on the role's database.
var (
	readActions = []string{"changeStream", "collStats", "dbHash", "dbStats", "find", "killCursors", "listCollections", "listIndexes", "listSearchIndexes"}

	readWriteActions = append(slicesOf(readActions), "convertToCapped", "createCollection", "createIndex", "createSearchIndexes",
		"dropCollection", "dropIndex", "dropSearchIndex", "insert", "remove", "renameCollectionSameDB", "update", "updateSearchIndex")

	dbAdminActions = []string{"bypassDocumentValidation", "collMod", "collStats", "compact", "convertToCapped", "createCollection",
		"createIndex", "dbStats", "dropCollection", "dropDatabase", "dropIndex", "enableProfiler", "listCollections", "listIndexes",
		"planCacheIndexFilter", "planCacheRead", "planCacheWrite", "reIndex", "renameCollectionSameDB", "storageDetails", "validate"}
	// dbAdmin reads the profiler's collection.
	dbAdminProfileActions = []string{"changeStream", "collStats", "convertToCapped", "createCollection", "dbHash", "dbStats",
		"dropCollection", "find", "killCursors", "listCollections", "listIndexes", "planCacheRead"}

	userAdminActions = []string{"changeCustomData", "changePassword", "createRole", "createUser", "dropRole", "dropUser",
		"grantRole", "revokeRole", "setAuthenticationRestriction", "viewRole", "viewUser"}
)

// The cluster roles' actions on the cluster resource.
var (
	clusterMonitorActions = []string{"checkFreeMonitoringStatus", "connPoolStats", "getClusterParameter", "getCmdLineOpts", "getDefaultRWConcern", "getLog",
		"getParameter", "getShardMap", "hostInfo", "inprog", "listDatabases", "listSessions", "listShards", "netstat",
		"replSetGetConfig", "replSetGetStatus", "serverStatus", "shardingState", "top", "useUUID"}
	// clusterMonitor's actions on every database.
	clusterMonitorAnyDBActions = []string{"collStats", "dbHash", "dbStats", "indexStats", "useUUID"}

	clusterManagerActions = []string{"addShard", "appendOplogNote", "applicationMessage", "cleanupOrphaned", "enableSharding", "flushRouterConfig",
		"getClusterParameter", "getDefaultRWConcern", "listSessions", "listShards", "removeShard", "replSetConfigure", "replSetGetConfig",
		"replSetGetStatus", "replSetStateChange", "resync", "setClusterParameter", "setDefaultRWConcern", "setFeatureCompatibilityVersion"}

	// clusterManager's actions on every database: sharding it and its
	// collections, and moving and splitting their chunks.
	clusterManagerAnyDBActions = []string{"clearJumboFlag", "enableSharding", "moveChunk", "refineCollectionShardKey", "splitChunk", "splitVector"}
	// clusterManager's actions on the config database (the balancer's
	// settings, zones).
	clusterManagerConfigActions = []string{"collStats", "dbHash", "dbStats", "find", "insert", "killCursors", "listCollections",
		"listIndexes", "remove", "update"}

	hostManagerActions = []string{"applicationMessage", "closeAllDatabases", "flushRouterConfig", "fsync", "invalidateUserCache",
		"killAnyCursor", "killAnySession", "killop", "logRotate", "resync", "setParameter", "shutdown", "touch", "unlock"}
)

// BuiltinRoleNames lists the roles Builtin knows, in MongoDB's order (the
// cluster-wide ones exist only on admin). rolesInfo lists them with
// showBuiltinRoles; TestBuiltinRoleNames keeps the list and Builtin agreed.
var BuiltinRoleNames = []string{"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", "clusterMonitor", "clusterManager",
	"hostManager", "clusterAdmin", "readAnyDatabase", "readWriteAnyDatabase", "userAdminAnyDatabase", "dbAdminAnyDatabase",
	"backup", "restore", "root"}

// Builtin is the privileges of the built-in role r, and whether r is one.
func Builtin(r RoleName) (Privileges, bool) {
	db := r.DB
	switch r.Role {
	case "read":
		return Privileges{{DBResource(db), readActions}}, true
	case "readWrite":
		return Privileges{{DBResource(db), readWriteActions}}, true
	case "dbAdmin":
		return Privileges{{DBResource(db), dbAdminActions}, {CollResource(db, "system.profile"), dbAdminProfileActions}}, true
	case "userAdmin":
		return Privileges{{DBResource(db), userAdminActions}}, true
	case "dbOwner":
		return Privileges{{DBResource(db), readWriteActions}, {DBResource(db), dbAdminActions},
			{CollResource(db, "system.profile"), dbAdminProfileActions}, {DBResource(db), userAdminActions}}, true
	}
	if db != "admin" {
		return nil, false
	}
	any := DBResource("")
	users := []Privilege{{CollResource("admin", "system.users"), []string{"find", "insert", "remove", "update", "collStats", "dbHash", "dbStats", "listCollections", "listIndexes", "killCursors"}},
		{CollResource("admin", "system.roles"), []string{"find", "insert", "remove", "update", "collStats", "dbHash", "dbStats", "listCollections", "listIndexes", "killCursors"}}}
	switch r.Role {
	case "clusterMonitor":
		return Privileges{{Cluster, clusterMonitorActions}, {any, clusterMonitorAnyDBActions}}, true
	case "clusterManager":
		return clusterManager(any), true
	case "hostManager":
		return Privileges{{Cluster, hostManagerActions}}, true
	case "clusterAdmin":
		return append(Privileges{{Cluster, clusterMonitorActions}, {any, clusterMonitorAnyDBActions},
			{Cluster, hostManagerActions}, {any, []string{"dropDatabase"}}}, clusterManager(any)...), true
	case "readAnyDatabase":
		return Privileges{{any, readActions}, {Cluster, []string{"listDatabases"}}}, true
	case "readWriteAnyDatabase":
		return Privileges{{any, readWriteActions}, {Cluster, []string{"listDatabases"}}}, true
	case "userAdminAnyDatabase":
		return append(Privileges{{any, userAdminActions}, {Cluster, []string{"authSchemaUpgrade", "invalidateUserCache", "listDatabases"}}}, users...), true
	case "dbAdminAnyDatabase":
		return Privileges{{any, dbAdminActions}, {Resource{Collection: "system.profile"}, dbAdminProfileActions}, {Cluster, []string{"listDatabases"}}}, true
	case "backup":
		return append(Privileges{{any, []string{"find", "listCollections", "listIndexes", "collStats", "dbStats", "dbHash"}},
			{Cluster, []string{"appendOplogNote", "getParameter", "listDatabases", "serverStatus", "setUserWriteBlockMode"}}}, users...), true
	case "restore":
		return append(Privileges{{any, []string{"bypassDocumentValidation", "changeCustomData", "changePassword", "collMod", "convertToCapped",
			"createCollection", "createIndex", "createRole", "createUser", "dropCollection", "dropRole", "dropUser", "grantRole",
			"insert", "remove", "revokeRole", "update", "viewRole", "viewUser", "find", "listCollections", "listIndexes"}},
			{Cluster, []string{"getParameter", "listDatabases", "setUserWriteBlockMode"}}}, users...), true
	case "root":
		var all Privileges
		for _, name := range []string{"readWriteAnyDatabase", "dbAdminAnyDatabase", "userAdminAnyDatabase", "clusterAdmin", "restore", "backup"} {
			p, _ := Builtin(RoleName{name, "admin"})
			all = append(all, p...)
		}
		return all, true
	}
	return nil, false
}

// clusterManager is the clusterManager role's privileges (any: every
// database).
func clusterManager(any Resource) Privileges {
	return Privileges{{Cluster, clusterManagerActions}, {any, clusterManagerAnyDBActions}, {DBResource("config"), clusterManagerConfigActions}}
}

func slicesOf(s []string) []string { return append([]string(nil), s...) }
