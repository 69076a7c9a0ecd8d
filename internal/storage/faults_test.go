package storage

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestLogFaultsStopWrites injects I/O errors into the write-ahead log with
// Pebble's errorfs and checks invariant "Stop on a failed log": the write
// that met the error is not acknowledged, every later write is refused with
// the disk's error and a MongoDB code even after the disk recovers, writes
// acknowledged before stay readable, and a restart on a healthy disk finds
// them all.
func TestLogFaultsStopWrites(t *testing.T) {
	for _, c := range []struct {
		name  string
		op    errorfs.OpKind
		errno syscall.Errno
		every time.Duration
		code  mongoerr.Code
	}{
		{"write EIO", errorfs.OpFileWrite, syscall.EIO, 0, mongoerr.ManualInterventionRequired},
		{"sync EIO", errorfs.OpFileSync, syscall.EIO, 0, mongoerr.ManualInterventionRequired},
		{"write ENOSPC", errorfs.OpFileWrite, syscall.ENOSPC, 0, mongoerr.OutOfDiskSpace},
		{"interval write EIO", errorfs.OpFileWrite, syscall.EIO, time.Hour, mongoerr.ManualInterventionRequired},
		{"interval write ENOSPC", errorfs.OpFileWrite, syscall.ENOSPC, time.Hour, mongoerr.OutOfDiskSpace},
		// In the interval mode a commit does not sync: the periodic sync
		// meets the error and stops writes.
		{"interval sync EIO", errorfs.OpFileSync, syscall.EIO, 5 * time.Millisecond, mongoerr.ManualInterventionRequired},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var on atomic.Bool
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if on.Load() && sameKind(op.Kind, c.op) && strings.HasSuffix(op.Path, ".log") {
					return c.errno
				}
				return nil
			}))
			db, err := Open("db", Options{FS: fs, SyncInterval: c.every, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			put := func(k string) error {
				return db.Write(func(tx *Txn) error { tx.Set([]byte(k), []byte("v-"+k)); return nil })
			}
			for i := range 10 {
				if err := put(fmt.Sprint("acked", i)); err != nil {
					t.Fatal(err)
				}
			}
			on.Store(true)
			err = put("failed")
			if c.op == errorfs.OpFileSync && c.every > 0 {
				// Acknowledged once written to the OS; the sync that fails
				// comes within the interval and stops later writes.
				if err != nil {
					t.Fatalf("write before the periodic sync: %v", err)
				}
				for deadline := time.Now().Add(5 * time.Second); db.Stopped() == nil && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				err = put("after")
			}
			checkStopped(t, err, c.errno, c.code)
			on.Store(false)
			checkStopped(t, put("later"), c.errno, c.code)
			for i := range 10 {
				if v, ok := mustGet(t, db, fmt.Sprint("acked", i)); !ok || v != fmt.Sprint("v-acked", i) {
					t.Fatalf("acked%d after the fault: %q, %v", i, v, ok)
				}
			}
			_ = db.Close() // reports the log's error

			db, err = Open("db", Options{FS: mem, Logger: discardLogger()})
			if err != nil {
				t.Fatalf("reopen on the healthy disk: %v", err)
			}
			defer db.Close()
			for i := range 10 {
				if _, ok := mustGet(t, db, fmt.Sprint("acked", i)); !ok {
					t.Fatalf("acknowledged acked%d lost after the fault", i)
				}
			}
			if err := put("again"); err != nil {
				t.Fatalf("write after the restart: %v", err)
			}
		})
	}
}

// sameKind matches the three ways to sync a file as one: Pebble's log
// writer syncs with SyncData.
func sameKind(k, want errorfs.OpKind) bool {
	syncs := func(k errorfs.OpKind) bool {
		return k == errorfs.OpFileSync || k == errorfs.OpFileSyncData || k == errorfs.OpFileSyncTo
	}
	return k == want || syncs(k) && syncs(want)
}

func checkStopped(t *testing.T, err error, errno syscall.Errno, code mongoerr.Code) {
	t.Helper()
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !errors.Is(err, errno) {
		t.Fatalf("write after an injected %v: err %v, want a StoppedError with the disk's error", errno, err)
	}
	if got := mongoerr.CodeOf(err); got != code {
		t.Fatalf("write after an injected %v: code %d (%s), want %d (%s)", errno, got, got.Name(), code, code.Name())
	}
}

// TestDiskFullRefusesAndRecovers checks that writes are refused with
// OutOfDiskSpace while the disk has less than MinFreeBytes free, without
// stopping the store, and accepted again as soon as space is freed.
func TestDiskFullRefusesAndRecovers(t *testing.T) {
	mem := vfs.NewMem()
	const min = 64 << 20
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	db, err := Open("db", Options{FS: mem, MinFreeBytes: min, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(k string) error {
		return db.Write(func(tx *Txn) error { tx.Set([]byte(k), []byte("v")); return nil })
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: min - 1, TotalBytes: 20 << 30})
	// Plenty of room was seen last, so the next check may come up to
	// spaceCheckEvery later: wait for the refusal.
	deadline := time.Now().Add(5 * time.Second)
	for err = put("full"); err == nil && time.Now().Before(deadline); err = put("full") {
		time.Sleep(spaceCheckEvery / 10)
	}
	if !errors.Is(err, ErrDiskFull) || mongoerr.CodeOf(err) != mongoerr.OutOfDiskSpace {
		t.Fatalf("write on a full disk: err %v (code %d), want ErrDiskFull with OutOfDiskSpace", err, mongoerr.CodeOf(err))
	}
	if db.Stopped() != nil {
		t.Fatalf("a full disk stopped the store: %v", db.Stopped())
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 10 << 30, TotalBytes: 20 << 30})
	if err := put("freed"); err != nil {
		t.Fatalf("write once space is freed: %v", err)
	}
	if _, ok := mustGet(t, db, "freed"); !ok {
		t.Fatal("the write after the disk recovered is missing")
	}
}

var logFaults = flag.Int("logfaults.n", 200, "TestRandomLogFaultsLoseNothing: faults to inject")

// TestRandomLogFaultsLoseNothing injects one I/O error (EIO or ENOSPC) into
// a random write or sync of the log, in a random sync mode, while a writer
// commits until it is refused; a crash image then holds what the disk kept
// — only synced bytes with SyncAlways, every byte written to the OS in the
// interval mode (the process-crash promise) — and must hold every
// acknowledged write. Writes after the fault must all be refused.
func TestRandomLogFaultsLoseNothing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	acked := 0
	for i := range *logFaults {
		every := time.Duration(0)
		if rng.IntN(2) == 1 {
			every = 2 * time.Millisecond
		}
		errno := []syscall.Errno{syscall.EIO, syscall.ENOSPC}[rng.IntN(2)]
		failAt := int64(1 + rng.IntN(40))
		fs := vfs.NewCrashableMem()
		var ops atomic.Int64
		var armed atomic.Bool
		inj := errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
			if !armed.Load() || !strings.HasSuffix(op.Path, ".log") || !sameKind(op.Kind, errorfs.OpFileWrite) && !sameKind(op.Kind, errorfs.OpFileSync) {
				return nil
			}
			if ops.Add(1) == failAt {
				return errno
			}
			return nil
		}))
		db, err := Open("db", Options{FS: inj, SyncInterval: every, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		var keys []string
		var stopErr error
		for n := 0; n < 400 && stopErr == nil; n++ {
			k := fmt.Sprintf("k%03d", n)
			if err := db.Write(func(tx *Txn) error { tx.Set([]byte(k), []byte(k)); return nil }); err != nil {
				stopErr = err
				break
			}
			keys = append(keys, k)
		}
		if stopErr == nil {
			// The fault fell on a sync the interval mode's loop makes.
			for deadline := time.Now().Add(5 * time.Second); db.Stopped() == nil && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			stopErr = db.Write(func(tx *Txn) error { return nil })
		}
		if !errors.Is(stopErr, errno) || db.Write(func(tx *Txn) error { tx.Set([]byte("x"), nil); return nil }) == nil {
			t.Fatalf("fault %d (seed %d, %v at log op %d, interval %v): writes not stopped: %v", i, seed, errno, failAt, every, stopErr)
		}
		keep := 0 // a power cut: only synced bytes
		if every > 0 {
			keep = 100 // a process crash: every byte the OS got
		}
		img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rng})
		_ = db.Close()
		db, err = Open("db", Options{FS: img, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("fault %d (seed %d): reopen: %v", i, seed, err)
		}
		for _, k := range keys {
			if _, ok := mustGet(t, db, k); !ok {
				t.Fatalf("fault %d (seed %d, %v at log op %d, interval %v): acknowledged %s lost", i, seed, errno, failAt, every, k)
			}
		}
		acked += len(keys)
		_ = db.Close()
	}
	t.Logf("%d injected log faults, %d acknowledged writes checked, none lost, writes stopped after each", *logFaults, acked)
}
