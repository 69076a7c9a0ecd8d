package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/hlc"
)

// TestReplicatedGroups: with Hooks.Replicate a group reaches Pebble only
// through ApplyReplicated (invariant "Replicated in order"), with its log
// index; the same representation applied to a second store gives the same
// keys; a group Replicate fails is written nowhere and its requests get
// the error.
func TestReplicatedGroups(t *testing.T) {
	follower := openTest(t, Options{})
	var primary *DB
	var index uint64
	refuse := errors.New("not the primary")
	failNext := false
	hooks := &Hooks{Replicate: func(repr []byte, _ bool) error {
		if failNext {
			return refuse
		}
		index++
		if err := primary.ApplyReplicated(index, repr); err != nil {
			return err
		}
		return follower.ApplyReplicated(index, repr)
	}}
	primary = openTest(t, Options{Hooks: hooks})
	for i, tc := range []struct {
		key, val string
		fail     bool
	}{
		{"d1a", "x", false},
		{"d1b", "y", true},
		{"d1c", "z", false},
	} {
		failNext = tc.fail
		err := primary.Write(func(tx *Txn) error { tx.Set([]byte(tc.key), []byte(tc.val)); return nil })
		if tc.fail != errors.Is(err, refuse) {
			t.Fatalf("write %d: %v", i, err)
		}
		for _, db := range []*DB{primary, follower} {
			v, found, err := db.Get(nil, []byte(tc.key))
			if err != nil || found == tc.fail || found && !bytes.Equal(v, []byte(tc.val)) {
				t.Fatalf("write %d: %s = %q, %v, %v", i, tc.key, v, found, err)
			}
		}
	}
	for _, db := range []*DB{primary, follower} {
		if got, err := db.AppliedIndex(); err != nil || got != 2 {
			t.Errorf("applied index %d, %v; want 2", got, err)
		}
	}
}

// fakeSet is a replica set for Hooks.Propose in one process: each
// proposal applies, when waited for, to the store through ApplyReplicated
// (after a pause, so later groups are proposed meanwhile), unless it is
// chosen to fail or follows a failed one (repl's "Chained proposals").
type fakeSet struct {
	db      *DB
	mu      sync.Mutex
	index   uint64
	n       int
	failAt  map[int]bool // proposals (1-based) that fail
	broken  bool
	follows int
	room    int // Hooks.ProposeRoom: repr starts with this many bytes for the set
	badRoom int // proposals whose room was not zeros, or short
}

var errFakeLost = errors.New("fake: leadership lost")

func (s *fakeSet) propose(repr []byte, _, follows bool) func() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	n := s.n
	if len(repr) < s.room+batchHeaderLen || slices.ContainsFunc(repr[:s.room], func(b byte) bool { return b != 0 }) {
		s.badRoom++
	} else {
		repr = repr[s.room:]
	}
	if follows {
		s.follows++
	}
	refused := follows && s.broken
	if !follows {
		s.broken = false
	}
	if s.failAt[n] || refused {
		s.broken = true
		return func() error { time.Sleep(time.Millisecond); return errFakeLost }
	}
	repr = append([]byte(nil), repr...)
	return func() error {
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.index++
		return s.db.ApplyReplicated(s.index, repr)
	}
}

// TestPipelinedGroups: with Hooks.Propose, concurrent read-modify-write
// increments of one key, proposed while earlier groups are in flight
// (invariant "Pipelined groups"), each read the earlier ones' writes; when
// a group fails, the groups that follow it fail too ("Chained groups fail
// together") and later writes succeed again: the counter ends at exactly
// the number of acknowledged increments.
func TestPipelinedGroups(t *testing.T) {
	for _, failAt := range []map[int]bool{nil, {3: true, 20: true, 21: true}} {
		set := &fakeSet{failAt: failAt}
		db := openTest(t, Options{Hooks: &Hooks{Propose: set.propose, Publishes: func() bool { return false }}})
		set.db = db
		key := []byte("d/counter")
		var wg sync.WaitGroup
		var acked, failed atomic.Int64
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					err := db.Write(func(tx *Txn) error {
						v, _, err := tx.Get(nil, key)
						if err != nil {
							return err
						}
						n, _ := strconv.Atoi(string(v))
						tx.Set(key, strconv.AppendInt(nil, int64(n+1), 10))
						return nil
					})
					switch {
					case err == nil:
						acked.Add(1)
					case errors.Is(err, errFakeLost):
						failed.Add(1)
					default:
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		v, _, err := db.Get(nil, key)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := strconv.Atoi(string(v))
		t.Logf("fail at %v: %d acknowledged, %d failed, %d of %d proposals followed", failAt, acked.Load(), failed.Load(), set.follows, set.n)
		if int64(got) != acked.Load() {
			t.Errorf("fail at %v: counter %d after %d acknowledged increments", failAt, got, acked.Load())
		}
		if set.follows == 0 {
			t.Errorf("fail at %v: no group was proposed while another was in flight", failAt)
		}
		if (failAt != nil) != (failed.Load() > 0) {
			t.Errorf("fail at %v: %d increments failed", failAt, failed.Load())
		}
		if err := db.Write(func(tx *Txn) error { tx.Set([]byte("d/after"), []byte("x")); return nil }); err != nil {
			t.Errorf("fail at %v: a write after: %v", failAt, err)
		}
	}
}

// TestAppliedHook: Hooks.Applied gets each replicated group once it is
// applied, in order, with LastCommitted before and after it (each group's
// prev the one before's now) and the group's Set records of the keyspace
// asked for, none of the others; a group without changes to it is handed
// over empty; a group Pebble applies as a large (flushable) batch too.
func TestAppliedHook(t *testing.T) {
	type group struct {
		prev, now hlc.Timestamp
		keys      []string
	}
	var got []group
	var follower *DB
	follower = openTest(t, Options{Hooks: &Hooks{Applied: func(prev, now hlc.Timestamp, records func(byte, func(k, v []byte))) {
		if now != follower.LastCommitted() {
			t.Errorf("now %v, LastCommitted %v", now, follower.LastCommitted())
		}
		g := group{prev: prev, now: now}
		records(SpaceOplog, func(k, v []byte) {
			if !bytes.Equal(v, k[1:]) {
				t.Errorf("record %x has value %x", k, v)
			}
			g.keys = append(g.keys, string(k))
		})
		got = append(got, g)
	}}})
	var index uint64
	primary := openTest(t, Options{Hooks: &Hooks{Replicate: func(repr []byte, _ bool) error {
		index++
		return follower.ApplyReplicated(index, repr)
	}}})
	var want [][]string
	big := bytes.Repeat([]byte("x"), 8<<20) // past Pebble's large batch threshold
	for i, n := range []int{2, 0, 1, 3, 2} {
		var keys []string
		if err := primary.Write(func(tx *Txn) error {
			v := []byte("x")
			if i == 4 {
				v = big
			}
			tx.Set([]byte("d"+strconv.Itoa(i)), v)
			for range n {
				ts := tx.Tick()
				k := ts.AppendBinary([]byte{SpaceOplog})
				tx.Set(k, k[1:])
				keys = append(keys, string(k))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want = append(want, keys)
	}
	if len(got) != len(want) {
		t.Fatalf("%d groups handed over, want %d", len(got), len(want))
	}
	for i, g := range got {
		if !slices.Equal(g.keys, want[i]) {
			t.Errorf("group %d: records %q, want %q", i, g.keys, want[i])
		}
		if i > 0 && g.prev != got[i-1].now {
			t.Errorf("group %d: prev %v, the group before's now %v", i, g.prev, got[i-1].now)
		}
		for _, k := range g.keys {
			if ts, _ := hlc.FromBinary([]byte(k)[1:]); ts <= g.prev || ts > g.now {
				t.Errorf("group %d: record at %v outside (%v, %v]", i, ts, g.prev, g.now)
			}
		}
	}
}

// heldSet is a replica set for Hooks.Propose whose proposals complete
// only once the test releases them, with a log the test keeps busy
// (Hooks.LogBusy): it records how many records each proposal carried.
type heldSet struct {
	db      *DB
	mu      sync.Mutex
	index   uint64
	records []uint32      // per proposal, in order
	busy    chan struct{} // LogBusy's answer; nil: the log is idle
	release chan struct{} // closed: every wait returns
}

func (s *heldSet) propose(repr []byte, _, _ bool) func() error {
	s.mu.Lock()
	s.records = append(s.records, binary.LittleEndian.Uint32(repr[8:]))
	s.mu.Unlock()
	repr = append([]byte(nil), repr...)
	return func() error {
		<-s.release
		s.mu.Lock()
		defer s.mu.Unlock()
		s.index++
		return s.db.ApplyReplicated(s.index, repr)
	}
}

func (s *heldSet) logBusy() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == nil {
		return nil
	}
	return s.busy
}

func (s *heldSet) proposed() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// TestGroupsGatherWhileLogBusy: with a group in flight and the set's log
// busy (Hooks.LogBusy), the writes that arrive gather into one group,
// proposed once the log is idle (invariant "Groups gather while the log
// syncs"); with the log idle, or no hook, they are proposed one by one up
// to maxInFlight groups in flight. Every write is acknowledged and stored.
func TestGroupsGatherWhileLogBusy(t *testing.T) {
	const later = 6 // writes made while the first group is in flight
	for _, tc := range []struct {
		name       string
		hook, busy bool
		// proposals made while the first one is held, and in all
		held, all int
	}{
		{"log busy", true, true, 1, 2},
		{"log idle", true, false, maxInFlight, maxInFlight + 1},
		{"no hook", false, false, maxInFlight, maxInFlight + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &heldSet{release: make(chan struct{})}
			if tc.busy {
				s.busy = make(chan struct{})
			}
			hooks := &Hooks{Propose: s.propose, Publishes: func() bool { return false }}
			if tc.hook {
				hooks.LogBusy = s.logBusy
			}
			db := openTest(t, Options{Hooks: hooks})
			s.db = db
			var once sync.Once
			release := func() { once.Do(func() { close(s.release) }) }
			t.Cleanup(release) // before the store's Close, which waits for the held groups
			var ran atomic.Int64
			errs := make(chan error, later+1)
			write := func(i int) {
				errs <- db.Write(func(tx *Txn) error {
					ran.Add(1)
					tx.Set([]byte(fmt.Sprintf("d/%d", i)), []byte("x"))
					return nil
				})
			}
			waitFor := func(what string, cond func() bool) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not after 10 s (proposals %v)", what, s.proposed())
					}
				}
			}
			go write(0)
			waitFor("the first group proposed", func() bool { return len(s.proposed()) == 1 })
			for i := 1; i <= later; i++ { // one at a time: each may be proposed before the next
				go write(i)
				waitFor("the write applied to a group", func() bool { return ran.Load() == int64(i+1) })
				if !tc.busy {
					waitFor("the write proposed", func() bool { return len(s.proposed()) == min(i+1, maxInFlight) })
				}
			}
			time.Sleep(20 * time.Millisecond) // a group proposed wrongly shows now
			if got := s.proposed(); len(got) != tc.held {
				t.Fatalf("%d proposals with the first held, want %d (records %v)", len(got), tc.held, got)
			}
			if tc.busy {
				s.mu.Lock()
				close(s.busy)
				s.busy = nil
				s.mu.Unlock()
			}
			release()
			for range later + 1 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			var records uint32
			for _, n := range s.proposed() {
				records += n
			}
			if got := s.proposed(); len(got) != tc.all || records != later+1 {
				t.Errorf("proposals %v (records each), want %d proposals of %d records in all", got, tc.all, later+1)
			}
			for i := 0; i <= later; i++ {
				if _, ok := mustGet(t, db, fmt.Sprintf("d/%d", i)); !ok {
					t.Errorf("d/%d not stored", i)
				}
			}
		})
	}
}

// TestApplyReplicatedCopiesOnce: ApplyReplicated's batch is the group's
// records copied once (invariant "Replicated groups copied once"): the
// applied index's record fits in the copy's room, so Pebble never copies
// the batch into one twice its size (as it did when the room fell three
// bytes short). For groups of several sizes: the batch replicatedBatch
// builds still has the copy's capacity, its records are the group's and
// the applied index, and the groups applied read back.
func TestApplyReplicatedCopiesOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		docs, val int // documents a group writes and their size
	}{
		{"one small document", 1, 100},
		{"a YCSB-A group", 3, 2300},
		{"a large group", 40, 4000},
		{"a group of one empty value", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			repr := func(g int) []byte {
				b := db.pdb.NewBatch()
				defer b.Close()
				for i := range tc.docs {
					v := bytes.Repeat([]byte{byte(g + i)}, tc.val)
					if err := b.Set(DocKey(nil, 1, []byte(fmt.Sprintf("k%03d", i))), v, nil); err != nil {
						t.Fatal(err)
					}
				}
				return slices.Clone(b.Repr())
			}
			r := repr(0)
			b, _, err := db.replicatedBatch(7, r)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(r) + appliedRecordRoom; cap(b.Repr()) != want {
				t.Errorf("the batch of a %d-byte group has capacity %d, want the copy's %d: Pebble copied it to make room", len(r), cap(b.Repr()), want)
			}
			if got := int(b.Count()); got != tc.docs+1 {
				t.Errorf("the batch holds %d records, want the group's %d and the applied index", got, tc.docs)
			}
			b.Close()
			const n = 40
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for g := range n {
				if err := db.ApplyReplicated(uint64(g+1), repr(g)); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			t.Logf("applying %d groups of %d bytes: %.0f bytes allocated per group, making each included", n, len(r), float64(after.TotalAlloc-before.TotalAlloc)/n)
			got, ok, err := db.Get(nil, DocKey(nil, 1, []byte("k000")))
			if err != nil || !ok || len(got) != tc.val || tc.val > 0 && got[0] != byte(n-1) {
				t.Fatalf("k000 after the last group: %d bytes, found %v, err %v", len(got), ok, err)
			}
			if idx, err := db.AppliedIndex(); err != nil || idx != n {
				t.Fatalf("applied index %d (%v), want %d", idx, err, n)
			}
		})
	}
}

// TestChainBatchStartsWithRoom: a chain's batch starts with room for the
// whole last chain (replicating.lastChain), not only its first group: 16
// writers of 4 KiB values, 9.6 MB in all, make a chain of many groups
// under fakeSet that ends past maxChainBatch, and the batch of the chain
// started after it has room for at least the last chain's bytes. The set
// asks for 33 bytes of room before each group's records
// (Hooks.ProposeRoom): every proposal has them, zeroed, and applies.
func TestChainBatchStartsWithRoom(t *testing.T) {
	set := &fakeSet{room: 33}
	db := openTest(t, Options{Hooks: &Hooks{Propose: set.propose, ProposeRoom: set.room, Publishes: func() bool { return false }}})
	set.db = db
	value := make([]byte, 4<<10)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				if err := db.Write(func(tx *Txn) error { tx.Set(fmt.Appendf(nil, "d/%d/%d", w, i), value); return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// The pipeline goroutine set both before it applied the last write's
	// group, which was acknowledged before Write returned.
	last, room := db.pipe.rep.lastChain, cap(db.pipe.rep.batch.Repr())
	t.Logf("%d proposals, %d followed; last chain %d bytes, next batch's room %d", set.n, set.follows, last, room)
	if set.follows == 0 || last < maxChainBatch {
		t.Fatalf("the concurrent writers made no chain of several groups (%d followed, last chain %d bytes)", set.follows, last)
	}
	if room < last {
		t.Errorf("a chain after one of %d bytes starts with %d bytes of room", last, room)
	}
	if set.badRoom > 0 {
		t.Errorf("%d of %d proposals had no zeroed room of %d bytes before the group", set.badRoom, set.n, set.room)
	}
	if v, ok := mustGet(t, db, "d/15/149"); !ok || len(v) != len(value) {
		t.Errorf("the last write: found %v, %d bytes", ok, len(v))
	}
}

// TestSyncAppliedSurvivesPowerCut: a group ApplyReplicated applied is
// kept by a power cut (only synced bytes survive) once SyncApplied
// returned, and — the reason SyncApplied exists — may be lost before it.
func TestSyncAppliedSurvivesPowerCut(t *testing.T) {
	for _, synced := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		open := func(f vfs.FS) *DB {
			db, err := Open("db", Options{FS: f, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		db := open(fs)
		b := db.pdb.NewBatch()
		if err := b.Set([]byte("d1config"), []byte("members"), nil); err != nil {
			t.Fatal(err)
		}
		if err := db.ApplyReplicated(1, b.Repr()); err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		if synced {
			if err := db.SyncApplied(); err != nil {
				t.Fatal(err)
			}
		}
		img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		_ = db.Close()
		after := open(img)
		_, found, err := after.Get(nil, []byte("d1config"))
		if err != nil {
			t.Fatal(err)
		}
		applied, err := after.AppliedIndex()
		if err != nil {
			t.Fatal(err)
		}
		_ = after.Close()
		if found != synced || (applied == 1) != synced {
			t.Fatalf("synced=%v: after a power cut the group's key found=%v, applied index %d", synced, found, applied)
		}
	}
}
