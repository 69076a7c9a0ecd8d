// Package commands implements MongoDB's database commands: it parses a
// command document into a typed request, hands it to package exec, which
// runs it, and shapes the reply exactly as MongoDB does, codes and
// codeNames included. It opens no plan, executes no write and pushes down
// no stage itself; it knows nothing of sockets or framing (package server
// and package wire own those).
//
// One file per command family (cmd_insert.go, cmd_find.go, …); the registry
// in registry.go lists them alphabetically. Beside them: request.go reads
// a command's fields, reply.go and batch.go build replies and cursor
// batches, cursors.go keeps server-side cursors. sessions.go checks each
// command's lsid and txnNumber out of the session table (package session)
// and holds the session commands; retryable.go runs write statements at
// most once per session and transaction number; clustertime.go is the seam
// that puts cluster times on replies once the node is a replica-set member.
//
// Two kinds of iterator meet here, named apart. A Cursor is a server-side
// cursor: an id the client holds, registered in Cursors, served batch by
// batch by getMore and closed by killCursors, after idling, with the batch
// that holds its last document (id 0), or at the first getMore after its
// collection is dropped or renamed (QueryPlanKilled, as MongoDB). What it
// serves is an agg.Source: the plan exec opened (a planner.Exec) or an
// aggregation pipeline's output, pulled one document at a time. (Below
// them, engine.Cursor walks one key range of a snapshot.)
//
// Test commands (configureFailPoint) exist only when the server starts with
// --setParameter enableTestCommands=1; Run then applies MongoDB's failCommand
// fail point around every command (cmd_failpoint.go), and the drivers' two
// other points: failGetMoreAfterCursorCheckout in getMore and
// onPrimaryTransactionalWrite in a retryable-write statement's commit. With
// a point off, the cost is one atomic load where it sits.
//
// A retryable write's reply carries the RetryableWriteError label when its
// error or writeConcernError has a retriable code, as mongod's
// ErrorLabelBuilder adds it (errorlabels.go); drivers retry on the label.
//
// Invariant "Errors are codes": a handler returns an error; Run turns a
// *mongoerr.Error into {ok: 0, errmsg, code, codeName} and any other error
// into InternalError, so drivers always get a code to decide retries on.
//
// Invariant "Parse here, run in exec": a handler reads every field of its
// request in this package (one place per field), then calls exec with a
// typed request; exec never sees a command document.
//
// Invariant "One field rule": every command declares its fields in the
// registry (registry.go); Run refuses an undeclared field (40415), a field
// given twice (40413) and a declared-but-not-yet-honoured one
// (InvalidOptions) before the handler runs, so no option is accepted and
// ignored. The generic arguments every command takes are one shared list
// (generic.go), applied as a MongoDB 7.0 standalone applies them:
// transactions, snapshot and linearizable reads and w > 1 are refused with
// its codes, and the Stable API (apiVersion, apiStrict, requireApiVersion)
// is enforced. internal/server's surface test walks every declared field
// and fails on one without a case proving it honoured or refused. Each
// registered command classifies a field's key from a table built from its
// lists once (fieldTable), which TestFieldTableMatchesClassify checks
// against the lists for every command and near-miss key.
//
// Invariant "One operation per command": Run registers each command in the
// engine's registry (currentOp, killOp) and derives its context once,
// maxTimeMS included (operation.go); handlers pass that context to every
// exec entry point, and a cursor's plan keeps running under a context each
// getMore attaches to (opctx.Bound).
//
// Invariant "Every command is observed": after each command Run hands its
// duration and figures (opStats, which the find, getMore and write
// handlers fill) to Env.observe, which counts it (usage.go: opLatencies,
// metrics, top, $collStats latencyStats, the Prometheus endpoint's
// per-command histograms), logs it as a "Slow query" past slowms, and
// writes it to system.profile when its database's profiling level asks
// (profiler.go). Deciding not to log or profile costs one comparison and
// one atomic load.
//
// Invariant "The express path is unobservable": a find whose only
// condition is {_id: v} and that asks for nothing a plan would do is
// answered without a plan (express.go: recognised in one pass over its
// fields, one engine read appended into the reply's batch, MongoDB 8.0's
// express path), and everything a client can observe of it — reply,
// errors, counters, $indexStats, profiler, slow-query log, query shapes,
// currentOp, killOp — is what the general path gives
// (TestExpressMatchesGeneral, TestExpressRecognises; the invariants build
// re-plans each one, checkExpress).
//
// Invariant "One access check": with --auth, Run calls authorize (auth.go)
// before any field of a command is parsed; every registered command has a
// rule in privileges.go (the actions it needs on which resource, or that
// it is a handshake command), TestEveryCommandHasPrivilegeRule and the
// server's TestAuthMatrix fail for one without, and authorize refuses a
// command that has none. Before authentication only the handshake runs
// (FuzzPreAuth). Cursors are continued and killed only by the user who
// opened them.
//
// Invariant "Paced, never held past the ceiling": a change stream's
// awaitData getMore that comes soon after its cursor's last events waits
// out the rest of the cursor's pace first (changestream.go's pace: the
// time paceEvents events took at the last batch's rate, between a floor
// and a ceiling that grow with the other open change streams, never above
// maxPace and never past the getMore's await time); a stream alone is not
// paced (TestChangeStreamPace; the wire test's "paced getMores" checks
// the floor over the wire). The node's paced getMores wait for shared
// ticks (paceTicks.release: a tick another stream set, if one lies within
// the cursor's floor and ceiling, so that the streams' batches go
// together), never before the floor nor past the ceiling after the
// cursor's last batch (TestChangeStreamRelease,
// TestChangeStreamReleaseBounds).
package commands
