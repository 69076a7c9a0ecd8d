package repl

import "github.com/cairndb/cairn/internal/invariants"

// invariantsEnabled is true in builds with the invariants tag; the checks
// it guards compile away otherwise.
const invariantsEnabled = invariants.Enabled

func invariantFail(name, format string, args ...any) { invariants.Fail(name, format, args...) }
