package storage

import (
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
// deferred (walsync.go).
func (db *DB) Checkpoint(dir string) error {
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
