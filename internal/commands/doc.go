// Package commands implements MongoDB's database commands: it parses a
// command document, calls the engine, and shapes the reply exactly as MongoDB
// does, codes and codeNames included. It knows nothing of sockets or framing
// (package server and package wire own those).
//
// One file per command family (cmd_insert.go, cmd_find.go, …); the registry
// in registry.go lists them alphabetically.
//
// Test commands (configureFailPoint) exist only when the server starts with
// --setParameter enableTestCommands=1; Run then applies MongoDB's failCommand
// fail point around every command (cmd_failpoint.go). With the point off,
// the cost is one atomic load per command.
//
// Invariant "Errors are codes": a handler returns an error; Run turns a
// *mongoerr.Error into {ok: 0, errmsg, code, codeName} and any other error
// into InternalError, so drivers always get a code to decide retries on.
package commands
