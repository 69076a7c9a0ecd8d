package storage

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestLogSyncsOverwrite checks invariant "Log syncs overwrite": while the
// log's syncs are small most of it is written ahead, in whole steps of
// logAheadBytes (the newest log file's size is a multiple of it); a log
// synced in large batches, or written in bulk requests, is not (Pebble's
// first memtables are small, so the store rotates several logs here); and
// a power cut (or, in the interval mode, a process crash) at the end
// reopens with every acknowledged write whatever part of the unsynced
// bytes the disk kept.
func TestLogSyncsOverwrite(t *testing.T) {
	logAheadInMemory = true
	defer func() { logAheadInMemory = false }()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	cases := []struct {
		name      string
		writes    int
		keys      int // keys per write
		value     int
		interval  time.Duration
		wantAhead bool
	}{
		{"small synced writes", 2500, 1, 1 << 10, 0, true},
		{"small writes, interval mode", 2500, 1, 1 << 10, 2 * time.Millisecond, true},
		{"large synced writes", 16, 1, 512 << 10, 0, false},
		// A bulk request's log is written in 32 KiB blocks before its first
		// sync: they do not count as small syncs.
		{"bulk requests", 24, 1500, 1 << 10, 0, false},
	}
	if testing.Short() {
		// make test's second race pass: a third of the bulk (still several
		// memtables' worth, so logs rotate), which is most of the time.
		cases[len(cases)-1].writes = 8
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			logAheadSteps.Store(0)
			db, err := Open("db", Options{FS: fs, CacheSize: 256 << 20, SyncInterval: c.interval, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			val := make([]byte, c.value)
			logical := 0
			for i := range c.writes {
				err := db.Write(func(tx *Txn) error {
					for j := range c.keys {
						tx.Set([]byte(testLogKey(i, j)), val)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				logical += c.keys * (len(testLogKey(i, 0)) + len(val))
			}
			zeros := logAheadSteps.Load() * logAheadBytes
			if ahead := zeros >= int64(logical)/2; ahead != c.wantAhead {
				t.Fatalf("%d bytes of zeros written ahead for %d bytes of writes: most of the log written ahead %v, want %v", zeros, logical, ahead, c.wantAhead)
			}
			if c.wantAhead {
				if size := logSize(t, fs); size%logAheadBytes != 0 {
					t.Fatalf("newest log file is %d bytes, not whole steps of %d", size, logAheadBytes)
				}
			}
			keep := rng.IntN(101) // a power cut keeps any part of the unsynced bytes
			if c.interval > 0 {
				keep = 100 // the interval mode promises a process crash only
			}
			img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rng})
			_ = db.Close()
			db, err = Open("db", Options{FS: img, Logger: discardLogger()})
			if err != nil {
				t.Fatalf("seed %d: reopen after a crash keeping %d%% of unsynced bytes: %v", seed, keep, err)
			}
			defer db.Close()
			for i := range c.writes {
				for j := range c.keys {
					if _, ok := mustGet(t, db, testLogKey(i, j)); !ok {
						t.Fatalf("seed %d: acknowledged write %d of %d lost (crash kept %d%% of unsynced bytes)", seed, i, c.writes, keep)
					}
				}
			}
		})
	}
}

func testLogKey(i, j int) string { return fmt.Sprintf("k%05d.%04d", i, j) }

// logSize is the size of the newest write-ahead log file in fs's "db".
func logSize(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, n := range names {
		if strings.HasSuffix(n, ".log") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		t.Fatal("no log file")
	}
	st, err := fs.Stat(fs.PathJoin("db", newest))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
