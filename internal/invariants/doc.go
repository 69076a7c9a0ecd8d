// Package invariants switches Cairn's expensive self-checks on and off at
// build time, as Pebble's package of the same name does. Built with
// `-tags invariants` (make race, the crash test and the planner
// differential test), [Enabled] is true and the engine and storage check
// their named invariants at run time: after each commit group, that the
// indexes of the collections the group touched agree with their documents
// and that the "Tail bound" holds; on every catalog change, that it runs on
// the commit pipeline's goroutine; on every iterator and snapshot, that it
// is closed exactly once. In a normal build Enabled is the constant false,
// so every `if invariants.Enabled { … }` block compiles away and the checks
// cost nothing.
//
// A failed check panics with a *[Violation] that names the invariant as the
// owning package's doc.go states it, so a crash report says which promise
// broke, not only where.
package invariants

import "fmt"

// Violation is the panic value of a failed runtime check.
type Violation struct {
	// Invariant is the name the owning package's doc.go gives it, e.g.
	// "Indexes follow documents" (package engine).
	Invariant string
	Detail    string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %q violated: %s", v.Invariant, v.Detail)
}

// Fail panics with a Violation of the named invariant.
func Fail(invariant, format string, args ...any) {
	panic(&Violation{Invariant: invariant, Detail: fmt.Sprintf(format, args...)})
}
