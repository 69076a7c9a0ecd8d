package commands

import "github.com/cairndb/cairn/internal/mongoerr"

// notYet is the answer to a feature whose engine arrives with a later issue:
// a clear CommandNotSupported naming what is missing, so a client fails
// loudly instead of being misled.
func notYet(what string) error {
	return mongoerr.New(mongoerr.CommandNotSupported, "%s is not supported by this build of Cairn yet", what)
}
