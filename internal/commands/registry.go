package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

type handler func(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error)

// kind says which of the generic read and write concerns a command takes
// (see checkConcerns in generic.go).
type kind uint8

const (
	// kindOther takes neither: readConcern only at level local (the
	// default) and no writeConcern, as MongoDB's default Command does.
	kindOther kind = iota
	// kindRead takes every read concern level.
	kindRead
	// kindWrite takes a writeConcern.
	kindWrite
)

type command struct {
	run       handler
	adminOnly bool
	// testOnly commands exist only with enableTestCommands (cmd_failpoint.go).
	testOnly bool
	help     string
	kind     kind
	// apiV1: the command is in Stable API version 1 (apiStrict: true
	// refuses every other command with APIStrictError).
	apiV1 bool
	// fields are the command's own arguments. Invariant "One field rule":
	// Run refuses any other field except the generic arguments
	// (genericArgs) with 40415, and any field given twice with 40413,
	// before the handler sees the command.
	fields []string
	// notYet are arguments MongoDB accepts that Cairn does not honour yet:
	// given with a value other than false or null, Run refuses them with
	// InvalidOptions (a boolean option set to false asks for nothing).
	notYet []string
	// unstable are the fields MongoDB's IDL marks unstable: not part of
	// API version 1, so apiStrict: true refuses them (APIStrictError).
	unstable []string
	// strict checks, under apiStrict: true, what of the command's content
	// is outside API version 1 (aggregate's stages); nil: nothing is.
	strict func(req *Request) error
	// nested declares the fields of a field's documents (each element's,
	// for an array): update's statements, aggregate's cursor. The one
	// field rule applies to them too ("update.updates.mutli" is 40415).
	nested map[string][]string
	// onView: the command serves a view's namespace (views.go); Run refuses
	// every other command whose first field names a view with
	// CommandNotSupportedOnView, as MongoDB does (invariant "Views are
	// read-only").
	onView bool
	// table classifies a field's key for checkFields (fieldTable), built
	// with the registry; nil for a command made elsewhere (a test's),
	// which checkFields classifies from the lists.
	table *fieldTable
	// open: the command's other fields are data, not options (getParameter
	// and setParameter name parameters, currentOp's fields are a filter,
	// serverStatus's name sections), or, for hello, fields a newer driver
	// may add (MongoDB's hello is not strict: the Go driver 2.10 sends
	// backpressure), so only duplicates and notYet fields are refused.
	open bool
}

// alias is c under another name, its help saying so.
func alias(c command, of string) command {
	c.help = "alias of " + of
	return c
}

// args splits a space-separated field list (the registry's shorthand).
func args(s string) []string { return strings.Fields(s) }

// registry lists every command by name, alphabetically; aliases point at the
// same handler. Names are case-sensitive, as in MongoDB.
var registry map[string]command

func init() {
	// Declarations shared by aliases or too long for one line.
	findArgs := args("filter sort projection hint skip limit batchSize singleBatch let allowDiskUse collation min max tailable allowPartialResults noCursorTimeout returnKey showRecordId")
	findArgs = append(findArgs, "awaitData", "oplogReplay")
	findNotYet := args("readOnce")
	create := command{run: cmdCreate, kind: kindWrite, apiV1: true, help: "create a collection or a view", onView: true,
		fields: args("idGenerator collation validator validationLevel validationAction idIndex autoIndexId flags capped size max viewOn pipeline versioning versionField timeseries expireAfterSeconds clusteredIndex changeStreamPreAndPostImages"),
		notYet: args("storageEngine indexOptionDefaults encryptedFields temp")}
	findAndModify := command{run: cmdFindAndModify, kind: kindWrite, apiV1: true, help: "update or remove one document and return it",
		fields: args("query sort remove update new fields upsert arrayFilters collation hint let bypassDocumentValidation bypassEmptyTsReplacement")}
	cursor := map[string][]string{"cursor": args("batchSize")}
	hello := args("helloOk client compression saslSupportedMechs topologyVersion maxAwaitTimeMS")
	hello = append(hello, "speculativeAuthenticate")
	helloNotYet := args("loadBalanced")
	// The user commands (cmd_users.go); writeConcern is generic.
	userFields := args("pwd customData roles mechanisms digestPassword")
	userNotYet := args("authenticationRestrictions")
	registry = map[string]command{
		"abortTransaction": {run: cmdTransactionEnd, adminOnly: true, kind: kindWrite, apiV1: true, help: "abort a multi-document transaction"},
		"aggregate": {run: cmdAggregate, kind: kindRead, apiV1: true, onView: true, help: "run an aggregation pipeline",
			fields: args("pipeline explain allowDiskUse cursor collation let bypassDocumentValidation hint needsMerge"), nested: cursor, unstable: args("explain"), strict: strictPipeline},
		"advise":                  {run: cmdAdvise, help: "data-model advice from a sample of a collection's documents, its indexes and profiled queries", fields: args("sampleSize")},
		"authenticate":            {run: cmdAuthenticate, help: "authenticate with the client's TLS certificate (MONGODB-X509, on $external)", fields: args("mechanism user")},
		"buildInfo":               {run: cmdBuildInfo, help: "server version and build details"},
		"buildinfo":               {run: cmdBuildInfo, help: "alias of buildInfo"},
		"collMod":                 {run: cmdCollMod, kind: kindWrite, apiV1: true, onView: true, help: "change collection, index and view options", fields: args("index validator validationLevel validationAction dryRun cappedSize cappedMax viewOn pipeline versioning changeStreamPreAndPostImages expireAfterSeconds"), notYet: args("timeseries")},
		"collStats":               {run: cmdCollStats, help: "collection statistics", fields: args("scale")},
		"commitTransaction":       {run: cmdTransactionEnd, adminOnly: true, kind: kindWrite, apiV1: true, help: "commit a multi-document transaction", fields: args("commitTimestamp")},
		"cloneCollectionAsCapped": {run: cmdCloneCollectionAsCapped, kind: kindWrite, help: "copy a collection into a new capped collection", fields: args("toCollection size")},
		"compact":                 {run: cmdCompact, kind: kindWrite, help: "compact a collection's documents and indexes on disk", fields: args("force"), notYet: args("freeSpaceTargetMB")},
		"configureFailPoint":      {run: cmdConfigureFailPoint, adminOnly: true, testOnly: true, help: "modifies the settings of a fail point (test commands only)", fields: args("mode data")},
		"connectionStatus":        {run: cmdConnectionStatus, help: "authentication state of this connection", fields: args("showPrivileges")},
		"convertToCapped":         {run: cmdConvertToCapped, kind: kindWrite, help: "make a collection capped, keeping its newest documents that fit", fields: args("size")},
		"count": {run: cmdCount, kind: kindRead, apiV1: true, onView: true, help: "count documents",
			fields: args("query limit skip hint collation")},
		"create":        create,
		"createBackup":  {run: cmdCreateBackup, adminOnly: true, help: "write a consistent copy of the data directory to backupDir on the server's host, online", fields: args("backupDir")},
		"createIndexes": {run: cmdCreateIndexes, kind: kindWrite, apiV1: true, help: "create indexes", fields: args("indexes commitQuorum ignoreUnknownIndexOptions")},
		"currentOp":     {run: cmdCurrentOp, adminOnly: true, open: true, help: "operations in progress"},
		"dataSize":      {run: cmdDataSize, kind: kindRead, help: "bytes and count of a collection's documents", fields: args("estimate keyPattern min max maxSize maxObjects")},
		"dbStats":       {run: cmdDBStats, help: "database statistics", fields: args("scale freeStorage")},
		"dbstats":       {run: cmdDBStats, help: "alias of dbStats", fields: args("scale freeStorage")},
		"delete": {run: cmdDelete, kind: kindWrite, apiV1: true, help: "delete documents",
			fields: args("deletes ordered let stmtIds"), nested: map[string][]string{"deletes": args("q limit collation hint")}},
		"distinct": {run: cmdDistinct, kind: kindRead, onView: true, help: "distinct values of a field",
			fields: args("key query collation")},
		"drop":                     {run: cmdDrop, kind: kindWrite, apiV1: true, onView: true, help: "drop a collection"},
		"createRole":               {run: cmdCreateRole, kind: kindWrite, help: "create a user-defined role", fields: args("privileges roles"), notYet: userNotYet},
		"createUser":               {run: cmdCreateUser, kind: kindWrite, help: "create a user", fields: userFields, notYet: userNotYet},
		"dropAllUsersFromDatabase": {run: cmdDropAllUsersFromDatabase, kind: kindWrite, apiV1: true, help: "drop every user of a database"},
		"dropRole":                 {run: cmdDropRole, kind: kindWrite, help: "drop a user-defined role"},
		"dropUser":                 {run: cmdDropUser, kind: kindWrite, help: "drop a user"},
		"grantPrivilegesToRole":    {run: cmdRolePrivileges(true), kind: kindWrite, help: "add privileges to a user-defined role", fields: args("privileges")},
		"grantRolesToUser":         {run: cmdGrantRevoke(true), kind: kindWrite, help: "grant roles to a user", fields: args("roles")},
		"logout":                   {run: cmdLogout, help: "end the connection's authentication"},
		"_historyInstall":          {run: cmdHistoryInstall, kind: kindWrite, help: "write a migrated chunk's document histories (a versioned collection's migration recipient)", fields: args("histories horizon")},
		"_historyPurge":            {run: cmdHistoryPurge, kind: kindWrite, help: "remove documents of a versioned collection with their whole histories (a migration's range deletion)", fields: args("ids")},
		"_historyRead":             {run: cmdHistoryRead, help: "read documents' histories, or list deleted documents, of a versioned collection (a migration's donor)", fields: args("ids from deleted startAfter")},
		"revertDocument":           {run: cmdRevertDocument, kind: kindWrite, help: "make an old version of a versioned collection's document its latest again", fields: args("_id version")},
		"revokePrivilegesFromRole": {run: cmdRolePrivileges(false), kind: kindWrite, help: "remove privileges from a user-defined role", fields: args("privileges")},
		"revokeRolesFromUser":      {run: cmdGrantRevoke(false), kind: kindWrite, help: "revoke roles from a user", fields: args("roles")},
		"startSession":             {run: cmdStartSession, apiV1: true, help: "start a logical session"},
		"saslContinue":             {run: cmdSaslContinue, help: "continue a SASL authentication", fields: args("conversationId payload")},
		"saslStart":                {run: cmdSaslStart, help: "begin a SASL authentication (SCRAM-SHA-1, SCRAM-SHA-256)", fields: args("mechanism payload options autoAuthorize")},
		"rolesInfo":                {run: cmdRolesInfo, help: "describe roles", fields: args("showPrivileges showBuiltinRoles showAuthenticationRestrictions")},
		"updateRole":               {run: cmdUpdateRole, kind: kindWrite, help: "replace a user-defined role's privileges or roles", fields: args("privileges roles"), notYet: userNotYet},
		"updateUser":               {run: cmdUpdateUser, kind: kindWrite, help: "change a user's password, roles or custom data", fields: userFields, notYet: userNotYet},
		"usersInfo":                {run: cmdUsersInfo, help: "describe users", fields: args("showCredentials showPrivileges showCustomData showAuthenticationRestrictions filter")},
		"dropDatabase":             {run: cmdDropDatabase, kind: kindWrite, apiV1: true, help: "drop a database"},
		"dropIndexes":              {run: cmdDropIndexes, kind: kindWrite, apiV1: true, help: "drop indexes", fields: args("index")},
		"endSessions":              {run: cmdEndSessions, apiV1: true, help: "end logical sessions"},
		"explain":                  {run: cmdExplain, kind: kindRead, apiV1: true, help: "explain a command's plan", fields: args("verbosity")},
		"find": {run: cmdFind, kind: kindRead, apiV1: true, onView: true, help: "query documents", fields: findArgs, notYet: findNotYet,
			unstable: args("min max tailable noCursorTimeout returnKey showRecordId awaitData oplogReplay readOnce")},
		"findAndModify":       findAndModify,
		"findandmodify":       alias(findAndModify, "findAndModify"),
		"fsync":               {run: cmdFsync, adminOnly: true, help: "sync and flush the data files; lock: true then holds writes until fsyncUnlock", fields: args("lock")},
		"fsyncUnlock":         {run: cmdFsyncUnlock, adminOnly: true, help: "release one fsync lock; writes resume when none is held"},
		"getClusterParameter": {run: cmdGetClusterParameter, adminOnly: true, help: "read cluster parameters (changeStreamOptions)", notYet: args("omitInFTDC")},
		"getCmdLineOpts":      {run: cmdGetCmdLineOpts, adminOnly: true, help: "the server's command line"},
		"getDiagnosticData":   {run: cmdGetDiagnosticData, adminOnly: true, help: "diagnostic data (serverStatus) for monitoring tools"},
		"getLog":              {run: cmdGetLog, adminOnly: true, help: "recent log lines"},
		"getMore":             {run: cmdGetMore, apiV1: true, help: "next batch of a cursor", fields: args("collection batchSize")},
		"getParameter":        {run: cmdGetParameter, adminOnly: true, open: true, help: "read server parameters"},
		"hello":               {run: cmdHello, apiV1: true, open: true, help: "handshake and topology", fields: hello, notYet: helloNotYet},
		"hostInfo":            {run: cmdHostInfo, help: "the host's hardware and OS"},
		"insert": {run: cmdInsert, kind: kindWrite, apiV1: true, help: "insert documents",
			fields: args("documents ordered bypassDocumentValidation bypassEmptyTsReplacement stmtIds")},
		"isMaster":                       {run: cmdIsMaster, open: true, help: "legacy handshake", fields: hello, notYet: helloNotYet},
		"ismaster":                       {run: cmdIsMaster, open: true, help: "legacy handshake", fields: hello, notYet: helloNotYet},
		"killAllSessions":                {run: cmdKillAllSessions, help: "kill every session of the listed users (all for an empty list): their operations and cursors"},
		"killAllSessionsByPattern":       {run: cmdKillAllSessionsByPattern, help: "kill the sessions matching any pattern ({lsid}, {uid}, {users}; all for an empty list)"},
		"killCursors":                    {run: cmdKillCursors, apiV1: true, onView: true, help: "close cursors", fields: args("cursors")},
		"killOp":                         {run: cmdKillOp, adminOnly: true, help: "interrupt an operation in progress", fields: args("op")},
		"killSessions":                   {run: cmdKillSessions, help: "kill the user's named sessions (all of them for an empty list): their operations and cursors"},
		"listCollections":                {run: cmdListCollections, apiV1: true, help: "list collections", fields: args("filter nameOnly authorizedCollections cursor"), nested: cursor},
		"listCommands":                   {run: cmdListCommands, help: "list the commands with their help"},
		"listDatabases":                  {run: cmdListDatabases, adminOnly: true, apiV1: true, help: "list databases", fields: args("filter nameOnly authorizedDatabases")},
		"listIndexes":                    {run: cmdListIndexes, apiV1: true, help: "list indexes", fields: args("cursor"), nested: cursor},
		"logRotate":                      {run: cmdLogRotate, adminOnly: true, help: "rotate the server's log file (--logRotate: rename or reopen)"},
		"ping":                           {run: cmdNoopOK, apiV1: true, help: "check the server answers"},
		"planCacheClear":                 {run: cmdPlanCacheClear, help: "forget a collection's cached query plans", fields: args("query sort projection collation")},
		"refreshSessions":                {run: cmdRefreshSessions, apiV1: true, help: "keep logical sessions alive"},
		"prepareTransaction":             {run: cmdPrepareTransaction, adminOnly: true, kind: kindWrite, help: "prepare a transaction for two-phase commit: make its writes durable and hold them until commitTransaction with a commitTimestamp or abortTransaction (a shard, for its coordinator)"},
		"profile":                        {run: cmdProfile, help: "set or read the database profiler's level, slowms, sampleRate and filter", fields: args("slowms sampleRate filter")},
		"renameCollection":               {run: cmdRenameCollection, adminOnly: true, kind: kindWrite, help: "rename a collection", fields: args("to dropTarget"), notYet: args("stayTemp")},
		"replSetFreeze":                  {run: cmdReplSetFreeze, adminOnly: true, help: "keep this secondary from standing for election for a number of seconds (0: unfreeze)"},
		"replSetGetConfig":               {run: cmdReplSetGetConfig, adminOnly: true, help: "the replica set's configuration (a standalone has none)", fields: args("commitmentStatus includeNewlyAddedFields")},
		"replSetGetStatus":               {run: cmdReplSetGetStatus, adminOnly: true, help: "the replica set's status (a standalone has none)", fields: args("initialSync")},
		"replSetInitiate":                {run: cmdReplSetInitiate, adminOnly: true, help: "start a replica set from its configuration document"},
		"replSetReconfig":                {run: cmdReplSetReconfig, adminOnly: true, help: "change the replica set's configuration (add or remove members)", fields: args("force")},
		"replSetStepDown":                {run: cmdReplSetStepDown, adminOnly: true, help: "make the primary hand over to a caught-up secondary", fields: args("secondaryCatchUpPeriodSecs force")},
		"serverStatus":                   {run: cmdServerStatus, open: true, help: "server counters"},
		"setClusterParameter":            {run: cmdSetClusterParameter, adminOnly: true, kind: kindWrite, help: "set a cluster parameter (changeStreamOptions)"},
		"setFeatureCompatibilityVersion": {run: cmdSetFeatureCompatibilityVersion, adminOnly: true, help: "set the feature compatibility version (7.0 only)", fields: args("confirm")},
		"setParameter":                   {run: cmdSetParameter, adminOnly: true, open: true, help: "change server parameters"},
		"shutdown":                       {run: cmdShutdown, adminOnly: true, help: "stop the server cleanly (force; timeoutSecs for operations in progress)", fields: args("force timeoutSecs")},
		"top":                            {run: cmdTop, adminOnly: true, help: "time and counts of each collection's commands"},
		"update": {run: cmdUpdate, kind: kindWrite, apiV1: true, help: "update documents",
			fields: args("updates ordered let bypassDocumentValidation bypassEmptyTsReplacement stmtIds"),
			nested: map[string][]string{"updates": args("q u upsert multi arrayFilters collation hint c")}},
		"validate":         {run: cmdValidate, help: "check a collection's documents and indexes", fields: args("full background enforceFastCount metadata checkBSONConformance"), notYet: args("repair")},
		"waitForFailPoint": {run: cmdWaitForFailPoint, adminOnly: true, testOnly: true, help: "wait for a fail point to be entered a certain number of times (test commands only)", fields: args("timesEntered")},
		"whatsmyuri":       {run: cmdWhatsMyURI, help: "this connection's client address"},
	}
	// Internal sharding commands (sharding.go): members run them on the
	// primary, with a writeConcern.
	for name, c := range shardingInternal {
		registry[name] = command{run: cmdSharding, adminOnly: true, kind: kindWrite, help: c.help, fields: args(c.fields)}
	}
	commandNames = make(map[string]*namedCommand, len(registry))
	for name, c := range registry {
		c.table = newFieldTable(&c)
		registry[name] = c
		commandNames[name] = &namedCommand{name: name, cmd: c}
	}
}

// commandNames interns the registry's names (Request.Reset) and holds a
// copy of each one's command, so that a request finds its command with the
// one lookup that names it.
var commandNames map[string]*namedCommand

// namedCommand is a registered command and its name.
type namedCommand struct {
	name string
	cmd  command
}

// commandName is key as a string: the registry's own for a known command,
// so that naming a request allocates nothing, with the command (nil for a
// name the registry does not know).
func commandName(key []byte) (string, *namedCommand) {
	if n, ok := commandNames[string(key)]; ok {
		return n.name, n
	}
	return string(key), nil
}

func lookup(name string) (command, bool) {
	c, ok := registry[name]
	return c, ok
}

// cmdNoopOK answers {ok: 1}: ping.
func cmdNoopOK(_ context.Context, _ *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	return OK(dst), nil
}
