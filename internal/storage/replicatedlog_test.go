package storage

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestRaftLogIsTheMembersWAL checks invariant "The Raft log is the
// member's WAL" (Options.ReplicatedLog): replicated groups reach no log
// of the store's, so a crash keeps exactly the groups of its flushed
// memtables (a prefix, whose applied index says where the Raft log's
// replay starts); a write the pipeline commits itself is durable once
// acknowledged (a flush); Close flushes; CheckpointApplied copies the
// flushed groups and names their index without flushing, Checkpoint
// flushes first. The crash keeps every unsynced byte (a store that kept a
// log would come back with every group, and fail the prefix's check).
func TestRaftLogIsTheMembersWAL(t *testing.T) {
	fs := vfs.NewCrashableMem()
	open := func(f vfs.FS) *DB {
		t.Helper()
		db, err := Open("db", Options{FS: f, Logger: discardLogger(), ReplicatedLog: true})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	group := func(db *DB, g int) []byte {
		b := db.pdb.NewBatch()
		defer b.Close()
		if err := b.Set(DocKey(nil, 1, []byte(fmt.Sprintf("g%d", g))), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), b.Repr()...)
	}
	apply := func(db *DB, from, to int) {
		t.Helper()
		for g := from; g <= to; g++ {
			if err := db.ApplyReplicated(uint64(g), group(db, g)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// holds checks the applied index and which groups and local write the
	// store holds.
	holds := func(what string, db *DB, applied int, local bool) {
		t.Helper()
		if got, err := db.AppliedIndex(); err != nil || got != uint64(applied) {
			t.Errorf("%s: applied index %d (%v), want %d", what, got, err, applied)
		}
		var missing, extra []string
		for g := 1; g <= 8; g++ {
			_, ok, err := db.Get(nil, DocKey(nil, 1, []byte(fmt.Sprintf("g%d", g))))
			if err != nil {
				t.Fatal(err)
			}
			if ok != (g <= applied) {
				if ok {
					extra = append(extra, fmt.Sprint(g))
				} else {
					missing = append(missing, fmt.Sprint(g))
				}
			}
		}
		if _, ok, _ := db.Get(nil, SystemKey("local")); ok != local {
			t.Errorf("%s: the local write present %v, want %v", what, ok, local)
		}
		if len(missing)+len(extra) > 0 {
			t.Errorf("%s: groups missing [%s], groups past the applied index [%s]", what, strings.Join(missing, " "), strings.Join(extra, " "))
		}
	}

	db := open(fs)
	apply(db, 1, 3)
	// A write of the pipeline's own (a member's local record before its
	// hooks replicate) is durable when acknowledged, and so is every
	// group applied before it.
	if err := db.Write(func(tx *Txn) error { tx.Set(SystemKey("local"), []byte("x")); return nil }); err != nil {
		t.Fatal(err)
	}
	apply(db, 4, 6)
	crashed := open(fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))}))
	holds("after a crash", crashed, 3, true)
	_ = crashed.Close()

	apply(db, 7, 8)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := open(fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 1))}))
	holds("after Close and a crash keeping nothing unsynced", reopened, 8, true)
	_ = reopened.Close()

	// Checkpoints, on the operating system's disk (a checkpoint's files
	// are synced through it): CheckpointApplied copies the flushed
	// groups, at their index, Checkpoint (a backup's) every applied one.
	dir := t.TempDir()
	disk, err := Open(filepath.Join(dir, "db"), Options{Logger: discardLogger(), ReplicatedLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	apply(disk, 1, 3)
	if err := disk.Write(func(tx *Txn) error { tx.Set(SystemKey("local"), []byte("x")); return nil }); err != nil {
		t.Fatal(err)
	}
	apply(disk, 4, 6)
	if at, err := disk.CheckpointApplied(filepath.Join(dir, "ck-flushed")); err != nil || at != 3 {
		t.Errorf("CheckpointApplied: index %d (%v), want the flushed 3", at, err)
	}
	if err := disk.Checkpoint(filepath.Join(dir, "ck-all")); err != nil {
		t.Fatal(err)
	}
	ck, err := pebble.Open(filepath.Join(dir, "ck-all"), &pebble.Options{ReadOnly: true, Logger: quietLogger{discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := get(ck, nil, appliedKey); err != nil || !ok || binary.BigEndian.Uint64(v) != 6 {
		t.Errorf("Checkpoint holds applied index %x (%v, %v), want 6", v, ok, err)
	}
	_ = ck.Close()

	if _, err := Open(t.TempDir(), Options{Logger: discardLogger(), ReplicatedLog: true, SyncInterval: 1}); err == nil {
		t.Error("a store with ReplicatedLog and a sync interval opened")
	}
}
