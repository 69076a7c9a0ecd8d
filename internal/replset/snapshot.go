package replset

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/repl"
)

// Snapshots of the data store are Pebble checkpoints in
// Dir/replset/snapshots/<name>, name being the applied index (16 hex
// digits) and a random suffix. The Raft snapshot's data is the name only;
// the checkpoint's files travel after the MsgSnap (repl.SnapshotStreamer)
// as a sequence of (2-byte name length, name, 8-byte size, bytes), ended
// by a zero name length. The newest keepSnapshots checkpoints stay: the
// log's snapshot names one of them, which this member streams to members
// behind its log and restores itself from if it died before its applied
// data reached disk.
const keepSnapshots = 2

func (m *Member) snapDir() string { return filepath.Join(m.dir(), "snapshots") }

// snapPath returns the directory of the checkpoint a descriptor names,
// refusing a name that is not one (it comes from the wire).
func (m *Member) snapPath(desc []byte) (string, error) {
	name := string(desc)
	if len(name) < 18 || strings.ContainsAny(name, `/\.`) {
		return "", fmt.Errorf("replset: %q is not a snapshot name", name)
	}
	return filepath.Join(m.snapDir(), name), nil
}

// Snapshot checkpoints the data store at the applied index (the node loop
// calls it; nothing else writes the store of a member) and names it.
func (sm *stateMachine) Snapshot() ([]byte, error) {
	m := (*Member)(sm)
	name := fmt.Sprintf("%016x-%08x", m.lastApplied.Load(), rand.Uint32())
	if err := mkdirSynced(m.fs, m.snapDir()); err != nil {
		return nil, err
	}
	if err := m.eng.Storage().Checkpoint(filepath.Join(m.snapDir(), name)); err != nil {
		return nil, fmt.Errorf("replset: checkpoint: %w", err)
	}
	m.pruneSnapshots(name)
	return []byte(name), nil
}

// pruneSnapshots removes all but the newest keepSnapshots checkpoints
// (always keeping keep). A reception under way (a temporary directory)
// is left alone: ReadSnapshot removes its own when it fails, and
// removeReceptions those a killed process left.
func (m *Member) pruneSnapshots(keep string) {
	ents, err := m.fs.List(m.snapDir())
	if err != nil {
		return
	}
	var names []string
	for _, e := range ents {
		if !strings.Contains(e, ".") {
			names = append(names, e)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		if i < len(names)-keepSnapshots && n != keep {
			m.fs.RemoveAll(filepath.Join(m.snapDir(), n))
		}
	}
}

// removeReceptions removes the temporary directories of receptions a
// killed process left (called before the node starts).
func (m *Member) removeReceptions() {
	ents, _ := m.fs.List(m.snapDir())
	for _, e := range ents {
		if strings.Contains(e, ".recv-") {
			m.fs.RemoveAll(filepath.Join(m.snapDir(), e))
		}
	}
}

// Restore installs the snapshot taken at index: the bootstrap one is
// empty; any other names a checkpoint this member made or received
// (ReadSnapshot), which replaces the store's contents.
func (sm *stateMachine) Restore(index uint64, data []byte) error {
	m := (*Member)(sm)
	if len(data) == 0 && index <= 1 {
		return nil
	}
	dir, err := m.snapPath(data)
	if err != nil {
		return err
	}
	crash := failpointCrashInRestore()
	progress := func(copied int64) {
		if m.opts.OnRestoreProgress != nil {
			m.opts.OnRestoreProgress(copied)
		}
		if crash && copied > 0 {
			m.log.Warn("failpoint: dying during a snapshot install", "copied", copied)
			os.Exit(137)
		}
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.installing.Store(true)
	defer m.installing.Store(false)
	start := time.Now()
	if err := m.eng.RestoreReplicated(index, dir, progress); err != nil {
		return fmt.Errorf("replset: install snapshot %d: %w", index, err)
	}
	m.lastApplied.Store(index)
	m.log.Info("installed a snapshot", "index", index, "snapshot", string(data), "took", time.Since(start).String())
	// The configuration the snapshot holds, loaded off the node loop: a
	// restore at start runs inside startNode, which holds m.mu. Close
	// waits for it: the engine closes after the member.
	m.loaders.Add(1)
	go func() {
		defer m.loaders.Done()
		if err := m.loadConfig(); err != nil {
			m.log.Error("loading the configuration of a snapshot", "err", err)
		}
	}()
	return nil
}

// WriteSnapshot streams the checkpoint desc names.
func (sm *stateMachine) WriteSnapshot(desc []byte, w io.Writer) error {
	m := (*Member)(sm)
	dir, err := m.snapPath(desc)
	if err != nil {
		return err
	}
	ents, err := m.fs.List(dir)
	if err != nil {
		return err
	}
	slices.Sort(ents)
	for _, e := range ents {
		f, err := m.fs.Open(filepath.Join(dir, e))
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("replset: snapshot %s holds %s, not a file", desc, e)
		}
		if err == nil {
			hdr := binary.BigEndian.AppendUint16(nil, uint16(len(e)))
			hdr = append(hdr, e...)
			hdr = binary.BigEndian.AppendUint64(hdr, uint64(st.Size()))
			if _, err = w.Write(hdr); err == nil {
				var n int64
				n, err = io.Copy(w, io.LimitReader(f, st.Size()))
				if err == nil && n != st.Size() {
					err = io.ErrUnexpectedEOF
				}
			}
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	_, err = w.Write([]byte{0, 0})
	return err
}

// ReadSnapshot stores a streamed checkpoint under its name: into a
// temporary directory, every file synced, then renamed, so a checkpoint
// directory is always whole. One already held is read past.
func (sm *stateMachine) ReadSnapshot(desc []byte, r io.Reader) error {
	m := (*Member)(sm)
	dir, err := m.snapPath(desc)
	if err != nil {
		return err
	}
	if _, err := m.fs.Stat(dir); err == nil {
		_, err := io.Copy(io.Discard, r)
		return err
	}
	if err := mkdirSynced(m.fs, m.snapDir()); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.recv-%08x", dir, rand.Uint32())
	if err := m.fs.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer m.fs.RemoveAll(tmp)
	var total int64
	for {
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return err
		}
		nl := binary.BigEndian.Uint16(l[:])
		if nl == 0 {
			break
		}
		hdr := make([]byte, int(nl)+8)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return err
		}
		name := string(hdr[:nl])
		if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			return fmt.Errorf("replset: snapshot file name %q", name)
		}
		size := int64(binary.BigEndian.Uint64(hdr[nl:]))
		if err := receiveFile(m.fs, filepath.Join(tmp, name), r, size); err != nil {
			return err
		}
		total += size
	}
	if err := repl.SyncDir(m.fs, tmp); err != nil {
		return err
	}
	if err := m.fs.Rename(tmp, dir); err != nil {
		return err
	}
	m.log.Info("received a snapshot", "snapshot", string(desc), "bytes", total)
	return repl.SyncDir(m.fs, m.snapDir())
}

func receiveFile(fs vfs.FS, path string, r io.Reader, size int64) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// failpointCrashInRestore is a test's kill -9 during a snapshot install:
// with CAIRN_TEST_CRASH_IN_RESTORE set, the process exits (no clean-up,
// as a kill) right after the install's first steps, the first time only
// (the variable names a file that is created then; a restarted process
// finds it and installs normally). It dies once the install deleted the
// store's contents and copied its first batch, before the last.
func failpointCrashInRestore() bool {
	p := os.Getenv("CAIRN_TEST_CRASH_IN_RESTORE")
	if p == "" {
		return false
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
