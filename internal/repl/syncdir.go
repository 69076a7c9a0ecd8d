package repl

import "github.com/cockroachdb/pebble/v2/vfs"

// SyncDir makes dir's entries (files created, renamed or removed in it)
// durable on fs. It is the one directory sync of the Raft log's segments
// and of replset's member files (member-id, raft/, snapshots/): every
// error is returned, as Pebble's own directory syncs on the same
// filesystem return theirs, so a filesystem that cannot sync a directory
// fails the open instead of leaving a name a power cut can lose.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
