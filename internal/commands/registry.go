package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

type handler func(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error)

type command struct {
	run       handler
	adminOnly bool
	help      string
}

// registry lists every command by name, alphabetically; aliases point at the
// same handler. Names are case-sensitive, as in MongoDB.
var registry map[string]command

func init() {
	registry = map[string]command{
		"aggregate":        {run: cmdAggregate, help: "run an aggregation pipeline"},
		"buildInfo":        {run: cmdBuildInfo, help: "server version and build details"},
		"buildinfo":        {run: cmdBuildInfo, help: "alias of buildInfo"},
		"collMod":          {run: cmdCollMod, help: "change collection and index options"},
		"collStats":        {run: cmdCollStats, help: "collection statistics"},
		"connectionStatus": {run: cmdConnectionStatus, help: "authentication state of this connection"},
		"count":            {run: cmdCount, help: "count documents"},
		"create":           {run: cmdCreate, help: "create a collection"},
		"createIndexes":    {run: cmdCreateIndexes, help: "create indexes"},
		"currentOp":        {run: cmdCurrentOp, adminOnly: true, help: "operations in progress"},
		"dbStats":          {run: cmdDBStats, help: "database statistics"},
		"dbstats":          {run: cmdDBStats, help: "alias of dbStats"},
		"delete":           {run: cmdDelete, help: "delete documents"},
		"distinct":         {run: cmdDistinct, help: "distinct values of a field"},
		"drop":             {run: cmdDrop, help: "drop a collection"},
		"dropDatabase":     {run: cmdDropDatabase, help: "drop a database"},
		"dropIndexes":      {run: cmdDropIndexes, help: "drop indexes"},
		"endSessions":      {run: cmdNoopOK, help: "end logical sessions"},
		"explain":          {run: cmdExplain, help: "explain a command's plan"},
		"find":             {run: cmdFind, help: "query documents"},
		"findAndModify":    {run: cmdFindAndModify, help: "update or remove one document and return it"},
		"findandmodify":    {run: cmdFindAndModify, help: "alias of findAndModify"},
		"getCmdLineOpts":   {run: cmdGetCmdLineOpts, adminOnly: true, help: "the server's command line"},
		"getLog":           {run: cmdGetLog, adminOnly: true, help: "recent log lines"},
		"getMore":          {run: cmdGetMore, help: "next batch of a cursor"},
		"planCacheClear":   {run: cmdPlanCacheClear, help: "forget a collection's cached query plans"},
		"getParameter":     {run: cmdGetParameter, adminOnly: true, help: "read server parameters"},
		"hello":            {run: cmdHello, help: "handshake and topology"},
		"hostInfo":         {run: cmdHostInfo, help: "the host's hardware and OS"},
		"insert":           {run: cmdInsert, help: "insert documents"},
		"isMaster":         {run: cmdIsMaster, help: "legacy handshake"},
		"ismaster":         {run: cmdIsMaster, help: "legacy handshake"},
		"killAllSessions":  {run: cmdNoopOK, help: "kill all sessions"},
		"killCursors":      {run: cmdKillCursors, help: "close cursors"},
		"killOp":           {run: cmdKillOp, adminOnly: true, help: "interrupt an operation in progress"},
		"killSessions":     {run: cmdNoopOK, help: "kill sessions"},
		"listCollections":  {run: cmdListCollections, help: "list collections"},
		"listDatabases":    {run: cmdListDatabases, adminOnly: true, help: "list databases"},
		"listIndexes":      {run: cmdListIndexes, help: "list indexes"},
		"ping":             {run: cmdNoopOK, help: "check the server answers"},
		"renameCollection": {run: cmdRenameCollection, adminOnly: true, help: "rename a collection"},
		"serverStatus":     {run: cmdServerStatus, help: "server counters"},
		"setParameter":     {run: cmdSetParameter, adminOnly: true, help: "change server parameters"},
		"update":           {run: cmdUpdate, help: "update documents"},
		"whatsmyuri":       {run: cmdWhatsMyURI, help: "this connection's client address"},
	}
}

func lookup(name string) (command, bool) {
	c, ok := registry[name]
	return c, ok
}

// cmdNoopOK answers {ok: 1}: ping, and the session commands a standalone
// server accepts without keeping server-side session state.
func cmdNoopOK(_ context.Context, _ *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	return OK(dst), nil
}
