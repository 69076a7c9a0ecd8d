package storage

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// countingFS counts the writes that reach its files.
type countingFS struct {
	vfs.FS
	writes int
}

type countingFile struct {
	vfs.File
	fs *countingFS
}

func (fs *countingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: fs}, nil
}

func (f *countingFile) Write(p []byte) (int, error) { f.fs.writes++; return f.File.Write(p) }

// TestTableWritesGathered checks invariant "Tables written in large
// writes": a table file's sequential writes reach the file in writes of
// up to tableWriteBytes, whatever the sizes written; every call that must
// see the bytes (Sync, Stat, ReadAt, WriteAt, Close) finds them in the
// file; other files' writes pass through one by one.
func TestTableWritesGathered(t *testing.T) {
	type step struct {
		op   string // "write" n bytes, "sync", "stat", "readat", "writeat", "close"
		n    int
		want int // writes that reached the file so far (-1: not checked)
	}
	for _, c := range []struct {
		name  string
		file  string
		steps []step
	}{
		{"4 KiB blocks, then a sync", "000001.sst", []step{
			{"write", 4 << 10, 0}, {"write", 4 << 10, 0}, {"write", 62 * 4 << 10, 0}, {"write", 4 << 10, 1}, {"sync", 0, 2}, {"close", 0, 2}}},
		{"one write larger than the buffer goes through", "000002.sst", []step{
			{"write", 100, 0}, {"write", tableWriteBytes, 2}, {"write", 100, 2}, {"close", 0, 3}}},
		{"a megabyte in 4,100-byte writes", "000003.sst", []step{
			{"write", 1 << 20, -1}, {"sync", 0, 5}, {"close", 0, 5}}},
		{"stat sees the size", "000004.sst", []step{{"write", 1000, 0}, {"stat", 1000, 1}, {"close", 0, 1}}},
		{"readat sees the bytes", "000005.sst", []step{{"write", 1000, 0}, {"readat", 1000, 1}, {"close", 0, 1}}},
		{"writeat lands after the buffered bytes", "000006.sst", []step{{"write", 1000, 0}, {"writeat", 500, 1}, {"write", 10, 1}, {"close", 0, 2}}},
		{"close without a sync", "000007.sst", []step{{"write", 10, 0}, {"close", 0, 1}}},
		{"a blob file is gathered as a table", "000009.blob", []step{
			{"write", 4 << 10, 0}, {"write", 63 * 4 << 10, 0}, {"write", 4 << 10, 1}, {"sync", 0, 2}, {"close", 0, 2}}},
		{"the log passes through", "000008.log", []step{{"write", 10, 1}, {"write", 10, 2}, {"sync", 0, 2}, {"close", 0, 2}}},
		{"the manifest passes through", "MANIFEST-000001", []step{{"write", 10, 1}, {"close", 0, 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			under := &countingFS{FS: vfs.NewMem()}
			fs := newTableFS(under)
			f, err := fs.Create(c.file, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			var want []byte // the file's bytes, as written through
			next := byte(0)
			data := func(n int) []byte {
				p := make([]byte, n)
				for i := range p {
					p[i] = next
					next++
				}
				return p
			}
			for i, s := range c.steps {
				switch s.op {
				case "write":
					if s.want < 0 { // in 4,100-byte pieces
						for left := s.n; left > 0; left -= 4100 {
							p := data(min(left, 4100))
							want = append(want, p...)
							if _, err := f.Write(p); err != nil {
								t.Fatal(err)
							}
						}
						break
					}
					p := data(s.n)
					want = append(want, p...)
					if _, err := f.Write(p); err != nil {
						t.Fatal(err)
					}
				case "sync":
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
				case "stat":
					st, err := f.Stat()
					if err != nil || st.Size() != int64(s.n) {
						t.Fatalf("step %d: size %v, %v; want %d", i, st, err, s.n)
					}
				case "readat":
					p := make([]byte, s.n)
					if _, err := f.ReadAt(p, 0); err != nil && err != io.EOF {
						t.Fatal(err)
					}
					if !bytes.Equal(p, want[:s.n]) {
						t.Fatalf("step %d: read other bytes", i)
					}
				case "writeat":
					p := data(10)
					copy(want[s.n:], p)
					if _, err := f.WriteAt(p, int64(s.n)); err != nil {
						t.Fatal(err)
					}
				case "close":
					if err := f.Close(); err != nil {
						t.Fatal(err)
					}
				}
				if s.want >= 0 && under.writes != s.want {
					t.Fatalf("step %d (%s): %d writes reached the file, want %d", i, s.op, under.writes, s.want)
				}
			}
			g, err := under.Open(c.file)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			got, err := io.ReadAll(g)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the file holds %d bytes (%v), want the %d written", len(got), err, len(want))
			}
		})
	}
}

// TestTableBuffersReused checks tableFS's buffers: a closed table's write
// buffer is the next table's, which writes its own bytes from its start,
// and at most tableBufs closed files' buffers are kept.
func TestTableBuffersReused(t *testing.T) {
	mem := vfs.NewMem()
	fs := newTableFS(mem)
	create := func(name string) *tableFile {
		t.Helper()
		f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		return f.(*tableFile)
	}
	write := func(f *tableFile, b byte, n int) {
		t.Helper()
		if _, err := f.Write(bytes.Repeat([]byte{b}, n)); err != nil {
			t.Fatal(err)
		}
	}
	closeFile := func(f *tableFile) {
		t.Helper()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	a := create("000001.sst")
	write(a, 'a', 1000)
	first := &a.buf[0]
	closeFile(a)
	b := create("000002.sst")
	write(b, 'b', 10)
	if &b.buf[0] != first {
		t.Error("the second table did not write through the first one's closed buffer")
	}
	closeFile(b)
	for name, want := range map[string]string{"000001.sst": strings.Repeat("a", 1000), "000002.sst": strings.Repeat("b", 10)} {
		f, err := mem.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil || string(got) != want {
			t.Errorf("%s holds %d bytes starting %q, want %d bytes of %q (%v)", name, len(got), got[:min(len(got), 4)], len(want), want[:1], err)
		}
	}
	var open []*tableFile
	for i := range tableBufs + 2 {
		f := create(fmt.Sprintf("%06d.sst", 10+i))
		write(f, 'c', 10)
		open = append(open, f)
	}
	for _, f := range open {
		closeFile(f)
	}
	if len(fs.bufs) != tableBufs {
		t.Errorf("%d files closed, %d buffers kept, want %d", len(open), len(fs.bufs), tableBufs)
	}
}
