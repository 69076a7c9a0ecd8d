// Package commands implements MongoDB's database commands: it parses a
// command document, calls the engine, and shapes the reply exactly as MongoDB
// does, codes and codeNames included. It knows nothing of sockets or framing
// (package server and package wire own those).
//
// One file per command family (cmd_insert.go, cmd_find.go, …); the registry
// in registry.go lists them alphabetically.
//
// Invariant "Errors are codes": a handler returns an error; Run turns a
// *mongoerr.Error into {ok: 0, errmsg, code, codeName} and any other error
// into InternalError, so drivers always get a code to decide retries on.
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
// and fails on one without a case proving it honoured or refused.
package commands
