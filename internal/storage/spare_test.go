package storage

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// spareNow is the spare buffer's first byte, nil when none is kept.
func spareNow(db *DB) *byte {
	s := &db.pipe.spare
	s.mu.Lock()
	defer s.mu.Unlock()
	if cap(s.buf) == 0 {
		return nil
	}
	return &s.buf[:1][0]
}

// writeRecords writes n records of valueLen bytes in one request: keys
// d<tag><4 digits>, every value byte tag. One writer at a time, so each
// call is a group of its own, finished (its buffer given) before Write
// returns.
func writeRecords(t *testing.T, db *DB, tag byte, n, valueLen int) {
	t.Helper()
	value := bytes.Repeat([]byte{tag}, valueLen)
	err := db.Write(func(tx *Txn) error {
		for i := range n {
			tx.Set(fmt.Appendf(nil, "d%c%04d", tag, i), value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkRecords checks writeRecords' records of tag, through db.Get.
func checkRecords(t *testing.T, db *DB, tag byte, n, valueLen int) {
	t.Helper()
	want := string(bytes.Repeat([]byte{tag}, valueLen))
	for i := range n {
		k := fmt.Sprintf("d%c%04d", tag, i)
		if v, ok := mustGet(t, db, k); !ok || v != want {
			t.Fatalf("%s: found %v, %d bytes, want %d bytes of %q", k, ok, len(v), valueLen, tag)
		}
	}
}

// TestGroupBufferReused checks invariant "Group buffers reused" as one
// writer sees it: a large group's buffer is kept and the next group as
// large starts on it, so the same buffer goes round; a small group after
// them ends the spare. With 4 MiB memtables (groups of 1 MiB) a group of
// 1,500 1000-byte records is ~1.5 MiB, past what Pebble's pool keeps.
func TestGroupBufferReused(t *testing.T) {
	db := openTest(t, Options{CacheSize: 16 << 20})
	const n, size = 1500, 1000
	writeRecords(t, db, 'a', n, size)
	if spareNow(db) == nil {
		t.Fatalf("after a group of %d bytes no buffer is kept", db.CommitGroups().MaxBytes)
	}
	// The second group starts on the spare or, if the first group's
	// buffer had less room than the hint, on a new one; either way the
	// buffer it leaves has the room for the third, which starts on it.
	writeRecords(t, db, 'b', n, size)
	second := spareNow(db)
	writeRecords(t, db, 'c', n, size)
	if third := spareNow(db); third == nil || third != second {
		t.Fatalf("the third group of the same size left buffer %p, want the second's %p again", third, second)
	}
	// The next group is expected as large (the hint follows the last
	// group), so it starts on the spare and gives it back; the one after
	// it is expected small and drops it.
	writeRecords(t, db, 'x', 1, 10)
	if spareNow(db) == nil {
		t.Fatal("a small group expected large did not give its buffer back")
	}
	writeRecords(t, db, 'y', 1, 10)
	if p := spareNow(db); p != nil {
		t.Fatalf("after a group expected small the spare still holds %p", p)
	}
	for _, tag := range []byte("abcxy") {
		if tag < 'x' {
			checkRecords(t, db, tag, n, size)
		} else {
			checkRecords(t, db, tag, 1, 10)
		}
	}
}

// TestSpareBounded checks the bound of invariant "Group buffers reused":
// one buffer at most, over what Pebble's pool keeps and at most a
// memtable's size.
func TestSpareBounded(t *testing.T) {
	const max = 4 << 20
	for _, c := range []struct {
		name  string
		caps  []int // given in order
		wantN int   // the capacity kept, 0: none
	}{
		{"Pebble's pool keeps 1 MiB", []int{pebbleKeepsBytes}, 0},
		{"just past Pebble's pool", []int{pebbleKeepsBytes + 1}, pebbleKeepsBytes + 1},
		{"a memtable's size", []int{max}, max},
		{"past a memtable's size", []int{max + 1}, 0},
		{"one buffer: the last given", []int{2 << 20, 3 << 20}, 3 << 20},
		{"one too large leaves the kept one", []int{2 << 20, max + 1}, 2 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spareBuffer{max: max}
			for _, n := range c.caps {
				s.give(make([]byte, 0, n))
			}
			if got := cap(s.take()); got != c.wantN {
				t.Errorf("kept a buffer of %d bytes, want %d", got, c.wantN)
			}
			if got := s.take(); got != nil {
				t.Errorf("a second take got %d bytes, want none", cap(got))
			}
		})
	}
}

// TestGroupBufferOwnership checks that no buffer is reused while Pebble
// can read it (invariant "Group buffers reused"). A group of half a
// memtable or more is a flushable batch whose buffer Pebble reads until
// it is flushed; an iterator opened after it reads its records from that
// buffer for as long as the iterator lives, flushed or not (flushes are
// held until it is open, so that it reads the batch, not a table). Two
// large groups follow, each expected large enough to start on the spare:
// were the flushable batch's buffer kept, they would write their records
// over the iterator's. Also: the store's Pebble has no failover WAL, the
// one log writer that reads a batch after its commit.
func TestGroupBufferOwnership(t *testing.T) {
	const cache = 16 << 20
	fs := &tableGateFS{FS: vfs.Default, open: make(chan struct{})}
	db := openTest(t, Options{CacheSize: cache, FS: fs})
	if o := pebbleOptions(db.opts, nil); o.WALFailover != nil {
		t.Fatal("the store's Pebble has a failover WAL, which reads a batch's buffer after its commit")
	}
	const size = 1000
	const large = 2600 // records of the flushable group: ~2.6 MiB of a 4 MiB memtable
	if large*size < int(memTableSize(cache))/2 {
		t.Fatalf("a group of %d bytes is not half a %d-byte memtable", large*size, memTableSize(cache))
	}
	writeRecords(t, db, 'a', 1500, size) // a spare
	fs.shut.Store(true)
	writeRecords(t, db, 'f', large, size)
	it, err := db.NewIter([]byte("df"), []byte("dg"))
	close(fs.open) // let the flushes through
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	writeRecords(t, db, 'g', 1500, size)
	writeRecords(t, db, 'h', 1500, size)
	want := bytes.Repeat([]byte{'f'}, size)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			t.Fatal(err)
		}
		if k := fmt.Sprintf("df%04d", n); string(it.Key()) != k || !bytes.Equal(v, want) {
			t.Fatalf("record %d of the flushable group reads %q, %d bytes starting %q; want %s, %d bytes of 'f'", n, it.Key(), len(v), v[:min(len(v), 8)], k, size)
		}
		n++
	}
	if n != large {
		t.Fatalf("the iterator read %d records of the flushable group, want %d", n, large)
	}
	checkRecords(t, db, 'g', 1500, size)
	checkRecords(t, db, 'h', 1500, size)
}

// tableGateFS holds the creation of every table file while shut, until
// open is closed: no flush completes meanwhile. The log and everything
// else pass.
type tableGateFS struct {
	vfs.FS
	shut atomic.Bool
	open chan struct{}
}

func (fs *tableGateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if fs.shut.Load() && strings.HasSuffix(name, ".sst") {
		<-fs.open
	}
	return fs.FS.Create(name, category)
}
