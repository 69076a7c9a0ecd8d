package commands

import "testing"

// TestUsageCacheForgets: a connection's remembered counters are dropped
// with their collection, so a command after a drop (and a re-create) is
// counted where top reads it, not in the forgotten counters.
func TestUsageCacheForgets(t *testing.T) {
	var u Usage
	var mem usageCache
	st := &opStats{}
	ns := []byte("db.c")
	u.record("find", classRead, 5, ns, st, &mem)
	u.record("find", classRead, 5, ns, st, &mem)
	if c := u.lookup("db.c"); c == nil || c.queries.count.Load() != 2 {
		t.Fatalf("two finds counted: %+v", c)
	}
	u.forget("db.c")
	u.record("find", classRead, 5, ns, st, &mem)
	if c := u.lookup("db.c"); c == nil || c.queries.count.Load() != 1 {
		t.Fatalf("after the drop, the next find starts a new count: %+v", c)
	}
	u.record("find", classRead, 5, []byte("db.d"), st, &mem)
	if c := u.lookup("db.d"); c == nil || c.queries.count.Load() != 1 {
		t.Fatalf("another namespace is counted apart: %+v", c)
	}
}
