package storage

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the store, as of one moment, to
// dir (which must not exist yet): a directory Open can open, holding every
// write acknowledged before Checkpoint was called. Writes go on meanwhile.
// Tables are hard-linked where dir is on the same filesystem, so a
// checkpoint costs little space until compactions rewrite them.
//
// The copy is synced (every file and directory) before Checkpoint returns,
// in the interval sync mode too, where Pebble's own syncs of log files are
// deferred (walsync.go). A store without a log of its own
// (Options.ReplicatedLog) flushes its memtables first, as they are in no
// file a checkpoint could link.
func (db *DB) Checkpoint(dir string) error {
	if db.opts.ReplicatedLog {
		if err := db.pdb.Flush(); err != nil {
			return err
		}
	}
	return db.checkpoint(dir)
}

// CheckpointApplied writes a checkpoint as Checkpoint does, except that a
// store without a log of its own (Options.ReplicatedLog) does not flush
// first: the copy holds the groups its flushed memtables hold, a prefix
// of those ApplyReplicated applied, and applied is the log index of the
// last of them (its record in the copy; 0 if none). A replica set
// member's snapshot is taken so, at that index, with no flush on its node
// loop (package repl's "Snapshot at the state machine's index").
func (db *DB) CheckpointApplied(dir string) (applied uint64, err error) {
	if err := db.checkpoint(dir); err != nil {
		return 0, err
	}
	ck, err := pebble.Open(dir, &pebble.Options{FS: db.opts.FS, ReadOnly: true, Logger: quietLogger{db.opts.Logger}})
	if err != nil {
		return 0, fmt.Errorf("storage: open checkpoint %s: %w", dir, err)
	}
	defer ck.Close()
	v, ok, err := get(ck, nil, appliedKey)
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied index record of %d bytes in checkpoint %s", ErrCorrupt, len(v), dir)
	}
	return binary.BigEndian.Uint64(v), nil
}

func (db *DB) checkpoint(dir string) error {
	if err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return err
	}
	return syncTree(dir)
}

// syncTree fsyncs every file and directory under root.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
