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
// Invariant "One operation per command": Run registers each command in the
// engine's registry (currentOp, killOp) and derives its context once,
// maxTimeMS included (operation.go); handlers pass that context down to
// every plan, pipeline and write loop, and a cursor's plan keeps running
// under a context each getMore attaches to.
package commands
