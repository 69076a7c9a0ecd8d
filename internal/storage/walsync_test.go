package storage

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSyncAllWaitsForClosingLog: a log Pebble closes (it rotated to a new
// one) is synced by its Close; a syncAll that runs meanwhile must not
// return before that sync does, or DB.SyncedBefore would promise the
// closing log's unsynced tail to a power cut (the interval mode's
// "Written before acknowledged"; TestPowerCutsKeepAcknowledgedWrites in
// package engine lost writes to this under load). Fails if Close drops the
// file from syncAll's set before its sync. gateFS: overlap_test.go.
func TestSyncAllWaitsForClosingLog(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), entered: make(chan struct{}), gate: make(chan struct{})}
	fs := newWALFS(g)
	f, err := fs.Create("000001.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("a record acknowledged before the periodic sync")); err != nil {
		t.Fatal(err)
	}
	g.armed.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	<-g.entered // Close is in its sync
	var released atomic.Bool
	go func() {
		time.Sleep(50 * time.Millisecond)
		released.Store(true)
		close(g.gate)
	}()
	if err := fs.syncAll(); err != nil {
		t.Fatal(err)
	}
	if !released.Load() {
		t.Fatal("syncAll returned while the closing log's sync was still running")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
