package storage

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walFS is the filesystem Pebble gets in the interval sync mode. It passes
// every file through unchanged except the write-ahead log's, whose Sync only
// returns: Pebble calls it after its log writer has written a commit's record
// to the file, so a commit with pebble.Sync returns once the record is in the
// operating system (write(2) done) and no sooner — invariant "Written before
// acknowledged". syncAll makes the log durable; DB.syncLoop calls it every
// interval; Write syncs too, whenever the log crosses into a new 32 KiB
// block (see walFile.Write).
//
// Committing with pebble.NoSync instead (what the interval mode did first)
// acknowledges a write while its record may still sit in the log writer's
// buffer in this process: the writer's one flush goroutine writes and then
// syncs, so while a periodic sync waited on the disk, every commit behind it
// stayed in memory, and a kill -9 lost writes acknowledged up to hundreds of
// milliseconds earlier (issue 17).
type walFS struct {
	vfs.FS
	mu    sync.Mutex
	files map[*walFile]struct{}
}

func newWALFS(fs vfs.FS) *walFS { return &walFS{FS: fs, files: map[*walFile]struct{}{}} }

// isWAL reports whether name is a write-ahead log file ("000123.log", or
// "000123-001.log" for a failover log).
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs *walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return fs.track(f), nil
}

func (fs *walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return fs.track(f), nil
}

// Unwrap is the filesystem walFS wraps.
func (fs *walFS) Unwrap() vfs.FS { return fs.FS }

func (fs *walFS) track(f vfs.File) *walFile {
	w := &walFile{File: f, fs: fs}
	fs.mu.Lock()
	fs.files[w] = struct{}{}
	fs.mu.Unlock()
	return w
}

// syncAll syncs every open log file written since its last sync.
func (fs *walFS) syncAll() error {
	fs.mu.Lock()
	files := make([]*walFile, 0, len(fs.files))
	for f := range fs.files {
		files = append(files, f)
	}
	fs.mu.Unlock()
	var errs []error
	for _, f := range files {
		errs = append(errs, f.syncNow())
	}
	return errors.Join(errs...)
}

// walBlockSize is the size of the blocks Pebble's log writer cuts its log
// into (record.blockSize); a single Write never spans two of them.
const walBlockSize = 32 << 10

// walFile is one log file of a walFS.
type walFile struct {
	vfs.File
	fs     *walFS
	off    atomic.Int64 // bytes written; Write runs on Pebble's one flush goroutine
	synced atomic.Int64 // bytes known durable

	mu       sync.Mutex // orders syncNow against Close
	closed   bool
	closeErr error // Close's sync failed: what syncNow reports from then on
}

// Write writes p, first syncing the blocks before this one when the write
// starts a new block (invariant "Unsynced log is one block"). Pebble stamps
// each log chunk with the offset its writer believes synced; since a
// commit's sync returns at once here, that offset runs ahead of the disk.
// When recovering, Pebble takes a hole in the log followed by a block
// whose chunks claim the hole was synced for corruption and refuses to
// open; it reads ahead block by block from the block after the hole, so
// holes confined to the last block, the only one unsynced, read as the
// torn tail of a crash, as they are.
func (f *walFile) Write(p []byte) (int, error) {
	start := f.off.Load()
	if blockStart := start - start%walBlockSize; f.synced.Load() < blockStart {
		if err := f.File.Sync(); err != nil {
			return 0, err
		}
		f.synced.Store(start)
	}
	n, err := f.File.Write(p)
	f.off.Add(int64(n))
	return n, err
}

// Sync returns at once: the log writer has written the record (see walFS).
func (f *walFile) Sync() error { return nil }

// SyncData returns at once, as Sync does.
func (f *walFile) SyncData() error { return nil }

// SyncTo promises nothing (fullSync false), as the interface allows.
func (f *walFile) SyncTo(int64) (bool, error) { return false, nil }

// Close syncs the file for real first: Pebble closes a log when it rotates
// to a new one, and the closed log is never synced by syncAll again. The
// file leaves syncAll's set only once that sync is done: a syncAll that
// began while it ran waits for it (syncNow takes f.mu), so the start of a
// completed syncAll still bounds what a power cut can lose, the closing
// log's tail included (TestSyncAllWaitsForClosingLog).
func (f *walFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	err := f.File.Sync()
	f.closeErr = err
	f.fs.mu.Lock()
	delete(f.fs.files, f)
	f.fs.mu.Unlock()
	return errors.Join(err, f.File.Close())
}

// syncNow makes everything written so far durable.
func (f *walFile) syncNow() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	off := f.off.Load()
	if f.closed {
		return f.closeErr
	}
	if f.synced.Load() >= off {
		return nil
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	for { // Write may have synced further meanwhile
		cur := f.synced.Load()
		if cur >= off || f.synced.CompareAndSwap(cur, off) {
			return nil
		}
	}
}
