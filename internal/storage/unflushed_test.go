package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestUnflushedChunks checks the unflushed set's own rules ("Unflushed
// documents known"): what it names, when a group's keys leave it, and when
// it answers "may hold" for every key.
func TestUnflushedChunks(t *testing.T) {
	a, b, c := DocKey(nil, 7, []byte("a")), DocKey(nil, 7, []byte("b")), DocKey(nil, 7, []byte("c"))
	set := func(k []byte) op { return op{kind: opSet, key: k} }
	flush := func(u *unflushed, top uint64) {
		u.flushEnd(pebble.FlushInfo{Output: []pebble.TableInfo{{LargestSeqNum: pebble.SeqNum(top / 2)}, {LargestSeqNum: pebble.SeqNum(top)}}})
	}
	type want struct{ a, b, c bool } // whether each may be held
	for _, tc := range []struct {
		name  string
		fresh bool
		run   func(u *unflushed)
		want  want
		max   int // unflushedMaxKeys for the stanza; 0 keeps it
	}{
		{"a fresh store names what its groups wrote", true, func(u *unflushed) {
			u.note([]op{set(a), {kind: opDelete, key: b}})
			u.committed(10)
		}, want{true, true, false}, 0},
		{"other keyspaces always may be held", true, func(u *unflushed) {}, want{}, 0},
		{"a restarted store may hold anything before a flush", false, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			flush(u, 8) // below the first group: a replayed memtable may remain
		}, want{true, true, true}, 0},
		{"a restarted store answers once everything before its first group is flushed", false, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			flush(u, 9)
		}, want{true, false, false}, 0},
		{"a group leaves once a flush wrote its first number", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{set(b)})
			u.committed(20)
			flush(u, 15)
		}, want{false, true, false}, 0},
		{"a failed flush moves nothing", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.flushEnd(pebble.FlushInfo{Err: errors.New("no"), Output: []pebble.TableInfo{{LargestSeqNum: 99}}})
		}, want{true, false, false}, 0},
		{"a key of two groups stays until both are flushed", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{set(a)})
			u.committed(20)
			flush(u, 15)
		}, want{true, false, false}, 0},
		{"a group that never reached Pebble leaves nothing", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{set(b), set(a)})
			u.discarded()
		}, want{true, false, false}, 0},
		{"the group being applied stays", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{set(b)})
			flush(u, 50)
		}, want{false, true, false}, 0},
		{"a range deletion of documents: every key in it may be held until it is flushed", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{{kind: opDeleteRange, key: Prefix(nil, SpaceDocument, 7), value: PrefixEnd(Prefix(nil, SpaceDocument, 7))}})
			u.committed(20)
			flush(u, 19)
		}, want{true, true, true}, 0},
		{"a range deletion covers its range only", true, func(u *unflushed) {
			u.note([]op{{kind: opDeleteRange, key: b, value: c}})
			u.committed(20)
		}, want{false, true, false}, 0},
		{"a range deletion flushed answers again", true, func(u *unflushed) {
			u.note([]op{{kind: opDeleteRange, key: Prefix(nil, SpaceDocument, 7), value: PrefixEnd(Prefix(nil, SpaceDocument, 7))}})
			u.committed(20)
			u.note([]op{set(c)})
			u.committed(30)
			flush(u, 25)
		}, want{false, false, true}, 0},
		{"a range deletion of another keyspace changes nothing", true, func(u *unflushed) {
			u.note([]op{{kind: opDeleteRange, key: Prefix(nil, SpaceIndex, 7), value: PrefixEnd(Prefix(nil, SpaceIndex, 7))}})
			u.committed(20)
		}, want{false, false, false}, 0},
		{"a batch Pebble gave no number waits for the next group's", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(0)
			flush(u, 100)
			u.note([]op{set(b)})
			u.committed(200)
			flush(u, 150)
		}, want{true, true, false}, 0},
		{"… and leaves with it", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(0)
			u.note([]op{set(b)})
			u.committed(200)
			flush(u, 200)
		}, want{false, false, false}, 0},
		{"a write outside the pipeline turns the set off", true, func(u *unflushed) {
			u.off.Store(true)
		}, want{true, true, true}, 0},
		{"a full set names no more keys and may hold any", true, func(u *unflushed) {
			u.note([]op{set(a), set(b)})
			u.committed(10)
			u.note([]op{set(c)})
			u.committed(20)
			flush(u, 15)
		}, want{true, true, true}, 1},
		{"an overflowed group flushed, the set names keys again", true, func(u *unflushed) {
			u.note([]op{set(a)})
			u.committed(10)
			u.note([]op{set(b)})
			u.committed(20)
			flush(u, 20)
			u.note([]op{set(c)})
			u.committed(30)
		}, want{false, false, true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.max > 0 {
				defer func(m int) { unflushedMaxKeys = m }(unflushedMaxKeys)
				unflushedMaxKeys = tc.max
			}
			u := newUnflushed()
			u.fresh = tc.fresh
			tc.run(u)
			armed := u.prune()
			got := want{u.mayHold(a, armed), u.mayHold(b, armed), u.mayHold(c, armed)}
			if tc.name == "other keyspaces always may be held" {
				if !u.mayHold(SystemKey("x"), armed) || !u.mayHold(nil, armed) {
					t.Fatal("a key outside the documents was answered absent")
				}
			}
			if got != tc.want {
				t.Fatalf("may hold a, b, c: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnflushedBounded checks invariant "Unflushed set bounded": groups
// of 1,000 new document keys, none flushed, fill the set to
// unflushedMaxKeys and past it; the set names no more than that, answers
// "may hold" for a key it could not name, and its Go memory (the heap
// after a collection, before and after) stays under unflushedMaxBytes.
func TestUnflushedBounded(t *testing.T) {
	var ms runtime.MemStats
	heap := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	ops := make([]op, 1000)
	keys := make([][]byte, len(ops))
	for i := range keys {
		keys[i] = make([]byte, 0, 32)
	}
	before := heap()
	u := newUnflushed()
	u.fresh = true
	var seq uint64
	var last []byte
	for g := 0; g*len(ops) < unflushedMaxKeys+2*len(ops); g++ {
		for i := range ops {
			keys[i] = DocKey(keys[i][:0], 7, fmt.Appendf(nil, "k%09d", g*len(ops)+i))
			ops[i] = op{kind: opSet, key: keys[i]}
		}
		u.note(ops)
		seq += uint64(len(ops))
		u.committed(seq)
		last = bytes.Clone(keys[len(keys)-1])
	}
	used := heap() - before
	t.Logf("%d keys named, %d distinct, %d overflowed groups: %d bytes (%.1f a key); bound %d", u.noted, len(u.counts), u.overflows, used, float64(used)/float64(u.noted), unflushedMaxBytes)
	if u.noted > unflushedMaxKeys || len(u.counts) > unflushedMaxKeys {
		t.Errorf("the set names %d keys (%d distinct), more than %d", u.noted, len(u.counts), unflushedMaxKeys)
	}
	if used > unflushedMaxBytes {
		t.Errorf("the set holds %d bytes, above unflushedMaxBytes %d", used, unflushedMaxBytes)
	}
	if armed := u.prune(); !u.mayHold(last, armed) {
		t.Error("a key the full set could not name was answered absent")
	}
	runtime.KeepAlive(u)
}

// TestUnflushedKnown drives a store with random insert batches (each
// key checked with Has, prefetched or not: duplicates refused, as an
// insert's uniqueness check does), deletes, collection drops, flushes,
// compactions, restarts and concurrent writers racing for the same keys
// (groups overlapping their syncs), against a model: no duplicate is ever
// stored, no new key refused, nothing lost ("Unflushed documents known").
// With the invariants tag every answer from the tables alone is also
// compared with the memtables'. The second subtest bounds the set at 500
// keys, so that groups overflow it ("Unflushed set bounded") all along.
func TestUnflushedKnown(t *testing.T) {
	for _, max := range []int{unflushedMaxKeys, 500} {
		t.Run(fmt.Sprintf("at most %d keys", max), func(t *testing.T) {
			defer func(m int) { unflushedMaxKeys = m }(unflushedMaxKeys)
			unflushedMaxKeys = max
			testUnflushedKnown(t)
		})
	}
}

func testUnflushedKnown(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 19))
	dir := t.TempDir()
	opts := Options{Logger: discardLogger(), CacheSize: 64 << 20} // 4 MiB memtables
	open := func() *DB {
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	defer func() { _ = db.Close() }()
	const colls, ids = 3, 3000
	key := func(c, n int) []byte { return DocKey(nil, uint64(10+c), []byte(fmt.Sprintf("id%05d", n))) }
	value := bytes.Repeat([]byte("v"), 600)
	model := map[string]bool{}
	var skipped uint64
	// insert stores each of keys unless Has finds it, as the engine's
	// insert does; it returns the keys stored and refused.
	insert := func(db *DB, keys [][]byte, prefetch bool) (stored, refused [][]byte, err error) {
		err = db.Write(func(tx *Txn) error {
			stored, refused = nil, nil
			if prefetch {
				if err := tx.PrefetchHas(keys); err != nil {
					return err
				}
			}
			for _, k := range keys {
				has, err := tx.Has(k)
				if err != nil {
					return err
				}
				if has {
					refused = append(refused, k)
					continue
				}
				tx.Set(k, value)
				stored = append(stored, k)
			}
			return nil
		})
		return stored, refused, err
	}
	randomKeys := func(n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = key(rng.IntN(colls), rng.IntN(ids))
		}
		return keys
	}
	for step := range 300 {
		switch r := rng.IntN(100); {
		case r < 50:
			keys := randomKeys(1 + rng.IntN(300))
			stored, refused, err := insert(db, keys, rng.IntN(4) > 0)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			for _, k := range stored {
				if model[string(k)] {
					t.Fatalf("step %d: key %x stored twice: a uniqueness check answered absent", step, k)
				}
				model[string(k)] = true
			}
			for _, k := range refused {
				if !model[string(k)] {
					t.Fatalf("step %d: key %x refused though not stored", step, k)
				}
			}
		case r < 60:
			// Racing writers: each key stored once in all, whatever the
			// groups (overlapped syncs, groups applied over unsynced ones).
			keys := randomKeys(50)
			var mu sync.Mutex
			count := map[string]int{}
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < len(keys); i += 10 {
						stored, _, err := insert(db, keys[i:i+10], i%20 == 0)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for _, k := range stored {
							count[string(k)]++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("step %d: %v", step, err)
			}
			for _, k := range keys {
				want := 1
				if model[string(k)] {
					want = 0
				}
				if n := count[string(k)]; n != want {
					t.Fatalf("step %d: key %x stored %d times by racing writers, want %d", step, k, n, want)
				}
			}
			for k := range count {
				model[k] = true
			}
		case r < 72:
			keys := randomKeys(1 + rng.IntN(100))
			if err := db.Write(func(tx *Txn) error {
				for _, k := range keys {
					tx.Delete(k)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				delete(model, string(k))
			}
		case r < 76:
			c := rng.IntN(colls)
			p := Prefix(nil, SpaceDocument, uint64(10+c))
			if err := db.Write(func(tx *Txn) error { tx.DeleteRange(p, PrefixEnd(p)); return nil }); err != nil {
				t.Fatal(err)
			}
			for k := range model {
				if bytes.HasPrefix([]byte(k), p) {
					delete(model, k)
				}
			}
		case r < 88:
			if err := db.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 92:
			if err := db.pdb.Compact(t.Context(), []byte{SpaceDocument}, []byte{SpaceDocument + 1}, false); err != nil {
				t.Fatal(err)
			}
		default:
			skipped += db.pipe.unf.skipped
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open()
		}
	}
	// Nothing lost, nothing extra.
	n := 0
	it, err := db.NewIter([]byte{SpaceDocument}, []byte{SpaceDocument + 1})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !model[string(it.Key())] {
			t.Errorf("key %x stored, not in the model", it.Key())
		}
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != len(model) {
		t.Errorf("%d documents stored, the model holds %d", n, len(model))
	}
	skipped += db.pipe.unf.skipped
	t.Logf("%d checks answered from the tables alone", skipped)
	if skipped == 0 {
		t.Error("no check was answered from the tables alone: the set was never used")
	}
}

// TestUnflushedOffOnMembers checks that a replica set member's store, whose
// groups reach Pebble through ApplyReplicated, never answers from the set:
// its checks read the batch and the memtables, and still find every key.
func TestUnflushedOffOnMembers(t *testing.T) {
	var index uint64
	var db *DB
	db = openTest(t, Options{Hooks: &Hooks{Replicate: func(repr []byte, _ bool) error {
		index++
		return db.ApplyReplicated(index, repr)
	}}})
	keys := [][]byte{DocKey(nil, 5, []byte("a")), DocKey(nil, 5, []byte("b")), DocKey(nil, 5, []byte("c"))}
	if err := db.Write(func(tx *Txn) error { tx.Set(keys[0], []byte("v")); tx.Set(keys[2], []byte("v")); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, prefetch := range []bool{false, true} {
		var got []bool
		if err := db.Write(func(tx *Txn) error {
			if prefetch {
				if err := tx.PrefetchHas(keys); err != nil {
					return err
				}
			}
			for _, k := range keys {
				has, err := tx.Has(k)
				if err != nil {
					return err
				}
				got = append(got, has)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := []bool{true, false, true}; !slices.Equal(got, want) {
			t.Errorf("prefetch %v: Has %v, want %v", prefetch, got, want)
		}
	}
	if !db.pipe.unf.off.Load() || db.pipe.unf.skipped != 0 {
		t.Errorf("a member's set: off %v, %d checks from the tables alone; want off, none", db.pipe.unf.off.Load(), db.pipe.unf.skipped)
	}
}
