package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hoptrace"
)

// The durable floor is the protocol floor with a write-ahead log: every
// write command's statements are appended to one file and made durable
// with fdatasync before the command is answered, as `cairn serve --sync
// always` makes every acknowledged write durable. It is the least any
// server pays for durable writes over the wire — the socket, the framing
// and the disk's sync, with no database work — so the workloads that
// write (load, A, B, D, E, F) have a floor that the syncs they must wait
// for are under, where the protocol floor has none (invariant "The
// durable floor syncs before it answers", TestDurableFloorSyncsBeforeReply).
//
// Group commit, as any durable server does it: a write appends its record
// to a shared buffer and waits until a sync covers it; the first writer
// to find no sync running writes the buffer and syncs it for every record
// appended so far, and the next waiter to find its record not yet covered
// starts the next sync as soon as that one ends.
//
// The log's file is written with zeros once at start (walRingBytes) and
// then overwritten in a ring, so each fdatasync writes the records' blocks
// alone, never the file's new size — the cheapest sync a log can have
// (storage's "Log syncs overwrite" does the same for Cairn's logs). The
// floor never reads its log back: it measures the cost of durability, not
// recovery.

// walRingBytes is the durable floor's log file: records wrap around it.
const walRingBytes = 64 << 20

// floorWAL is the durable floor's log.
type floorWAL struct {
	f    *os.File
	ring int64 // the file's size: records wrap around it

	mu       sync.Mutex
	cond     *sync.Cond
	buf      []byte // records appended and not yet written
	spare    []byte // the buffer of the sync in flight, reused
	appended uint64 // records appended
	durable  uint64 // records a finished sync covered
	syncing  bool
	off      int64 // where the next write goes in the ring
	err      error // the first failed write or sync: every later write fails
	syncs    uint64
	// synced is when the last sync returned (package hoptrace's trace
	// builds only).
	synced int64
}

// openFloorWAL creates the log file in dir, filled with zeros and synced.
func openFloorWAL(dir string) (*floorWAL, error) { return openFloorWALSized(dir, walRingBytes) }

// openFloorWALSized is openFloorWAL with a ring of ring bytes (a multiple
// of 4 KiB; tests use a small one).
func openFloorWALSized(dir string, ring int64) (*floorWAL, error) {
	f, err := os.OpenFile(filepath.Join(dir, "floor.wal"), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, min(ring, 1<<20))
	for off := int64(0); off < ring; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), ring-off)], off); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	w := &floorWAL{f: f, ring: ring}
	w.cond = sync.NewCond(&w.mu)
	return w, nil
}

// logWrite makes a write command's statements durable before its reply
// when the floor has a log (the durable floor).
func (f *protocolFloor) logWrite(stmts []bsoncore.Document) error {
	if f.wal == nil || len(stmts) == 0 {
		return nil
	}
	return f.wal.write(stmts)
}

// write appends recs as one record and returns once a sync has made it
// durable.
func (w *floorWAL) write(recs []bsoncore.Document) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, r := range recs {
		w.buf = append(w.buf, r...)
	}
	w.appended++
	mine := w.appended
	for w.durable < mine && w.err == nil {
		if w.syncing {
			w.cond.Wait()
			continue
		}
		// Lead the next sync: it covers every record appended so far.
		w.syncing = true
		buf, upto := w.buf, w.appended
		w.buf = w.spare[:0]
		var t0 int64
		if hoptrace.Enabled {
			t0 = hoptrace.Since(hoptrace.FloorIdle, w.synced)
			hoptrace.Count(hoptrace.FloorBatch, int(upto-w.durable))
		}
		w.mu.Unlock()
		err := w.flush(buf)
		w.mu.Lock()
		if hoptrace.Enabled {
			w.synced = hoptrace.Since(hoptrace.FloorSync, t0)
		}
		w.spare = buf
		w.syncing = false
		w.syncs++
		if err != nil {
			w.err = fmt.Errorf("durable floor: log: %w", err)
		} else {
			w.durable = upto
		}
		w.cond.Broadcast()
	}
	if hoptrace.Enabled {
		hoptrace.Since(hoptrace.FloorWake, w.synced)
	}
	return w.err
}

// flush writes buf at the ring's offset (wrapping) and syncs its data.
// Only the leader of a sync calls it, so off needs no lock.
func (w *floorWAL) flush(buf []byte) error {
	for len(buf) > 0 {
		if w.off == w.ring {
			w.off = 0
		}
		n := min(int64(len(buf)), w.ring-w.off)
		if _, err := w.f.WriteAt(buf[:n], w.off); err != nil {
			return err
		}
		w.off += n
		buf = buf[n:]
	}
	return fdatasync(w.f)
}

func (w *floorWAL) close() error {
	if w == nil {
		return nil
	}
	return errors.Join(w.f.Close(), os.Remove(w.f.Name()))
}
