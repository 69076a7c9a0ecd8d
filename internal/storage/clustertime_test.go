package storage

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/hlc"
)

// tickWrite writes key and returns the cluster time its request took.
func tickWrite(t *testing.T, db *DB, key string) hlc.Timestamp {
	t.Helper()
	var ts hlc.Timestamp
	if err := db.Write(func(tx *Txn) error {
		ts = tx.Tick()
		tx.Set([]byte(key), ts.AppendBinary(nil))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestClusterTimeSurvivesRestart checks invariant "Cluster time survives
// restart" for a clean close and for a power cut (only synced bytes kept),
// with the wall clock set back across the restart, and that LastCommitted
// follows the acknowledged groups.
func TestClusterTimeSurvivesRestart(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for _, crash := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		wall := time.Unix(1_700_000_000, 0)
		open := func(f vfs.FS) *DB {
			db, err := Open("db", Options{FS: f, Logger: discardLogger(), Clock: hlc.NewClock(func() time.Time { return wall }, 0)})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		db := open(fs)
		var mu sync.Mutex
		var highest hlc.Timestamp
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					ts := tickWrite(t, db, string(rune('a'+w))+string(rune('0'+i%10)))
					mu.Lock()
					highest = max(highest, ts)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if got := db.LastCommitted(); got != highest {
			t.Fatalf("crash=%v: LastCommitted = %v, want the highest acknowledged %v", crash, got, highest)
		}
		reopenFS := vfs.FS(fs)
		if crash {
			reopenFS = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		}
		_ = db.Close()
		wall = wall.Add(-time.Hour) // the machine's clock went back
		db = open(reopenFS)
		if got := db.LastCommitted(); got < highest {
			t.Fatalf("crash=%v: LastCommitted after restart = %v, below acknowledged %v", crash, got, highest)
		}
		if next := tickWrite(t, db, "after"); next <= highest {
			t.Fatalf("crash=%v: time %v issued after restart is not above acknowledged %v", crash, next, highest)
		}
		_ = db.Close()
	}
}

// TestTickOrderWithinAndAcrossGroups checks that times rise in apply order
// and that a failed request's time is skipped, never persisted alone.
func TestTickOrderWithinAndAcrossGroups(t *testing.T) {
	db := openTest(t, Options{})
	var prev hlc.Timestamp
	for i := range 20 {
		ts := tickWrite(t, db, "k")
		if ts <= prev {
			t.Fatalf("write %d: time %v not above %v", i, ts, prev)
		}
		prev = ts
	}
	before := db.LastCommitted()
	var failed hlc.Timestamp
	boom := errors.New("boom")
	if err := db.Write(func(tx *Txn) error { failed = tx.Tick(); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if failed <= before {
		t.Fatalf("failed request's time %v not above %v", failed, before)
	}
	if got := db.LastCommitted(); got != before {
		t.Fatalf("LastCommitted moved to %v for a group that wrote nothing", got)
	}
	if next := tickWrite(t, db, "k"); next <= failed {
		t.Fatalf("time %v after a failed request is not above its skipped %v", next, failed)
	}
}
