package storage

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// tableFS gathers the writes of new tables into large ones (invariant
// "Tables written in large writes", doc.go).
//
// Why: Pebble writes a table through a bufio.Writer of 4 KiB
// (objstorageprovider's fileBufferedWritable), so every data block of a
// flush or a compaction — about 4 KiB each — is a write system call of
// its own: under YCSB A that was half a write call per operation beside
// the reply's one (BENCHMARKS.md, issue 16 session 15), some 30,000 a
// second's worth of calls for the bytes a few hundred large writes carry.
//
// How: a table file (".sst") or a blob file (".blob") is wrapped in
// tableFile, which holds what is written in a tableWriteBytes buffer and
// writes it when full, and before anything that must see the bytes in
// the file (Sync, SyncData, SyncTo, Close, Stat, Read, ReadAt, WriteAt). Pebble syncs a table before it
// enters the LSM (the writer's Finish), so a crash loses nothing a sync
// covered; other files (the log, the manifest) are left as they are.
//
// A closed file's buffer waits in bufs for the next table (Pebble writes
// a few at a time: a flush, a compaction), instead of each allocating its
// own (BenchmarkInsertYCSB's flushes and compactions allocated 0.5 MB
// of buffers per 1,000 records, 30 % of all its bytes); at most tableBufs wait, so
// a store holds at most 1 MiB of them. A write's bytes are in the file
// (or the kernel) once File.Write returns — io.Writer's contract: it does
// not keep p — so a closed file's buffer is read by nothing.
type tableFS struct {
	vfs.FS
	bufs chan []byte
}

// tableWriteBytes is the size of a table file's write buffer.
const tableWriteBytes = 256 << 10

// tableBufs is how many closed files' write buffers a tableFS keeps.
const tableBufs = 4

// isTable reports whether name is a file Pebble writes as it writes a
// table: a table (".sst") or a blob file (".blob": the oplog's values a
// flush separates out of its tables, invariant "Oplog values written
// once"), written block by block through the same 4 KiB bufio.Writer and
// synced by the same Finish before the flush's tables enter the LSM.
func isTable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

func newTableFS(fs vfs.FS) *tableFS { return &tableFS{FS: fs, bufs: make(chan []byte, tableBufs)} }

func (fs *tableFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isTable(name) {
		return f, err
	}
	return &tableFile{File: f, bufs: fs.bufs}, nil
}

func (fs *tableFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isTable(newname) {
		return f, err
	}
	return &tableFile{File: f, bufs: fs.bufs}, nil
}

func (fs *tableFS) Unwrap() vfs.FS { return fs.FS }

// tableFile is a table being written: sequential writes gathered in buf.
type tableFile struct {
	vfs.File
	buf  []byte
	bufs chan []byte // its tableFS's closed files' buffers
	err  error       // a failed write of buf: every later call returns it
}

func (f *tableFile) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(f.buf)+len(p) > tableWriteBytes {
		if err := f.flush(); err != nil {
			return 0, err
		}
		if len(p) >= tableWriteBytes {
			return f.File.Write(p)
		}
	}
	if f.buf == nil {
		select {
		case f.buf = <-f.bufs:
		default:
			f.buf = make([]byte, 0, tableWriteBytes)
		}
	}
	f.buf = append(f.buf, p...)
	return len(p), nil
}

// flush writes what buf holds.
func (f *tableFile) flush() error {
	if f.err != nil {
		return f.err
	}
	if len(f.buf) == 0 {
		return nil
	}
	_, err := f.File.Write(f.buf)
	f.buf = f.buf[:0]
	f.err = err
	return err
}

func (f *tableFile) Close() error {
	err := f.flush()
	if f.buf != nil {
		select {
		case f.bufs <- f.buf[:0]:
		default: // tableBufs wait already
		}
		f.buf = nil
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *tableFile) Sync() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *tableFile) SyncData() error {
	if err := f.flush(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *tableFile) SyncTo(length int64) (bool, error) {
	if err := f.flush(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

func (f *tableFile) Stat() (vfs.FileInfo, error) {
	if err := f.flush(); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *tableFile) Read(p []byte) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *tableFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *tableFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}
