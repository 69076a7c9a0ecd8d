package storage

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// gateFS holds every sync of a write-ahead log file until the test lets it
// through (while armed), and can add a fixed latency to each log sync.
type gateFS struct {
	vfs.FS
	armed   atomic.Bool
	entered chan struct{} // a log sync is waiting at the gate
	gate    chan struct{} // one receive lets one log sync through
	delay   time.Duration
}

func (fs *gateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return &gateFile{File: f, fs: fs}, nil
}

func (fs *gateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return &gateFile{File: f, fs: fs}, nil
}

type gateFile struct {
	vfs.File
	fs *gateFS
}

func (f *gateFile) Sync() error {
	if f.fs.armed.Load() {
		f.fs.entered <- struct{}{}
		<-f.fs.gate
	}
	if f.fs.delay > 0 {
		time.Sleep(f.fs.delay)
	}
	return f.File.Sync()
}

func (f *gateFile) SyncData() error { return f.Sync() }

// TestOverlappedSync checks invariant "Overlapped sync": the next group's
// requests run while a group's log sync is in flight, and that next group
// is acknowledged only after the first one, and only after its own sync.
func TestOverlappedSync(t *testing.T) {
	fs := &gateFS{FS: vfs.NewMem(), entered: make(chan struct{}), gate: make(chan struct{})}
	db := openTest(t, Options{FS: fs})
	fs.armed.Store(true)
	t.Cleanup(func() { fs.armed.Store(false); close(fs.gate) }) // let a held sync through on failure

	firstDone, secondDone, secondRan := make(chan error, 1), make(chan error, 1), make(chan struct{})
	go func() { firstDone <- db.Write(func(tx *Txn) error { tx.Set([]byte("a"), nil); return nil }) }()
	<-fs.entered // the first group's sync is held

	go func() {
		secondDone <- db.Write(func(tx *Txn) error {
			// The first group's write is visible to the next group.
			if ok, err := tx.Has([]byte("a")); !ok || err != nil {
				return fmt.Errorf("first group's write not visible: %v %v", ok, err)
			}
			close(secondRan)
			tx.Set([]byte("b"), nil)
			return nil
		})
	}()
	select {
	case <-secondRan:
	case <-time.After(10 * time.Second):
		t.Fatal("the next group was not applied while the first group's sync was in flight")
	}
	select {
	case err := <-firstDone:
		t.Fatalf("first write acknowledged before its sync completed: %v", err)
	case err := <-secondDone:
		t.Fatalf("second write acknowledged before the first group's sync completed: %v", err)
	case <-time.After(50 * time.Millisecond):
	}

	fs.gate <- struct{}{} // the first group's sync completes
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	<-fs.entered // the second group's own sync is held
	select {
	case err := <-secondDone:
		t.Fatalf("second write acknowledged before its own sync: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	fs.armed.Store(false)
	fs.gate <- struct{}{}
	if err := <-secondDone; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSlowSync measures the synced insert rate of 16 writers per core
// against a log whose sync takes a fixed 1 ms (an in-memory filesystem), so
// the figure depends on the pipeline, not on a shared disk. apply=30us adds
// that much CPU to each request, about what an indexed update costs,
// which is the work "Overlapped sync" hides behind the previous group's sync.
func BenchmarkSlowSync(b *testing.B) {
	value := make([]byte, benchValueSize)
	for _, work := range []time.Duration{0, 30 * time.Microsecond} {
		b.Run(fmt.Sprintf("apply=%v", work), func(b *testing.B) {
			db := openTest(b, Options{FS: &gateFS{FS: vfs.NewMem(), delay: time.Millisecond}})
			var seq atomic.Uint64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				var key []byte
				for pb.Next() {
					n := seq.Add(1)
					key = benchKey(key, n)
					err := db.Write(func(tx *Txn) error {
						spin(work, n)
						tx.Set(key, value)
						return nil
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// spin burns about d of CPU.
func spin(d time.Duration, seed uint64) {
	if d == 0 {
		return
	}
	var buf [8]byte
	for start := time.Now(); time.Since(start) < d; {
		for range 64 {
			binary.LittleEndian.PutUint64(buf[:], seed)
			seed = seed*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Add(seed)
}

var sink atomic.Uint64
