package storage

import (
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/hoptrace"
)

// aheadFS writes zeros ahead of the write-ahead log's writer, so that
// the small log syncs of a write-light load (YCSB-B's single updates:
// a few KB per fdatasync) overwrite blocks the file already holds
// instead of appending (invariant "Log syncs overwrite", doc.go).
//
// Why: Pebble appends to a new log file (it preallocates with
// FALLOC_FL_KEEP_SIZE, which leaves the file's size and its extents
// unwritten), and a recycled log is appended to past its old size. On
// such a file every fdatasync must also make the file's new size and
// the extents it converted durable: a journal commit on a journaling
// filesystem (ext4's default, XFS), a synchronous inode write on ext4
// without one (this machine's); either way a second device write after
// the data's. On blocks the file already wrote, fdatasync writes the
// data alone. Measured on this machine's disk (BENCHMARKS.md, "Durable
// updates: what each one costs the disk"): a synced 1 KiB write took
// 0.8× the system CPU (medians of 8 interleaved pairs, twice) and
// 0.7–0.9× the time, noisily.
//
// How: the log writer appends sequentially (Write, on Pebble's one flush
// goroutine). When its next write would pass the end of what the file
// holds, aheadFile first writes logAheadBytes of zeros from there
// (WriteAt), so only the first sync after each such step carries the
// metadata: one metadata write per logAheadBytes of log instead of one
// per sync. It does so only while the log's syncs are small (a moving
// average of the bytes each wrote below logAheadMaxSync): a bulk load
// that syncs megabytes at a time pays one metadata write per sync
// anyway, and the zeros would double its log's writes. A log that ends
// in zeros reads, after a crash, as one whose tail was preallocated:
// Pebble stops at the first zeroed chunk (record.ErrZeroedChunk), as it
// does for its own preallocation and for recycled logs; zeros are never
// written below the writer's offset, so no record is overwritten. A
// failed zero write fails the log write it came before (invariant "Stop
// on a failed log" then applies as to any failed log write).
type aheadFS struct {
	vfs.FS
	// avg is the moving average of the bytes a log sync made durable,
	// across log files (a new log inherits the load's pattern).
	avg atomic.Int64
}

// logAhead turns the writing ahead on; only BenchmarkLogSyncs turns it
// off, to measure it against the plain log in the same run.
var logAhead = true

// logAheadBytes is how far ahead of the writer a step of zeros reaches.
const logAheadBytes = 1 << 20

// logAheadSteps counts the steps of zeros written, in every store of the
// process (TestLogSyncsOverwrite).
var logAheadSteps atomic.Int64

// logAheadMaxSync is the largest average log bytes per sync at which
// the log is written ahead.
const logAheadMaxSync = 64 << 10

func newAheadFS(fs vfs.FS) *aheadFS { return &aheadFS{FS: fs} }

// LogAheadFS is fs with the store's writing ahead of write-ahead logs
// (invariant "Log syncs overwrite") for another Pebble instance that
// syncs its log in small writes: a replica set member's Raft log (package
// replset), synced once per append. A log's bytes per sync are averaged
// per returned filesystem.
func LogAheadFS(fs vfs.FS) vfs.FS {
	if !logAhead {
		return fs
	}
	return newAheadFS(fs)
}

func (fs *aheadFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) || !onDisk(f) {
		return f, err
	}
	return &aheadFile{File: f, fs: fs}, nil
}

func (fs *aheadFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) || !onDisk(f) {
		return f, err
	}
	a := &aheadFile{File: f, fs: fs}
	// A recycled log holds its old contents: they are blocks to overwrite.
	if st, err := f.Stat(); err == nil {
		a.held = st.Size()
	}
	return a, nil
}

// logAheadInMemory writes ahead in files without a descriptor too (an
// in-memory filesystem's: they have no metadata to spare, and MemFS
// grows a file a byte at a time); TestLogSyncsOverwrite sets it.
var logAheadInMemory = false

// onDisk reports whether f is an operating system's file, whose syncs
// the writing ahead is for.
func onDisk(f vfs.File) bool { return logAheadInMemory || f.Fd() != vfs.InvalidFd }

// Unwrap is the filesystem aheadFS wraps.
func (fs *aheadFS) Unwrap() vfs.FS { return fs.FS }

// aheadFile is one log file of an aheadFS.
type aheadFile struct {
	vfs.File
	fs     *aheadFS
	mu     sync.Mutex // Write is the flush goroutine's; Sync may come from another
	off    int64      // bytes the writer wrote
	held   int64      // the file holds written blocks up to here (≥ off once written ahead)
	synced int64      // off at the last sync
	zeros  []byte
}

// Write writes p at the writer's offset, first writing zeros ahead when p
// would pass what the file holds and the log's syncs are small.
func (f *aheadFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	end := f.off + int64(len(p))
	if end > f.held && f.small() {
		if f.zeros == nil {
			f.zeros = make([]byte, logAheadBytes)
		}
		from := max(f.held, f.off)
		to := end + logAheadBytes - end%logAheadBytes
		for at := from; at < to; {
			n := min(int64(len(f.zeros)), to-at)
			if _, err := f.File.WriteAt(f.zeros[:n], at); err != nil {
				f.mu.Unlock()
				return 0, err
			}
			at += n
		}
		f.held = to
		logAheadSteps.Add(1)
	}
	f.mu.Unlock()
	var t0 int64
	if hoptrace.Enabled {
		t0 = hoptrace.Now()
		f.mu.Lock()
		first := f.off == f.synced // the first write since the last sync
		f.mu.Unlock()
		if first {
			hoptrace.Since(hoptrace.LogIdle, logSynced.Get())
			hoptrace.Since(hoptrace.LogWake, groupCommitted.Get())
		}
	}
	n, err := f.File.Write(p)
	if hoptrace.Enabled {
		hoptrace.Since(hoptrace.LogWrite, t0)
	}
	f.mu.Lock()
	f.off += int64(n)
	f.mu.Unlock()
	return n, err
}

// logSynced is when a log's last sync returned, and groupCommitted when
// the pipeline's last group commit returned (package hoptrace's trace
// builds only).
var logSynced, groupCommitted hoptrace.Mark

// traceSync runs a sync of the log, tracing it (package hoptrace).
func (f *aheadFile) traceSync(sync func() error, n int64) error {
	if !hoptrace.Enabled {
		return sync()
	}
	t0 := hoptrace.Now()
	err := sync()
	logSynced.Set(hoptrace.Since(hoptrace.LogSync, t0))
	hoptrace.Count(hoptrace.LogBytes, int(n))
	return err
}

// small reports whether the log's recent syncs average below
// logAheadMaxSync bytes, and the writer has not written that much since
// the last one (a bulk group written in 32 KiB blocks before its sync).
func (f *aheadFile) small() bool {
	return f.fs.avg.Load() < logAheadMaxSync && f.off-f.synced < logAheadMaxSync
}

// noteSync updates the average bytes per sync (weight 1/8 for the newest)
// and returns the bytes this sync covers.
func (f *aheadFile) noteSync() int64 {
	f.mu.Lock()
	n := f.off - f.synced
	avg := f.fs.avg.Load() // syncs of one log file come one at a time
	f.fs.avg.Store(avg + (n-avg)/8)
	f.synced = f.off
	f.mu.Unlock()
	return n
}

// Sync syncs the file and counts the sync.
func (f *aheadFile) Sync() error {
	return f.traceSync(f.File.Sync, f.noteSync())
}

// SyncData syncs the file's data and counts the sync.
func (f *aheadFile) SyncData() error {
	return f.traceSync(f.File.SyncData, f.noteSync())
}
