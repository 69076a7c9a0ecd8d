package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds the generic arguments: the fields MongoDB accepts on every
// command (src/mongo/idl/generic_argument.idl), and what a Cairn standalone
// does with each. Every command that walks its own fields skips exactly
// these (isGeneric), so a driver's maxTimeMS or lsid is never mistaken for
// an option or a parameter.

type argKind uint8

const (
	argUnknown argKind = iota
	// argHonoured: Cairn gives the argument its meaning (below, per name).
	argHonoured
	// argInternal: an argument only cluster members and routers send;
	// refused, as nothing in a standalone Cairn can honour it.
	argInternal
)

// genericArgs are MongoDB 7.0's generic arguments. The honoured ones:
//   - $db: the database (NewRequest).
//   - lsid: the command's logical session (sessions.go, package session):
//     checked out for the command's duration, remembered by its cursors.
//   - txnNumber: makes insert, update, delete and findAndModify retryable
//     writes (sessions.go); with autocommit and startTransaction, binds the
//     command to a multi-document transaction on a replica-set member
//     (transactions.go), refused as a MongoDB standalone refuses them.
//   - readConcern, writeConcern: checked as a standalone checks them
//     (checkConcerns); the levels a standalone serves are what every Cairn
//     read and acknowledged write already gives (a write is acknowledged
//     after its group is synced, which satisfies j and fsync).
//   - apiVersion, apiStrict, apiDeprecationErrors: the Stable API
//     (checkAPI).
//   - maxTimeMS: the deadline of the command's context (operation.go).
//   - comment: shown with the command in currentOp and the log.
//   - $readPreference: a standalone serves every mode, as mongod does.
//   - $clusterTime: gossip a standalone mongod also ignores.
var genericArgs = map[string]argKind{
	"$db": argHonoured, "lsid": argHonoured, "txnNumber": argHonoured, "autocommit": argHonoured,
	"startTransaction": argHonoured, "readConcern": argHonoured, "writeConcern": argHonoured,
	"apiVersion": argHonoured, "apiStrict": argHonoured, "apiDeprecationErrors": argHonoured,
	"maxTimeMS": argHonoured, "comment": argHonoured, "$readPreference": argHonoured, "$clusterTime": argHonoured,

	"stmtId": argInternal, "clientOperationKey": argInternal, "$audit": argInternal, "$client": argInternal,
	"$configServerState": argInternal, "allowImplicitCollectionCreation": argInternal,
	"$oplogQueryData": argInternal, "$queryOptions": argInternal, "$replData": argInternal,
	"databaseVersion": argInternal, "shardVersion": argInternal, "tracking_info": argInternal,
	"coordinator": argInternal, "maxTimeMSOpOnly": argInternal, "$configTime": argInternal,
	"$topologyTime": argInternal, "txnRetryCounter": argInternal, "mayBypassWriteBlocking": argInternal,
	"$tenant": argInternal, "expectPrefix": argInternal,
}

// isGeneric reports whether a field is a generic argument rather than one
// of the command's own (for commands that walk their fields).
func isGeneric(name string) bool { return genericArgs[name] != argUnknown }

// genericKind is genericArgs[key] for every command's every field
// (checkFields): most fields are a command's own, and a key whose length
// and first byte no generic argument has is answered without hashing it.
func genericKind(key []byte) argKind {
	if n := len(key); n == 0 || n < len(genericShapes) && genericShapes[n][key[0]/64]&(1<<(key[0]%64)) == 0 {
		return argUnknown
	}
	return genericArgs[string(key)]
}

// genericShapes[n] has bit b set when a generic argument of length n
// starts with byte b (a longer key is looked up in genericArgs).
var genericShapes = func() (shapes [40][4]uint64) {
	for name := range genericArgs {
		if len(name) < len(shapes) {
			shapes[len(name)][name[0]/64] |= 1 << (name[0] % 64)
		}
	}
	return shapes
}()

// generic holds the generic arguments of one request.
type generic struct {
	lsid, txnNumber, autocommit, startTransaction bsoncore.Value
	readConcern, writeConcern, readPreference     bsoncore.Value
	apiVersion, apiStrict, apiDeprecationErrors   bsoncore.Value
	internal                                      string // the first internal argument given
	shardVersioned                                bool   // shardVersion or databaseVersion (sharding.go)
}

// genericOf collects the generic arguments among elems; mask marks them
// among the first 64 (checkFields), past which each field is looked up.
func genericOf(elems []field, mask uint64) generic {
	var g generic
	for i := 1; i < len(elems); i++ {
		if i < 64 && mask&(1<<i) == 0 {
			continue
		}
		f := &elems[i]
		k, v := f.key(), f.value() // compared, not converted: no allocation per field
		switch string(k) {
		case "lsid":
			g.lsid = v
		case "txnNumber":
			g.txnNumber = v
		case "autocommit":
			g.autocommit = v
		case "startTransaction":
			g.startTransaction = v
		case "readConcern":
			g.readConcern = v
		case "writeConcern":
			g.writeConcern = v
		case "$readPreference":
			g.readPreference = v
		case "apiVersion":
			g.apiVersion = v
		case "apiStrict":
			g.apiStrict = v
		case "apiDeprecationErrors":
			g.apiDeprecationErrors = v
		case "shardVersion", "databaseVersion":
			g.shardVersioned = true
		case "$db", "comment", "$clusterTime", "maxTimeMS": // maxTimeMS: operation.go
			// honoured where they are read (see genericArgs)
		default:
			if genericKind(k) == argInternal && g.internal == "" {
				g.internal = string(k)
			}
		}
	}
	return g
}

// checkGeneric applies the generic arguments of req to cmd in MongoDB's
// order: the Stable API, then session and transaction fields, then read and
// write concerns. The checks take the arguments by pointer: they run on
// every command, and the struct is a dozen values.
func checkGeneric(s *Session, cmd *command, req *Request, elems []field, mask uint64) error {
	g := genericOf(elems, mask)
	if g.shardVersioned && s.Env.Sharding == nil {
		return mongoerr.New(mongoerr.InvalidOptions, "shardVersion and databaseVersion are for shards: this server was not started with --shardsvr")
	}
	if g.internal != "" {
		return mongoerr.New(mongoerr.InvalidOptions, "'%s' is an argument between cluster members; a standalone Cairn does not accept it", g.internal)
	}
	if err := checkAPI(s, cmd, req.Name, &g); err != nil {
		return err
	}
	if g.apiStrict.Type == bsoncore.TypeBoolean && g.apiStrict.Boolean() {
		for i := 1; i < len(elems); i++ {
			if k := elems[i].key(); contains(cmd.unstable, k) {
				return mongoerr.New(mongoerr.APIStrictError, "BSON field '%s.%s' is not allowed with apiStrict:true.", req.Name, k)
			}
		}
		if cmd.strict != nil {
			if err := cmd.strict(req); err != nil {
				return err
			}
		}
	}
	if err := checkSession(s, req.Name, &g); err != nil {
		return err
	}
	if err := checkStmtIDs(s, req, &g); err != nil { // retryable.go
		return err
	}
	if s.sess.inTxn { // concerns: checkTxnConcerns
		if err := checkReadPreference(g.readPreference); err != nil {
			return err
		}
		return checkWriteConcern(cmd, g.writeConcern, true, writesOutput(req))
	}
	if err := checkReadPreference(g.readPreference); err != nil {
		return err
	}
	return checkConcerns(cmd, req.Name, &g, s.Env.Repl != nil, s.Env.ClusterTimes(), writesOutput(req))
}

// checkReadPreference parses $readPreference as mongod does on every
// command; a standalone then serves any mode from itself.
func checkReadPreference(rp bsoncore.Value) error {
	if rp.Type == 0 {
		return nil
	}
	d, ok := rp.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$readPreference' is the wrong type '%s', expected type 'object'", typeName(rp.Type))
	}
	mv, err := d.LookupErr("mode")
	if err != nil {
		return mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"mode\"")
	}
	mode, ok := mv.StringValueOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "\"mode\" had the wrong type. Expected string, found %s", typeName(mv.Type))
	}
	switch mode {
	case "primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest":
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "Could not parse $readPreference mode '%s'. Only the modes 'primary', 'primaryPreferred', 'secondary', 'secondaryPreferred', and 'nearest' are supported.", mode)
}

// checkAPI is MongoDB's Stable API check (initializeAPIParameters and
// enforceRequireAPIVersion). getMore never takes API parameters: a cursor
// keeps those of the command that opened it.
func checkAPI(s *Session, cmd *command, name string, g *generic) error {
	if name == "getMore" {
		for _, p := range []struct {
			name string
			v    bsoncore.Value
		}{{"apiVersion", g.apiVersion}, {"apiStrict", g.apiStrict}, {"apiDeprecationErrors", g.apiDeprecationErrors}} {
			if p.v.Type != 0 {
				return mongoerr.New(mongoerr.APIParamNotAllowed, "Cannot pass in API parameter field %s", p.name)
			}
		}
		return nil
	}
	if g.apiVersion.Type != 0 && g.apiVersion.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'apiVersion' is the wrong type '%s', expected type 'string'", typeName(g.apiVersion.Type))
	}
	for _, p := range []struct {
		name string
		v    bsoncore.Value
	}{{"apiStrict", g.apiStrict}, {"apiDeprecationErrors", g.apiDeprecationErrors}} {
		if p.v.Type != 0 && p.v.Type != bsoncore.TypeBoolean {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'bool'", p.name, typeName(p.v.Type))
		}
	}
	if g.apiVersion.Type == 0 {
		if g.apiStrict.Type != 0 || g.apiDeprecationErrors.Type != 0 {
			return mongoerr.New(mongoerr.APIParamsWithoutVersion, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
		}
		if s.Env.Params.requireAPIVersion.Load() {
			return mongoerr.New(mongoerr.APIVersionRequired, "The apiVersion parameter is required, please configure your MongoClient's API version")
		}
		return nil
	}
	if v := g.apiVersion.StringValue(); v != "1" {
		return mongoerr.New(mongoerr.APIVersionError, "API version must be \"1\"")
	}
	if g.apiStrict.Type == bsoncore.TypeBoolean && g.apiStrict.Boolean() && !cmd.apiV1 {
		return mongoerr.New(mongoerr.APIStrictError, "Provided apiStrict:true, but the command %s is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api", name)
	}
	// No command of API version 1 is deprecated, so apiDeprecationErrors
	// has nothing to refuse.
	return nil
}

// checkConcerns checks readConcern and writeConcern as a MongoDB standalone
// does: snapshot and linearizable reads and cluster times need a replica
// set; w above 1 or a tag needs replication; a command that does not read
// takes only the local level and one that does not write (an aggregate
// writes with $out or $merge: writesOutput) takes no writeConcern.
//
// On a replica set member (replicated) w is the member's to check
// (ReplicaSet.CheckWriteConcern), and "majority" reads are what every
// read is: a member applies only committed commit groups, so nothing it
// serves can be undone by a failover.
func checkConcerns(cmd *command, name string, g *generic, replicated, clusterTimes, writesOut bool) error {
	if err := checkReadConcern(cmd, name, g.readConcern, replicated, clusterTimes); err != nil {
		return err
	}
	return checkWriteConcern(cmd, g.writeConcern, replicated, writesOut)
}

// checkReadConcern: with clusterTimes (a replica-set member's mode,
// clustertime.go) afterClusterTime is taken and waited for.
func checkReadConcern(cmd *command, name string, rc bsoncore.Value, replicated, clusterTimes bool) error {
	if rc.Type == 0 {
		return nil
	}
	d, ok := rc.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern' is the wrong type '%s', expected type 'object'", typeName(rc.Type))
	}
	elems, _ := d.Elements()
	level, clusterTime := "", ""
	for _, el := range elems {
		switch el.Key() {
		case "level":
			s, ok := el.Value().StringValueOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern.level' is the wrong type '%s', expected type 'string'", typeName(el.Value().Type))
			}
			switch s {
			case "local", "available", "majority", "snapshot", "linearizable":
			default:
				return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'readConcern.level' is not a valid value.", s)
			}
			level = s
		case "afterClusterTime", "atClusterTime":
			clusterTime = el.Key()
		case "provenance":
		case "afterOpTime":
			return mongoerr.New(mongoerr.InvalidOptions, "readConcern afterOpTime is an argument between replica set members; a standalone Cairn does not accept it")
		default:
			return mongoerr.New(mongoerr.UnknownField, "BSON field 'readConcern.%s' is an unknown field.", el.Key())
		}
	}
	if name == "getMore" {
		return nil // it reads at its cursor's read concern, as mongod's takes any (snapshot sessions send theirs)
	}
	if level != "" && level != "local" && cmd.kind != kindRead {
		return mongoerr.New(mongoerr.InvalidOptions, "Command %s does not support { readConcern: { level: \"%s\" } }", name, level)
	}
	if level == "snapshot" && clusterTime == "atClusterTime" && asOfCommands[name] {
		return nil // an as-of read (readAtClusterTime)
	}
	if replicated && level == "snapshot" && clusterTime == "" && snapshotCommands[name] {
		return nil // a snapshot read at a time the member picks (readAtClusterTime)
	}
	if clusterTime == "afterClusterTime" && clusterTimes {
		clusterTime = "" // waited for in run (waitClusterTime)
	}
	if replicated && (level == "snapshot" || clusterTime != "") {
		return mongoerr.New(mongoerr.InvalidOptions, "Cairn's replica sets do not serve readConcern %s%s yet", level, clusterTime)
	}
	if replicated {
		// local, available and majority read the applied state, which
		// holds only committed groups; linearizable first confirms the
		// read index with a quorum (Run, ReplicaSet.Linearize).
		return nil
	}
	switch level {
	case "linearizable":
		return mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use read concern")
	case "snapshot":
		return mongoerr.New(mongoerr.NoReplicationEnabled, "node needs to be a replica set member to use readConcern: snapshot")
	}
	if clusterTime != "" {
		return mongoerr.New(mongoerr.IllegalOperation, "Cannot specify %s readConcern without replication enabled", clusterTime)
	}
	return nil
}

func checkWriteConcern(cmd *command, wc bsoncore.Value, replicated, writesOut bool) error {
	if wc.Type == 0 {
		return nil
	}
	d, ok := wc.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'writeConcern' is the wrong type '%s', expected type 'object'", typeName(wc.Type))
	}
	if cmd.kind != kindWrite && !writesOut {
		return mongoerr.New(mongoerr.InvalidOptions, "Command does not support writeConcern")
	}
	w, err := d.LookupErr("w")
	if err != nil || replicated {
		return nil
	}
	if mode, ok := w.StringValueOK(); ok {
		if mode != "majority" {
			return mongoerr.New(mongoerr.BadValue, "cannot use non-majority 'w' mode %s when a host is not a member of a replica set", mode)
		}
		return nil
	}
	n, ok := numberAsInt(w)
	if !ok || n < 0 {
		return mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number or a string, not %s", w)
	}
	if n > 1 {
		return mongoerr.New(mongoerr.BadValue, "cannot use 'w' > 1 when a host is not replicated")
	}
	return nil
}

// strictPipeline refuses, under apiStrict, the stages outside API version
// 1 that Cairn has ($currentOp, $indexStats and Cairn's $versions never are; $collStats only
// with count), at any depth ($facet, $lookup and $unionWith pipelines).
func strictPipeline(req *Request) error {
	stages, err := req.Docs("pipeline")
	if err != nil {
		return nil // the handler reports it
	}
	return strictStages(stages)
}

func strictStages(stages []bsoncore.Document) error {
	for _, st := range stages {
		el, err := st.IndexErr(0)
		if err != nil {
			continue
		}
		name, arg := el.Key(), el.Value()
		switch name {
		case "$currentOp", "$indexStats", "$versions":
			return mongoerr.New(mongoerr.APIStrictError, "%s is not allowed with 'apiStrict: true' in API Version 1", name)
		case "$collStats":
			if d, ok := arg.DocumentOK(); ok {
				for _, opt := range []string{"latencyStats", "storageStats", "queryExecStats"} {
					if _, err := d.LookupErr(opt); err == nil {
						return mongoerr.New(mongoerr.APIStrictError, "only the 'count' option to $collStats is supported in API Version 1")
					}
				}
			}
		case "$lookup", "$unionWith":
			if d, ok := arg.DocumentOK(); ok {
				if err := strictSubPipeline(d.Lookup("pipeline")); err != nil {
					return err
				}
			}
		case "$facet":
			if d, ok := arg.DocumentOK(); ok {
				facets, _ := d.Elements()
				for _, f := range facets {
					if err := strictSubPipeline(f.Value()); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func strictSubPipeline(v bsoncore.Value) error {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	stages := make([]bsoncore.Document, 0, len(vals))
	for _, x := range vals {
		if d, ok := x.DocumentOK(); ok {
			stages = append(stages, d)
		}
	}
	return strictStages(stages)
}

// asOfCommands read as of a cluster time with readConcern {level:
// "snapshot", atClusterTime: T}: a versioned collection from its history
// keyspace (issue #23), which a standalone node serves too; a plain one
// from the snapshot history of a replica set member (engine
// snapshot_history.go, issue #19), which a standalone refuses as MongoDB
// does (engine.NewReaderAt).
var asOfCommands = map[string]bool{"find": true, "aggregate": true, "count": true, "distinct": true}

// snapshotCommands take readConcern {level: "snapshot"} without
// atClusterTime outside a transaction, on a replica set member (MongoDB
// 7.0's list): the member picks the time and returns it as atClusterTime.
var snapshotCommands = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// readAtClusterTime returns the time a snapshot read concern reads at (0
// when the request reads the latest documents): its atClusterTime, or,
// without one, the time of a snapshot the engine takes now
// (Engine.SnapshotNow). checkReadConcern let it through only for
// asOfCommands and snapshotCommands.
func readAtClusterTime(s *Session, req *Request) (hlc.Timestamp, error) {
	d, ok := snapshotRead(req)
	if !ok {
		return 0, nil
	}
	v := d.Lookup("atClusterTime")
	if v.Type == 0 {
		return s.Env.Engine.SnapshotNow()
	}
	return parseAtClusterTime(v)
}

// parseAtClusterTime reads readConcern's atClusterTime: a timestamp, not
// the null one.
func parseAtClusterTime(v bsoncore.Value) (hlc.Timestamp, error) {
	t, i, ok := v.TimestampOK()
	if !ok {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern.atClusterTime' is the wrong type '%s', expected type 'timestamp'", typeName(v.Type))
	}
	if t == 0 && i == 0 {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime value must not be a null timestamp.")
	}
	return hlc.New(t, i), nil
}

// snapshotRead returns the readConcern of a snapshot read outside a
// transaction (in one, the transaction's snapshot answers: transactions.go).
func snapshotRead(req *Request) (bsoncore.Document, bool) {
	rc, ok := req.Arg("readConcern") // the fields split once, not a walk of the body
	if _, inTxn := req.Arg("autocommit"); !ok || inTxn {
		return nil, false
	}
	d, ok := rc.DocumentOK()
	if !ok {
		return nil, false
	}
	if lvl, _ := d.Lookup("level").StringValueOK(); lvl != "snapshot" {
		return nil, false
	}
	return d, true
}

// errAsOfView refuses a snapshot read of a view outside a transaction.
var errAsOfView = mongoerr.New(mongoerr.InvalidOptions, "readConcern snapshot reads collections at a cluster time; a view cannot be read at a cluster time")

// refuseAsOfView is errAsOfView when req is a snapshot read.
func refuseAsOfView(req *Request) error {
	if _, ok := snapshotRead(req); ok {
		return errAsOfView
	}
	return nil
}

// writesOutput reports whether req is an aggregate whose last stage is
// $out or $merge: it writes, so it takes a writeConcern and, on a replica
// set, runs on the primary and waits for its write concern as a write does.
func writesOutput(req *Request) bool {
	if req.Name != "aggregate" {
		return false
	}
	v, ok := req.Arg("pipeline")
	if !ok {
		return false
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return false
	}
	vals, err := arr.Values()
	if err != nil || len(vals) == 0 {
		return false
	}
	last, ok := vals[len(vals)-1].DocumentOK()
	if !ok {
		return false
	}
	first, err := last.IndexErr(0)
	if err != nil {
		return false
	}
	return first.Key() == "$out" || first.Key() == "$merge"
}
