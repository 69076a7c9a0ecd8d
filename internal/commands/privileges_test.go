package commands

import "testing"

// TestEveryCommandHasPrivilegeRule holds invariant "Every command has a
// rule": a command registered without one fails here (and is refused to
// everyone under --auth), and a rule names only registered commands.
func TestEveryCommandHasPrivilegeRule(t *testing.T) {
	for name := range registry {
		r, ok := privilegeRules[name]
		if !ok {
			t.Errorf("command %s has no privilege rule in privileges.go", name)
			continue
		}
		if !r.pre && !r.anyUser && len(r.actions) == 0 && r.more == nil {
			t.Errorf("command %s's rule requires nothing: mark it pre or anyUser, or name its actions", name)
		}
	}
	for name := range privilegeRules {
		if _, ok := registry[name]; !ok {
			t.Errorf("privilege rule for unregistered command %s", name)
		}
	}
}
