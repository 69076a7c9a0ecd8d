package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/failpoint"
)

func TestBatchSizeHint(t *testing.T) {
	for _, c := range []struct{ last, want int }{
		{0, 0},
		{1000, 1250},               // a quarter of slack for a slightly larger next group
		{1 << 20, 5 << 18},         // a 1 MiB group, past what Pebble's batch pool keeps
		{maxSizeHint, maxSizeHint}, // one huge group does not make every later one huge
		{4 * maxSizeHint, maxSizeHint},
	} {
		if got := batchSizeHint(c.last); got != c.want {
			t.Errorf("batchSizeHint(%d) = %d, want %d", c.last, got, c.want)
		}
	}
}

// TestGroupBatchStartsWithRoom checks that the group after a large one gets
// a batch with room for as much, instead of growing one from Pebble's 1 KiB.
func TestGroupBatchStartsWithRoom(t *testing.T) {
	db := openTest(t, Options{})
	value := make([]byte, 1100)
	write := func(tag byte) {
		t.Helper()
		err := db.Write(func(tx *Txn) error {
			for i := range 1000 {
				tx.Set([]byte{'d', tag, byte(i >> 8), byte(i)}, value)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	if db.pipe.sizeHint < 1000*len(value) {
		t.Fatalf("after a group of 1,000 %d-byte values the next batch starts with %d bytes", len(value), db.pipe.sizeHint)
	}
	write(2)
	if v, ok := mustGet(t, db, "d\x02\x03\xe7"); !ok || len(v) != len(value) {
		t.Fatalf("last key of the second group: found %v, %d bytes", ok, len(v))
	}
}

// TestGroupBytesBound checks invariant "Bounded group": writers queued
// behind a busy pipeline join one commit group only until its batch
// reaches maxGroupBytes, and a request larger than that commits alone.
// Each case holds the pipeline in a first request until every writer is
// queued, so the groups that follow are what gathering makes of a full
// queue.
func TestGroupBytesBound(t *testing.T) {
	for _, c := range []struct {
		name                      string
		writers, values, valueLen int
	}{
		{"small requests share one group", 16, 2, 1000},
		{"requests of 300 KiB gather up to the cap", 16, 3, 100 << 10},
		{"requests over the cap commit alone", 4, 12, 100 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, Options{CacheSize: 16 << 20}) // 4 MiB memtables
			limit := db.pipe.maxGroupBytes
			if want := groupBytes(memTableSize(16 << 20)); limit != want || limit != 1<<20 {
				t.Fatalf("maxGroupBytes = %d, want %d (1 MiB)", limit, want)
			}
			value := make([]byte, c.valueLen)
			entered := make(chan struct{})
			blocked := make(chan error, 1)
			go func() {
				blocked <- db.Write(func(tx *Txn) error {
					close(entered)
					for deadline := time.Now().Add(10 * time.Second); len(db.pipe.queue) < c.writers; time.Sleep(time.Millisecond) {
						if time.Now().After(deadline) {
							return fmt.Errorf("%d of %d writers queued after 10 s", len(db.pipe.queue), c.writers)
						}
					}
					tx.Set([]byte("blocker"), []byte("x"))
					return nil
				})
			}()
			<-entered
			before := db.CommitGroups()
			errs := make(chan error, c.writers)
			for w := range c.writers {
				go func() {
					errs <- db.Write(func(tx *Txn) error {
						for i := range c.values {
							tx.Set(fmt.Appendf(nil, "w%02d-%02d", w, i), value)
						}
						return nil
					})
				}()
			}
			if err := <-blocked; err != nil {
				t.Fatal(err)
			}
			for range c.writers {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			after := db.CommitGroups()
			request := c.values * (c.valueLen + 16) // values, keys and record headers
			if after.MaxBytes > int64(limit+request) {
				t.Errorf("largest group %d bytes, want at most the cap %d plus one request's %d", after.MaxBytes, limit, request)
			}
			// A group takes writers until it reaches the cap, so at most
			// perGroup of them (the first group also holds the blocking
			// request, recorded after before was read).
			perGroup := (limit + request - 1) / request
			got := after.Groups - before.Groups
			if want := int64((c.writers + perGroup - 1) / perGroup); got < want {
				t.Errorf("%d writers of %d bytes each committed in %d groups, want at least %d", c.writers, request, got, want)
			}
			if c.writers*request < limit && got != 1 {
				t.Errorf("writers that fit under the cap took %d groups, want them all in the blocking request's", got)
			}
			for w := range c.writers {
				for i := range c.values {
					if v, ok := mustGet(t, db, fmt.Sprintf("w%02d-%02d", w, i)); !ok || len(v) != c.valueLen {
						t.Fatalf("w%02d-%02d: found %v, %d bytes", w, i, ok, len(v))
					}
				}
			}
		})
	}
}

// TestFailedGroupsCounted: DB.FailedGroups rises, by the time Write
// returns, for each group whose applied writes were answered with an error
// — the fail points before and after the commit, a Replicate that fails, a
// pipelined member's proposal that fails — and not for a committed group
// or a request whose own function failed (invariant "Failures counted
// before acknowledged").
func TestFailedGroupsCounted(t *testing.T) {
	errOwn := errors.New("the request's own error")
	for _, tc := range []struct {
		name  string
		open  func(t *testing.T) *DB
		arm   func(db *DB) // before the write
		fn    func(tx *Txn) error
		fails bool // Write returns an error
		count uint64
	}{
		{name: "committed", fn: setKey, count: 0},
		{name: "own error", fn: func(tx *Txn) error { tx.Set([]byte("d/k"), []byte("v")); return errOwn }, fails: true, count: 0},
		{name: "fail before commit", arm: armPoint(failpoint.StorageFailBeforeCommit), fn: setKey, fails: true, count: 1},
		{name: "fail after commit", arm: armPoint(failpoint.StorageFailAfterCommit), fn: setKey, fails: true, count: 1},
		{name: "replicate fails", open: func(t *testing.T) *DB {
			return openTest(t, Options{Hooks: &Hooks{Replicate: func([]byte, bool) error { return errFakeLost }}})
		}, fn: setKey, fails: true, count: 1},
		{name: "proposal fails", open: func(t *testing.T) *DB {
			set := &fakeSet{failAt: map[int]bool{1: true}}
			db := openTest(t, Options{Hooks: &Hooks{Propose: set.propose, Publishes: func() bool { return false }}})
			set.db = db
			return db
		}, fn: setKey, fails: true, count: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var db *DB
			if tc.open != nil {
				db = tc.open(t)
			} else {
				db = openTest(t, Options{})
			}
			if tc.arm != nil {
				tc.arm(db)
			}
			before := db.FailedGroups()
			err := db.Write(tc.fn)
			if (err != nil) != tc.fails {
				t.Fatalf("write: %v, want an error %v", err, tc.fails)
			}
			if got := db.FailedGroups() - before; got != tc.count {
				t.Errorf("failed groups rose by %d when the write returned (%v), want %d", got, err, tc.count)
			}
		})
	}
}

func setKey(tx *Txn) error { tx.Set([]byte("d/k"), []byte("v")); return nil }

// armPoint fires the named fail point of the store once.
func armPoint(name string) func(db *DB) {
	return func(db *DB) {
		fp, _ := db.FailPoints().Lookup(name)
		fp.Set(failpoint.Config{Mode: failpoint.Times, N: 1})
	}
}
