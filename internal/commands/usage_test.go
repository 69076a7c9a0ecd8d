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

// TestUsageSums checks invariant "Sums are summed when read": the
// server's latency per class and a collection's total, readLock and
// writeLock, which no command adds to, equal the sums of what each
// command added.
func TestUsageSums(t *testing.T) {
	var u Usage
	u.initCommands()
	var mem usageCache
	st := &opStats{}
	type want struct{ ops, micros int64 }
	var class [numClasses]want
	var hist [numClasses][histBuckets]int64
	var total, readLock, writeLock want
	for _, c := range []struct {
		name string
		us   int64
		ns   string
	}{
		{"find", 3, "db.c"}, {"find", 700, "db.c"}, {"insert", 40, "db.c"}, {"update", 5000, "db.c"},
		{"count", 1, "db.c"}, {"ping", 2, ""}, {"hello", 9, ""}, {"getMore", 12, "db.c"},
		{"notARegisteredCommand", 7, "db.c"}, {"findAndModify", 30, "db.d"}, {"delete", 1, "db.c"},
	} {
		cl := classOf(c.name)
		var ns []byte
		if c.ns != "" {
			ns = []byte(c.ns)
		}
		u.record(c.name, cl, c.us, ns, st, &mem)
		class[cl].ops++
		class[cl].micros += c.us
		hist[cl][bucketOf(c.us)]++
		if c.ns == "db.c" {
			total.ops++
			total.micros += c.us
			if cl == classWrite {
				writeLock.ops++
				writeLock.micros += c.us
			} else {
				readLock.ops++
				readLock.micros += c.us
			}
		}
	}
	lat := u.classLatencies()
	for cl := range numClasses {
		if got := (want{lat[cl].ops.Load(), lat[cl].micros.Load()}); got != class[cl] {
			t.Errorf("%s: ops and micros %v, want %v", classNames[cl], got, class[cl])
		}
		for b := range histBuckets {
			if got := lat[cl].hist[b].Load(); got != hist[cl][b] {
				t.Errorf("%s: histogram bucket %d holds %d, want %d", classNames[cl], b, got, hist[cl][b])
			}
		}
	}
	top := u.lookup("db.c").topDoc()
	for _, f := range []struct {
		name string
		want want
	}{{"total", total}, {"readLock", readLock}, {"writeLock", writeLock}} {
		got := want{top.Lookup(f.name, "count").AsInt64(), top.Lookup(f.name, "time").AsInt64()}
		if got != f.want {
			t.Errorf("top's %s: count and time %v, want %v", f.name, got, f.want)
		}
	}
}
