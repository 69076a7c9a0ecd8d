package engine

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// powerCut inserts from several writers on a crashable in-memory filesystem,
// cuts the power (keeps only synced bytes) while they run, reopens the copy
// and returns how many documents acknowledged before the cut are missing.
// The cut comes after 100 ms, or as soon as cutAfter documents are
// acknowledged when cutAfter > 0.
func powerCut(t *testing.T, syncInterval time.Duration, cutAfter int) (acked, missing int) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	e, err := Open("db", Options{FS: fs, SyncInterval: syncInterval, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ackedIDs []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, n)
				d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}})
				res, err := e.Insert(Namespace{"db", "c"}, []bsoncore.Document{d}, true)
				if err != nil || res.Inserted != 1 {
					return
				}
				mu.Lock()
				ackedIDs = append(ackedIDs, id)
				mu.Unlock()
			}
		}()
	}
	waitForCut(&mu, &ackedIDs, cutAfter)
	// Everything acknowledged up to here must be in the crash image.
	mu.Lock()
	mustHave := append([]string(nil), ackedIDs...)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	mu.Unlock()
	close(stop)
	wg.Wait()
	_ = e.Close()

	e2, err := Open("db", Options{FS: crashed, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopen after power cut: %v", err)
	}
	defer e2.Close()
	for _, id := range mustHave {
		v, _ := bson.Marshal(bson.D{{Key: "v", Value: id}})
		if _, found, err := e2.Get(nil, Namespace{"db", "c"}, bsoncore.Document(v).Lookup("v")); err != nil || !found {
			missing++
		}
	}
	return len(mustHave), missing
}

// TestPowerCutKeepsAcknowledgedWrites checks "Durable acknowledgement"
// against a simulated power cut, which (unlike kill -9) also loses what the
// OS had not yet written to disk.
func TestPowerCutKeepsAcknowledgedWrites(t *testing.T) {
	acked, missing := powerCut(t, 0, 0)
	if acked == 0 {
		t.Fatal("nothing was acknowledged; the test proved nothing")
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged documents lost in a power cut", missing, acked)
	}
}

// TestPowerCutDetectsUnsyncedAcks is the control: with acknowledgement before
// sync (a long sync interval) the same test must see losses, or it could not
// have caught a durability bug above. The cut comes after a few hundred
// small documents rather than after 100 ms: timed by the clock, the control
// once saw no loss among 10,749 documents on a loaded machine, most likely
// because Pebble syncs the write-ahead log when it rotates a memtable (the
// first holds 256 KiB), which a cut can follow with every acknowledged
// write synced; a few hundred documents stay inside the first memtable.
//
// The interval mode syncs the log before it starts a new 32 KiB block
// (invariant "Unsynced log is one block"), so only the last block's writes
// can be lost; since every change also writes its oplog entry, a cut can
// fall just after such a sync with nothing unsynced. The control therefore
// gets three cuts and must see a loss in one of them.
func TestPowerCutDetectsUnsyncedAcks(t *testing.T) {
	total := 0
	for attempt := range 3 {
		acked, missing := powerCut(t, time.Hour, 300+attempt*37)
		if acked == 0 {
			t.Fatal("nothing was acknowledged")
		}
		total += acked
		if missing > 0 {
			t.Logf("cut %d: %d of %d documents acknowledged without sync lost", attempt, missing, acked)
			return
		}
	}
	t.Fatalf("no loss among %d documents acknowledged without sync in three cuts: the power-cut test cannot see durability bugs", total)
}

// waitForCut returns after 100 ms, or, when cutAfter > 0, once that many
// documents are acknowledged (at most ten seconds).
func waitForCut(mu *sync.Mutex, acked *[]string, cutAfter int) {
	if cutAfter <= 0 {
		time.Sleep(100 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		mu.Lock()
		n := len(*acked)
		mu.Unlock()
		if n >= cutAfter {
			return
		}
	}
}
