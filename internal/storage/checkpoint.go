package storage

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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
	return syncTree(db.opts.FS, dir)
}

// FS is the filesystem the store's files are on (Options.FS; the
// operating system's by default): a checkpoint's directory is on it too.
func (db *DB) FS() vfs.FS { return db.opts.FS }

// syncTree fsyncs every file and directory under root, each directory
// after what it holds.
func syncTree(fs vfs.FS, root string) error {
	st, err := fs.Stat(root)
	if err != nil {
		return err
	}
	var f vfs.File
	if st.IsDir() {
		names, err := fs.List(root)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := syncTree(fs, fs.PathJoin(root, n)); err != nil {
				return err
			}
		}
		f, err = fs.OpenDir(root)
		if err != nil {
			return err
		}
	} else if f, err = fs.Open(root); err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
