package engine

import (
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/keystring"
)

// The history crash test cuts the power (and, with every unsynced byte
// kept, kills the process) under writers of a versioned collection, with
// the power-cut test's crash images (pcUnsynced). Each image must keep
// invariant "History follows documents" (CheckHistory: versions
// contiguous, the newest version the document) and every acknowledged
// durable version: each write of a document makes exactly one version, so
// the history of document id holds versions 1…n with n at least the
// number of its writes acknowledged before the last completed sync, and
// version k is write k (the document's "ver" field, or a tombstone where
// write k was a delete).

var historyCuts = flag.Int("history.cuts", 15, "TestHistoryCrashKeepsVersions: power cuts per sync mode")

var hcNS = Namespace{"hc", "docs"}

func TestHistoryCrashKeepsVersions(t *testing.T) {
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"always", 0}, {"interval", 10 * time.Millisecond}} {
		t.Run(mode.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			fs := vfs.NewCrashableMem()
			e, err := Open("db", Options{FS: fs, SyncInterval: mode.every, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
			if err := e.CreateCollection(hcNS, opts); err != nil {
				t.Fatal(err)
			}
			// writes[id][k-1] is write k of document id (nil: a delete);
			// acked[id][k-1] when it was acknowledged (zero: not yet).
			var mu sync.Mutex
			writes := make([][][]byte, pcDocs)
			acked := make([][]time.Time, pcDocs)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range pcWriters {
				wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						id := w + pcWriters*wrng.IntN(pcDocs/pcWriters)
						mu.Lock()
						k := len(writes[id]) + 1
						exists := k > 1 && writes[id][k-2] != nil
						var next []byte
						if !exists || wrng.IntN(10) < 7 {
							next = pcDoc(wrng, id, k)
						}
						writes[id] = append(writes[id], next)
						acked[id] = append(acked[id], time.Time{})
						mu.Unlock()
						var err error
						switch {
						case !exists:
							_, err = e.Insert(hcNS, []bsoncore.Document{next}, true)
						case next == nil:
							_, err = e.Delete(hcNS, pcID(id))
						default:
							_, err = e.Replace(hcNS, pcID(id), next)
						}
						if err != nil {
							t.Errorf("write %d of %d: %v", k, id, err)
							return
						}
						mu.Lock()
						acked[id][k-1] = time.Now()
						mu.Unlock()
					}
				}()
			}
			checked, versions := 0, 0
			want := shortCuts(*historyCuts)
			for range want {
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
				mu.Lock()
				durable := e.Storage().SyncedBefore()
				keep := make([]int, pcDocs) // versions that must survive
				model := make([][][]byte, pcDocs)
				for id := range pcDocs {
					for k := len(acked[id]); k > 0; k-- {
						if at := acked[id][k-1]; !at.IsZero() && at.Before(durable) {
							keep[id] = k
							break
						}
					}
					model[id] = append([][]byte(nil), writes[id]...)
				}
				img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pcUnsynced(rng), RNG: rng})
				mu.Unlock()
				versions += hcCheck(t, img, keep, model)
				if t.Failed() {
					break
				}
				checked++
			}
			close(stop)
			wg.Wait()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if checked != want || versions == 0 {
				t.Fatalf("%d images checked holding %d versions: the test proved nothing", checked, versions)
			}
			t.Logf("%d crash images, %d versions checked, none lost, histories contiguous", checked, versions)
		})
	}
}

// hcCheck opens a crash image and checks it against the writes; it
// returns how many versions it checked.
func hcCheck(t *testing.T, img *vfs.MemFS, keep []int, model [][][]byte) int {
	t.Helper()
	e, err := Open("db", Options{FS: img, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Errorf("reopen: %v", err)
		return 0
	}
	defer e.Close()
	if err := e.CheckHistory(hcNS); err != nil {
		t.Error(err)
		return 0
	}
	r, err := e.NewReader(hcNS)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for id := range pcDocs {
		cur, err := r.Versions(VersionBounds{IDKey: keystring.Append(nil, pcID(id)), VHi: ^uint64(0)})
		if err != nil {
			t.Fatal(err)
		}
		newest := uint64(0)
		for {
			v, ok, err := cur.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			newest = max(newest, v.V)
			n++
			if int(v.V) > len(model[id]) {
				t.Errorf("document %d has version %d but only %d writes were made", id, v.V, len(model[id]))
				break
			}
			want := model[id][v.V-1]
			if got := hcDesc(v.Doc); got != hcDesc(want) {
				t.Errorf("document %d version %d is %s, write %d was %s", id, v.V, got, v.V, hcDesc(want))
			}
		}
		_ = cur.Close()
		if int(newest) < keep[id] {
			t.Errorf("document %d: history ends at version %d, but write %d was acknowledged and durable", id, newest, keep[id])
		}
	}
	return n
}

// hcDesc identifies a version by its write number ("ver"), or "deleted".
func hcDesc(doc []byte) string {
	if doc == nil {
		return "deleted"
	}
	return fmt.Sprint(bsoncore.Document(doc).Lookup("ver").AsInt64())
}
