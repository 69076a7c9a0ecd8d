package engine

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The power-cut test cuts the power at random moments of a running engine:
// writers insert, replace and delete documents of a collection with a unique
// and a secondary index while Pebble flushes and compacts, and each cut takes
// a crash image of the in-memory filesystem (vfs.CrashClone: what was synced,
// plus a share of what was not, torn at 4 KiB blocks: see pcUnsynced). Every image is
// reopened and must hold, for each document, the state of its last write
// acknowledged before the cut — with SyncAlways — or before the start of the
// last completed log sync in the interval mode (storage.DB.SyncedBefore), or
// a later state a write had reached; its indexes must agree with its
// documents. Each round of cuts writes on from its predecessor's last image,
// so recovery is itself cut early and often. `make powercut` runs 10,000
// cuts; `make test` runs -powercut.cuts per mode, and a quarter of them
// under -short (its second race pass: shortCuts).

var (
	powerCuts = flag.Int("powercut.cuts", 120, "TestPowerCutsKeepAcknowledgedWrites: power cuts per sync mode")
	powerSeed = flag.Uint64("powercut.seed", 0, "TestPowerCutsKeepAcknowledgedWrites: seed (0: from the clock)")
)

// shortCuts is n, or a quarter of it (at least one) under -short: `make
// test`'s second race pass (storage and engine without the invariants tag,
// for the overlapped syncs) runs the crash tests at that size; the first
// pass and the unit pass run them whole.
func shortCuts(n int) int {
	if testing.Short() {
		return max(1, n/4)
	}
	return n
}

const (
	pcDocs        = 48 // documents, split among pcWriters
	pcWriters     = 3
	pcCutsInRound = 25
)

// pcModel is what the writers did: per document, its states in write order
// (nil: absent) and when each was acknowledged (zero: not yet, or never).
type pcModel struct {
	mu     sync.Mutex
	states [][][]byte
	acked  [][]time.Time
	writes int
}

// mustKeep is, per document, the index of the state a cut may not lose: the
// last one acknowledged before durable (storage.DB.SyncedBefore).
func (m *pcModel) mustKeep(durable time.Time) []int {
	keep := make([]int, pcDocs)
	for id := range pcDocs {
		for k := len(m.acked[id]) - 1; k >= 0; k-- {
			if at := m.acked[id][k]; !at.IsZero() && at.Before(durable) {
				keep[id] = k
				break
			}
		}
	}
	return keep
}

// pcDoc is document id's content at version ver: u unique, s shared.
func pcDoc(rng *rand.Rand, id, ver int) []byte {
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "ver", Value: ver},
		{Key: "u", Value: fmt.Sprintf("u-%d-%d", id, ver)}, {Key: "s", Value: ver % 7},
		{Key: "pad", Value: strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(300))}})
	return d
}

func pcID(id int) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(id))}
}

var pcNS = Namespace{"pc", "docs"}

func TestPowerCutsKeepAcknowledgedWrites(t *testing.T) {
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"always", 0}, {"interval", 10 * time.Millisecond}} {
		t.Run(mode.name, func(t *testing.T) {
			seed := *powerSeed
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			t.Logf("seed %d (rerun with -powercut.seed %d)", seed, seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			fs := vfs.NewCrashableMem()
			var st pcStats
			var base [][]byte // the documents of the image a round starts from
			want := shortCuts(*powerCuts)
			for done := 0; done < want; done += pcCutsInRound {
				cuts := min(pcCutsInRound, want-done)
				fs, base = pcRound(t, fs, base, mode.every, cuts, rand.New(rand.NewPCG(rng.Uint64(), 2)), &st)
				if t.Failed() {
					t.Fatalf("seed %d: stopped after %d cuts", seed, done+cuts)
				}
			}
			if st.writes == 0 || st.cuts != want {
				t.Fatalf("%d cuts over %d acknowledged writes: the test proved nothing", st.cuts, st.writes)
			}
			t.Logf("sync %s: %d power cuts over %d acknowledged writes, none lost, indexes consistent; "+
				"%d cuts found a write not yet durable (allowed), the longest undurable stretch was %v",
				mode.name, st.cuts, st.writes, st.lossy, st.maxWindow)
		})
	}
}

type pcStats struct {
	cuts, writes, lossy int
	maxWindow           time.Duration
}

// pcRound opens the engine on fs (whose documents are base; nil for a new
// store), writes while taking cuts crash images, checks each and returns the
// last image, with its documents, to start the next round from.
func pcRound(t *testing.T, fs *vfs.MemFS, base [][]byte, every time.Duration, cuts int, rng *rand.Rand, st *pcStats) (*vfs.MemFS, [][]byte) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	// A small oplog keeps the crash images small and trims it under the cuts.
	e, err := Open("db", Options{FS: fs, SyncInterval: every, Logger: quiet, OplogSize: 256 << 10})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if base == nil {
		base = make([][]byte, pcDocs)
		for _, key := range []bson.D{{{Key: "u", Value: 1}}, {{Key: "s", Value: 1}}} {
			spec, _ := bson.Marshal(bson.D{{Key: "key", Value: key}, {Key: "name", Value: key[0].Key + "_1"}, {Key: "unique", Value: key[0].Key == "u"}})
			if _, err := e.CreateIndexes(context.Background(), pcNS, []bsoncore.Document{spec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := &pcModel{states: make([][][]byte, pcDocs), acked: make([][]time.Time, pcDocs)}
	for id := range pcDocs {
		// The round's first state is durable: it was recovered from an image.
		m.states[id], m.acked[id] = [][]byte{base[id]}, []time.Time{{}}
		if base[id] != nil {
			m.acked[id][0] = time.Unix(0, 1)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range pcWriters {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), 3))
		wg.Add(1)
		go func() {
			defer wg.Done()
			pcWrite(t, e, m, w, wrng, stop)
		}()
	}
	wg.Add(1)
	brng := rand.New(rand.NewPCG(rng.Uint64(), 4))
	go func() { // Pebble's background work, so cuts land inside flushes and compactions
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+brng.IntN(20)) * time.Millisecond):
			}
			if brng.IntN(4) == 0 {
				_ = e.Storage().Pebble().Compact(context.Background(), []byte{0}, []byte{0xff}, false)
			} else {
				_ = e.Storage().Flush()
			}
		}
	}()
	var last *vfs.MemFS
	var lastDocs [][]byte
	counted := 0 // writes acknowledged before an image checked so far
	for range cuts {
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		m.mu.Lock()
		durable := e.Storage().SyncedBefore()
		keep := m.mustKeep(durable)
		states := make([][][]byte, pcDocs)
		for id := range pcDocs {
			states[id] = m.states[id][keep[id]:]
		}
		cutAt := time.Now()
		img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pcUnsynced(rng), RNG: rng})
		writes := m.writes
		m.mu.Unlock()
		if w := cutAt.Sub(durable); every > 0 && w > st.maxWindow {
			st.maxWindow = w
		}
		docs, lossy := pcCheck(t, img, states)
		if t.Failed() {
			break
		}
		st.cuts++
		if lossy {
			st.lossy++
		}
		st.writes += writes - counted
		counted = writes
		last, lastDocs = img, docs
	}
	close(stop)
	wg.Wait()
	if err := e.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	return last, lastDocs
}

// pcUnsynced is the share of unsynced 4 KiB blocks a crash image keeps:
// none (a power cut losing every unsynced byte), all (a process crash at
// the cut) or any share in between (the disk wrote some blocks of its cache
// and not others: a torn log tail with holes).
func pcUnsynced(rng *rand.Rand) int {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return 100
	}
	return rng.IntN(101)
}

// pcWrite inserts, replaces and deletes writer w's documents until stop.
func pcWrite(t *testing.T, e *Engine, m *pcModel, w int, rng *rand.Rand, stop chan struct{}) {
	ver := map[int]int{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		id := w + pcWriters*rng.IntN(pcDocs/pcWriters)
		m.mu.Lock()
		cur := m.states[id][len(m.states[id])-1]
		m.mu.Unlock()
		if cur != nil && ver[id] == 0 {
			ver[id] = int(bsoncore.Document(cur).Lookup("ver").AsInt64())
		}
		ver[id]++
		var next []byte
		if cur == nil || rng.IntN(10) < 7 {
			next = pcDoc(rng, id, ver[id])
		}
		m.mu.Lock()
		m.states[id] = append(m.states[id], next)
		m.acked[id] = append(m.acked[id], time.Time{})
		m.mu.Unlock()
		var err error
		switch {
		case cur == nil:
			_, err = e.Insert(pcNS, []bsoncore.Document{next}, true)
		case next == nil:
			_, err = e.Delete(pcNS, pcID(id))
		default:
			_, err = e.Replace(pcNS, pcID(id), next)
		}
		if err != nil {
			t.Errorf("write %d of document %d: %v", ver[id], id, err)
			return
		}
		m.mu.Lock()
		m.acked[id][len(m.acked[id])-1] = time.Now()
		m.writes++
		m.mu.Unlock()
	}
}

// pcCheck opens a crash image and checks that each document is in one of
// its allowed states (states[id][0] is the one that must not be lost) and
// that the indexes agree with the documents. lossy reports a document found
// in an older state than its last write (allowed: not yet acknowledged or
// not yet durable).
func pcCheck(t *testing.T, img *vfs.MemFS, states [][][]byte) (docs [][]byte, lossy bool) {
	t.Helper()
	e, err := Open("db", Options{FS: img, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Errorf("reopen after a power cut: %v", err)
		return nil, false
	}
	defer e.Close()
	docs = make([][]byte, pcDocs)
	for id := range pcDocs {
		doc, found, err := e.Get(nil, pcNS, pcID(id))
		if err != nil {
			t.Errorf("document %d after a power cut: %v", id, err)
			return nil, false
		}
		if !found {
			doc = nil
		}
		docs[id] = doc
		at := -1
		for k, s := range states[id] {
			if bytes.Equal(s, doc) {
				at = k
			}
		}
		switch {
		case at < 0:
			t.Errorf("document %d after a power cut is %v; the last acknowledged durable state was %v (%d later writes)",
				id, bsoncore.Document(doc), bsoncore.Document(states[id][0]), len(states[id])-1)
		case at < len(states[id])-1:
			lossy = true
		}
	}
	if err := e.CheckIndexes(pcNS); err != nil {
		t.Errorf("after a power cut: %v", err)
	}
	return docs, lossy
}
