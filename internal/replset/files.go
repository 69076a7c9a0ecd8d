package replset

import (
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/repl"
)

// A member's files are on its engine's filesystem (engine.Options.FS, the
// operating system's by default; rstest gives each member a crashable
// in-memory one to cut its power). Under Dir/replset: member-id (its Raft
// id, written to a temporary file, synced, renamed, the directory synced),
// raft/ (repl's LogStore: Pebble for the hard state, snapshot metadata and
// configuration, segment files for the entries, every save synced before
// it is used), and snapshots/<name> (checkpoints of the store, synced file
// by file before their name is used). A directory a member creates is
// synced into its parent before anything in it is relied on, so a power
// cut keeps no file whose directory it loses (invariant "Member files
// durable before use", TestPowerCut* in rstest).

// mkdirSynced creates dir and its missing parents, syncing each parent
// that gained an entry.
func mkdirSynced(fs vfs.FS, dir string) error {
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	if parent := fs.PathDir(dir); parent != dir {
		if err := mkdirSynced(fs, parent); err != nil {
			return err
		}
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return repl.SyncDir(fs, parent)
	}
	return fs.MkdirAll(dir, 0o755)
}

// readFile returns the contents of the file name of fs.
func readFile(fs vfs.FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeFileSynced writes data to name of fs through a synced temporary
// file renamed over it, then syncs the directory: after a crash name holds
// the old contents or data, never a part.
func writeFileSynced(fs vfs.FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return repl.SyncDir(fs, fs.PathDir(name))
}
