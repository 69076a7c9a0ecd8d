package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// docKey is a document key of collection 1 (SpaceDocument).
func docKey(id string) []byte { return append(Prefix(nil, SpaceDocument, 1), id...) }

// cachedGet reads key twice through the store and reports whether the
// second read was a hit of the document cache.
func cachedGet(t *testing.T, db *DB, key []byte) (val string, found, hit bool) {
	t.Helper()
	if _, _, err := db.Get(nil, key); err != nil {
		t.Fatal(err)
	}
	before := db.DocumentCacheStats().Hits
	v, ok, err := db.Get(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok, db.DocumentCacheStats().Hits > before
}

// TestDocumentCacheUnit: hits, misses, eviction by CLOCK, oversize
// documents and keys, hash collisions, drop and clear, on a cache alone
// (the install's check against gen is TestDocumentCacheInstallRace's).
func TestDocumentCacheUnit(t *testing.T) {
	var gen atomic.Uint64
	// A shard share of 4 KiB: maxEntry 1 KiB.
	const capacity = 4 << 10 * docCacheShards
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *docCache)
	}{
		{"miss then hit", func(t *testing.T, c *docCache) {
			k := []byte("dk")
			if _, ok := c.get(nil, k, c.hash(k)); ok {
				t.Fatal("hit on an empty cache")
			}
			c.install(k, []byte("v1"), c.hash(k), &gen, gen.Load())
			dst := []byte("prefix:")
			out, ok := c.get(dst, k, c.hash(k))
			if !ok || string(out) != "prefix:v1" {
				t.Fatalf("get = %q, %v; want the value appended to dst", out, ok)
			}
		}},
		{"replace", func(t *testing.T, c *docCache) {
			k := []byte("dk")
			c.install(k, []byte("v1"), c.hash(k), &gen, gen.Load())
			c.install(k, []byte("v2"), c.hash(k), &gen, gen.Load())
			if out, ok := c.get(nil, k, c.hash(k)); !ok || string(out) != "v2" {
				t.Fatalf("get = %q, %v; want v2", out, ok)
			}
			if st := statsOf(c); st.Entries != 1 {
				t.Fatalf("%d entries, want 1", st.Entries)
			}
		}},
		{"a refresh that fits is written in place: nothing appended", func(t *testing.T, c *docCache) {
			k := []byte("dk")
			h := c.hash(k)
			c.install(k, make([]byte, 100), h, &gen, gen.Load())
			s := c.shard(h)
			used, alloc := segmentBytes(s), s.alloc
			for i := range 1000 {
				v := fmt.Appendf(nil, "v%d", i) // 2-4 bytes, then none longer than the first
				c.install(k, v, h, &gen, gen.Load())
				if out, ok := c.get(nil, k, h); !ok || string(out) != string(v) {
					t.Fatalf("refresh %d: get = %q, %v; want %q", i, out, ok, v)
				}
			}
			if segmentBytes(s) != used || s.alloc != alloc {
				t.Fatalf("1000 refreshes took the shard's segments from %d to %d bytes used (%d to %d allocated), want no change",
					used, segmentBytes(s), alloc, s.alloc)
			}
			if st := statsOf(c); st.Refreshed != 1000 || st.Entries != 1 {
				t.Fatalf("stats %+v: want 1000 refreshed, 1 entry", st)
			}
		}},
		{"a grown document moves once, with room to grow in place", func(t *testing.T, c *docCache) {
			k := []byte("dk")
			h := c.hash(k)
			s := c.shard(h)
			c.install(k, make([]byte, 400), h, &gen, gen.Load())
			used := segmentBytes(s)
			c.install(k, make([]byte, 401), h, &gen, gen.Load()) // past its slot: appended with 50 bytes of room
			moved := segmentBytes(s)
			if moved <= used {
				t.Fatalf("a grown document did not move: %d bytes used, %d before", moved, used)
			}
			for n := 402; n <= 451; n++ {
				v := bytes.Repeat([]byte{byte(n)}, n)
				c.install(k, v, h, &gen, gen.Load())
				if out, ok := c.get(nil, k, h); !ok || !bytes.Equal(out, v) {
					t.Fatalf("grown to %d: get = %d bytes, %v", n, len(out), ok)
				}
			}
			if segmentBytes(s) != moved {
				t.Fatalf("growing within the room appended: %d bytes used, %d after the move", segmentBytes(s), moved)
			}
			if st := statsOf(c); st.Refreshed != 50 {
				t.Fatalf("refreshed %d, want 50", st.Refreshed)
			}
		}},
		{"oversize document not cached", func(t *testing.T, c *docCache) {
			k := []byte("dbig")
			c.install(k, make([]byte, c.maxEntry+1), c.hash(k), &gen, gen.Load())
			if _, ok := c.get(nil, k, c.hash(k)); ok {
				t.Fatal("a document over maxEntry was cached")
			}
			c.install(k, make([]byte, c.maxEntry), c.hash(k), &gen, gen.Load())
			if _, ok := c.get(nil, k, c.hash(k)); !ok {
				t.Fatal("a document of maxEntry bytes was not cached")
			}
			if st := statsOf(c); st.Refused != 1 {
				t.Fatalf("refused %d, want 1", st.Refused)
			}
		}},
		{"oversize key not cached", func(t *testing.T, c *docCache) {
			k := append([]byte("d"), make([]byte, 8<<10)...)
			c.install(k, []byte("v"), c.hash(k), &gen, gen.Load())
			if _, ok := c.get(nil, k, c.hash(k)); ok {
				t.Fatal("an entry larger than its shard was cached")
			}
		}},
		{"stale gen not installed", func(t *testing.T, c *docCache) {
			k := []byte("dk")
			seen := gen.Load()
			gen.Add(2) // a change came and went during the read
			c.install(k, []byte("old"), c.hash(k), &gen, seen)
			if _, ok := c.get(nil, k, c.hash(k)); ok {
				t.Fatal("a value read before a change was installed after it")
			}
			if st := statsOf(c); st.Raced != 1 {
				t.Fatalf("raced %d, want 1", st.Raced)
			}
		}},
		{"eviction keeps the shard within its share, hit entries last", func(t *testing.T, c *docCache) {
			// Keys of one shard only.
			var keys [][]byte
			for i := 0; len(keys) < 40; i++ {
				k := fmt.Appendf(nil, "d%d", i)
				if c.hash(k)>>58 == 0 {
					keys = append(keys, k)
				}
			}
			val := make([]byte, 400) // ~ 480 charged: 8 fit in 4 KiB
			hot := keys[0]
			for _, k := range keys {
				c.install(k, val, c.hash(k), &gen, gen.Load())
				if _, ok := c.get(nil, hot, c.hash(hot)); !ok {
					t.Fatalf("the entry hit after every insert was evicted (after %q)", k)
				}
				if s := &c.shards[0]; s.bytes > s.capacity {
					t.Fatalf("shard holds %d bytes, share %d", s.bytes, s.capacity)
				}
			}
			st := statsOf(c)
			if st.Evictions == 0 || st.Entries > 8 || st.Entries < 4 {
				t.Fatalf("stats %+v: want evictions and 4-8 entries", st)
			}
		}},
		{"hash collision is a miss and a replacement", func(t *testing.T, c *docCache) {
			a, b := []byte("da"), []byte("db")
			h := c.hash(a) // b installed under a's hash, as a collision would
			c.install(a, []byte("A"), h, &gen, gen.Load())
			if _, ok := c.get(nil, b, h); ok {
				t.Fatal("a colliding key hit another key's entry")
			}
			c.install(b, []byte("B"), h, &gen, gen.Load())
			if _, ok := c.get(nil, a, h); ok {
				t.Fatal("the replaced key still hits")
			}
			if out, ok := c.get(nil, b, h); !ok || string(out) != "B" {
				t.Fatalf("get = %q, %v", out, ok)
			}
		}},
		{"drop and clear", func(t *testing.T, c *docCache) {
			a, b := []byte("da"), []byte("db")
			c.install(a, []byte("A"), c.hash(a), &gen, gen.Load())
			c.install(b, []byte("B"), c.hash(b), &gen, gen.Load())
			c.drop(a)
			if _, ok := c.get(nil, a, c.hash(a)); ok {
				t.Fatal("dropped key hits")
			}
			if _, ok := c.get(nil, b, c.hash(b)); !ok {
				t.Fatal("drop took another key")
			}
			c.clear()
			if _, ok := c.get(nil, b, c.hash(b)); ok {
				t.Fatal("cleared key hits")
			}
			if st := statsOf(c); st.Entries != 0 || st.Size != 0 || st.Invalidations != 2 {
				t.Fatalf("after clear: %+v", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newDocCache(capacity)) })
	}
}

// segmentBytes is the bytes a shard's segments hold: its entries' slots,
// live or not.
func segmentBytes(s *docShard) (n int) {
	for _, b := range s.segs {
		n += len(b)
	}
	return n
}

// statsOf sums a cache's shards as DB.DocumentCacheStats does.
func statsOf(c *docCache) DocumentCacheStats {
	db := &DB{}
	db.visible.docs = c
	return db.DocumentCacheStats()
}

// TestDocumentCacheInvalidation: every kind of write that can change a
// document's key makes the next read return the new state, not the
// cached one; writes that cannot leave the entry. One stanza per kind.
func TestDocumentCacheInvalidation(t *testing.T) {
	k := docKey("k")
	set := func(key []byte, v string) func(tx *Txn) error {
		return func(tx *Txn) error { tx.Set(key, []byte(v)); return nil }
	}
	write := func(t *testing.T, db *DB, fn func(*Txn) error) {
		t.Helper()
		if err := db.Write(fn); err != nil {
			t.Fatal(err)
		}
	}
	// follower applies what the leader's pipeline hands Hooks.Replicate.
	type stores struct{ db, follower *DB }
	// replicated is a change applied as a follower applies its log: the
	// batch fill makes, through ApplyReplicated.
	replicated := func(fill func(b *pebble.Batch)) func(*testing.T, stores) {
		return func(t *testing.T, s stores) {
			b := s.db.pdb.NewBatch()
			defer b.Close()
			fill(b)
			if err := s.db.ApplyReplicated(1, b.Repr()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		// change changes k (or not) after it was cached as "v1"; want is
		// its value after ("" for none), kept whether the read after it
		// is a hit: the entry kept, or refreshed with the new value by a
		// group's commit or apply that set it (changeRefreshing).
		change func(t *testing.T, s stores)
		want   string
		kept   bool
	}{
		{"set (refreshed)", func(t *testing.T, s stores) { write(t, s.db, set(k, "v2")) }, "v2", true},
		{"delete", func(t *testing.T, s stores) {
			write(t, s.db, func(tx *Txn) error { tx.Delete(k); return nil })
		}, "", false},
		{"set then delete in one request", func(t *testing.T, s stores) {
			write(t, s.db, func(tx *Txn) error { tx.Set(k, []byte("v2")); tx.Delete(k); return nil })
		}, "", false},
		{"several requests of a group", func(t *testing.T, s stores) {
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.db.Write(set(docKey(fmt.Sprint("o", i)), "x")); err != nil {
						t.Error(err)
					}
				}()
			}
			write(t, s.db, set(k, "v2"))
			wg.Wait()
		}, "v2", true},
		{"range deletion of the collection (drop, truncate)", func(t *testing.T, s stores) {
			p := Prefix(nil, SpaceDocument, 1)
			write(t, s.db, func(tx *Txn) error { tx.DeleteRange(p, PrefixEnd(p)); return nil })
		}, "", false},
		{"range deletion of all keys (restore's kind)", func(t *testing.T, s stores) {
			write(t, s.db, func(tx *Txn) error { tx.DeleteRange([]byte{0}, []byte{0xff}); return nil })
		}, "", false},
		{"range deletion elsewhere keeps the entry", func(t *testing.T, s stores) {
			write(t, s.db, func(tx *Txn) error { tx.DeleteRange([]byte("o"), []byte("p")); return nil })
		}, "v1", true},
		{"another document's write keeps the entry", func(t *testing.T, s stores) {
			write(t, s.db, set(docKey("other"), "x"))
		}, "v1", true},
		{"failed request writes nothing and keeps the entry", func(t *testing.T, s stores) {
			_ = s.db.Write(func(tx *Txn) error { tx.Set(k, []byte("v2")); return fmt.Errorf("no") })
		}, "v1", true},
		{"transaction commit (refreshed)", func(t *testing.T, s stores) {
			tx := s.db.Begin()
			if err := stmt(tx, string(k), "v2"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(nil); err != nil {
				t.Fatal(err)
			}
		}, "v2", true},
		{"transaction abort keeps the entry", func(t *testing.T, s stores) {
			tx := s.db.Begin()
			if err := stmt(tx, string(k), "v2"); err != nil {
				t.Fatal(err)
			}
			tx.Abort()
		}, "v1", true},
		{"prepared transaction commit", func(t *testing.T, s stores) {
			tx := s.db.Begin()
			if err := stmt(tx, string(k), ""); err != nil {
				t.Fatal(err)
			}
			if err := tx.Prepare(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := tx.CommitPrepared(nil); err != nil {
				t.Fatal(err)
			}
		}, "", false},
		{"replicated apply (a follower; refreshed)", replicated(func(b *pebble.Batch) {
			_ = b.Set(k, []byte("v2"), nil)
		}), "v2", true},
		{"replicated sets of one key (the last refreshed)", replicated(func(b *pebble.Batch) {
			_ = b.Set(k, []byte("v2"), nil)
			_ = b.Set(docKey("other"), []byte("x"), nil)
			_ = b.Set(k, []byte("v3"), nil)
		}), "v3", true},
		{"replicated set, delete, set (refreshed)", replicated(func(b *pebble.Batch) {
			_ = b.Set(k, []byte("v2"), nil)
			_ = b.Delete(k, nil)
			_ = b.Set(k, []byte("v3"), nil)
		}), "v3", true},
		{"replicated set then delete", replicated(func(b *pebble.Batch) {
			_ = b.Set(k, []byte("v2"), nil)
			_ = b.Delete(k, nil)
		}), "", false},
		{"replicated set then range deletion", replicated(func(b *pebble.Batch) {
			_ = b.Set(k, []byte("v2"), nil)
			_ = b.DeleteRange(docSpace, docSpaceEnd, nil)
		}), "", false},
		{"replicated delete", replicated(func(b *pebble.Batch) {
			_ = b.Delete(k, nil)
		}), "", false},
		{"replicated range deletion", replicated(func(b *pebble.Batch) {
			_ = b.DeleteRange(docSpace, docSpaceEnd, nil)
		}), "", false},
		{"replicated large batch (Pebble takes it as a memtable)", replicated(func(b *pebble.Batch) {
			big := make([]byte, 1<<20)
			for i := range 40 {
				_ = b.Set(docKey(fmt.Sprint("big", i)), big, nil)
			}
			_ = b.Set(k, []byte("v2"), nil)
		}), "v2", true},
		{"a member's group (Hooks.Replicate, applied on both; refreshed)", func(t *testing.T, s stores) {
			write(t, s.follower, set(k, "v2"))
		}, "v2", true},
		{"checkpoint restore", func(t *testing.T, s stores) {
			src := openTest(t, Options{})
			write(t, src, set(k, "v2"))
			ck := filepath.Join(t.TempDir(), "ck")
			if err := src.Checkpoint(ck); err != nil {
				t.Fatal(err)
			}
			if err := s.db.RestoreCheckpoint(5, ck, nil); err != nil {
				t.Fatal(err)
			}
		}, "v2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stores
			s.db = openTest(t, Options{})
			// A member pair: the leader's groups are applied to both
			// through ApplyReplicated (the "a member's group" stanza
			// writes on it and reads s.db, its follower).
			var index uint64
			var leader *DB
			leader = openTest(t, Options{Hooks: &Hooks{Replicate: func(repr []byte, _ bool) error {
				index++
				if err := leader.ApplyReplicated(index, repr); err != nil {
					return err
				}
				return s.db.ApplyReplicated(index, repr)
			}}})
			s.follower = leader
			write(t, leader, set(k, "v1")) // reaches s.db through the hook
			if v, ok, hit := cachedGet(t, s.db, k); !ok || v != "v1" || !hit {
				t.Fatalf("before: %q, %v, hit %v; want v1 from the cache", v, ok, hit)
			}
			if v, ok, hit := cachedGet(t, leader, k); !ok || v != "v1" || !hit {
				t.Fatalf("before, on the leader: %q, %v, hit %v", v, ok, hit)
			}
			tc.change(t, s)
			for _, db := range []*DB{s.db} {
				before := db.DocumentCacheStats().Hits
				v, ok, err := db.Get(nil, k)
				if err != nil || string(v) != tc.want || ok != (tc.want != "") {
					t.Fatalf("after: %q, %v, %v; want %q", v, ok, err, tc.want)
				}
				if hit := db.DocumentCacheStats().Hits > before; hit != tc.kept {
					t.Fatalf("after: hit %v, want %v", hit, tc.kept)
				}
			}
		})
	}
}

// TestApplyRefreshesWhatWasCached: a replicated group's apply refreshes
// the cached documents it sets, in place, and caches none that was not
// cached ("keep cached what was cached").
func TestApplyRefreshesWhatWasCached(t *testing.T) {
	db := openTest(t, Options{})
	k, other := docKey("k"), docKey("other")
	apply := func(index uint64, fill func(b *pebble.Batch)) {
		t.Helper()
		b := db.pdb.NewBatch()
		defer b.Close()
		fill(b)
		if err := db.ApplyReplicated(index, b.Repr()); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, func(b *pebble.Batch) { _ = b.Set(k, []byte("v1"), nil); _ = b.Set(other, []byte("o1"), nil) })
	if v, ok, hit := cachedGet(t, db, k); v != "v1" || !ok || !hit {
		t.Fatalf("before: %q, %v, hit %v; want v1 from the cache", v, ok, hit)
	}
	before := db.DocumentCacheStats()
	apply(2, func(b *pebble.Batch) { _ = b.Set(k, []byte("v2"), nil); _ = b.Set(other, []byte("o2"), nil) })
	st := db.DocumentCacheStats()
	if st.Entries != 1 || st.Refreshed-before.Refreshed != 1 || st.Size != before.Size {
		t.Fatalf("after the apply: %+v (before %+v); want k alone cached, refreshed in place", st, before)
	}
	if v, ok, err := db.Get(nil, k); string(v) != "v2" || !ok || err != nil || db.DocumentCacheStats().Hits != st.Hits+1 {
		t.Fatalf("k after the apply: %q, %v, %v; want v2, a hit", v, ok, err)
	}
	if v, ok, err := db.Get(nil, other); string(v) != "o2" || !ok || err != nil || db.DocumentCacheStats().Misses != st.Misses+1 {
		t.Fatalf("other after the apply: %q, %v, %v; want o2, a miss", v, ok, err)
	}
}

// TestDocumentCacheInstallRace forces the classic race: a reader misses
// and reads the old value from Pebble, a writer commits a new one (and
// invalidates, finding nothing), then the reader installs. The install
// must be refused, so the next read returns the new value.
func TestDocumentCacheInstallRace(t *testing.T) {
	db := openTest(t, Options{})
	k := docKey("k")
	put(t, db, string(k), "old")
	once := false
	testBeforeInstall = func(key []byte) {
		if once || !bytes.Equal(key, k) {
			return
		}
		once = true
		put(t, db, string(k), "new")
	}
	t.Cleanup(func() { testBeforeInstall = nil })
	if v, _, _ := db.Get(nil, k); string(v) != "old" {
		t.Fatalf("first read %q, want old (read before the write)", v)
	}
	for i := range 2 {
		if v, ok, err := db.Get(nil, k); string(v) != "new" || !ok || err != nil {
			t.Fatalf("read %d after the acknowledged write: %q, %v, %v; want new", i, v, ok, err)
		}
	}
	if st := db.DocumentCacheStats(); st.Raced != 1 || st.Hits != 1 {
		t.Fatalf("stats %+v: want one raced install, then a hit of the new value", st)
	}
}

// TestDocumentCacheNeverStale: writers set a small set of document keys
// to increasing versions while readers read them through the cache (kept
// small, so entries are evicted and installed all along); each read must
// return a version no older than the last one acknowledged before the
// read began, nor than any version any reader saw before the read began.
// Two kinds of writer: "pipeline", four goroutines writing groups through
// the store's pipeline (a group's commit refreshes what it set), a
// request setting its key twice at times; and
// "replicated", one goroutine applying groups as a member applies its log
// (ApplyReplicated, one at a time), each setting a key to an older
// version, then (sometimes after deleting it) to its newer one, so a
// refresh that kept any record but the group's last for a key serves an
// older version than the one acknowledged. Run it with -race -tags
// invariants (every hit is also compared with Pebble). Taking the
// install's gen check out fails it within a few runs (see BENCHMARKS.md's
// section).
func TestDocumentCacheNeverStale(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const nKeys = 4
	for _, tc := range []struct {
		name    string
		writers int
		// write makes writer w's next change and returns the key it
		// changed and the version it holds now.
		write func(db *DB, w int, rng *rand.Rand, keys [][]byte, next func(i int) uint64) (int, uint64, error)
	}{
		{"pipeline", 4, func(db *DB, w int, rng *rand.Rand, keys [][]byte, next func(int) uint64) (int, uint64, error) {
			// Writer w owns keys w, w+writers, ...: its versions of them
			// rise.
			i := w + 4*rng.IntN(nKeys/4)
			older, v := next(i), next(i)
			twice := rng.IntN(2) == 0
			return i, v, db.Write(func(tx *Txn) error {
				if twice { // a group's batch holding two versions of the key
					tx.Set(keys[i], version(older, 100+rng.IntN(200)))
				}
				tx.Set(keys[i], version(v, 100+rng.IntN(200)))
				return nil
			})
		}},
		{"replicated", 1, func(db *DB, _ int, rng *rand.Rand, keys [][]byte, next func(int) uint64) (int, uint64, error) {
			i := rng.IntN(nKeys)
			older, v := next(i), next(i)
			b := db.pdb.NewBatch()
			defer b.Close()
			_ = b.Set(docKey(fmt.Sprint("f", rng.IntN(200))), version(0, 300), nil)
			_ = b.Set(keys[i], version(older, 100+rng.IntN(200)), nil)
			if rng.IntN(2) == 0 {
				_ = b.Delete(keys[i], nil)
			}
			_ = b.Set(keys[i], version(v, 100+rng.IntN(200)), nil)
			return i, v, db.ApplyReplicated(v, b.Repr())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { neverStale(t, seed, nKeys, tc.writers, tc.write) })
	}
}

// neverStale is one run of TestDocumentCacheNeverStale with the given
// writers.
func neverStale(t *testing.T, seed uint64, nKeys, writers int, write func(db *DB, w int, rng *rand.Rand, keys [][]byte, next func(int) uint64) (int, uint64, error)) {
	const (
		readers  = 6
		duration = 1500 * time.Millisecond
	)
	// Writes acknowledged once written to the OS (no fsync each): many
	// more of them race the readers' installs.
	db := openTest(t, Options{CacheSize: 64 << 20, DocumentCacheSize: docCacheShards * 2 << 10, SyncInterval: 100 * time.Millisecond})
	keys := make([][]byte, nKeys)
	acked, seenMax, versions := make([]atomic.Uint64, nKeys), make([]atomic.Uint64, nKeys), make([]atomic.Uint64, nKeys)
	for i := range keys {
		keys[i] = docKey(fmt.Sprint("k", i))
		put(t, db, string(keys[i]), string(version(0, 100)))
	}
	// Filler documents, so the small cache evicts.
	for i := range 200 {
		put(t, db, string(docKey(fmt.Sprint("f", i))), string(version(0, 300)))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	next := func(i int) uint64 { return versions[i].Add(1) }
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i, v, err := write(db, w, rng, keys, next)
				if err != nil {
					fail("write: %v", err)
					return
				}
				acked[i].Store(v)
			}
		}()
	}
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+r)))
			var dst []byte
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if rng.IntN(4) == 0 { // a filler, to evict
					f := docKey(fmt.Sprint("f", rng.IntN(200)))
					if _, _, err := db.Get(nil, f); err != nil {
						fail("get: %v", err)
					}
					continue
				}
				i := rng.IntN(nKeys)
				ack, seen := acked[i].Load(), seenMax[i].Load()
				var ok bool
				var err error
				dst, ok, err = db.Get(dst[:0], keys[i])
				if err != nil || !ok {
					fail("get %d: %v, %v (seed %d)", i, ok, err, seed)
					return
				}
				got := binary.BigEndian.Uint64(dst)
				if got < ack || got < seen {
					fail("reader %d read %d: key %d at version %d, but version %d was acknowledged and %d seen before the read began (seed %d)", r, n, i, got, ack, seen, seed)
					return
				}
				raiseTo(&seenMax[i], got)
			}
		}()
	}
	time.Sleep(duration)
	close(stop)
	wg.Wait()
	st := db.DocumentCacheStats()
	t.Logf("%+v", st)
	if st.Hits == 0 || st.Evictions == 0 || st.Invalidations == 0 || st.Refreshed == 0 {
		t.Errorf("stats %+v: the test must hit, evict, invalidate and refresh", st)
	}
}

// version is a document holding v, padded to n bytes.
func version(v uint64, n int) []byte {
	b := make([]byte, max(n, 8))
	binary.BigEndian.PutUint64(b, v)
	return b
}

// TestDocumentCacheBounded: sizes, the switch and the memory bound.
func TestDocumentCacheBounded(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ cache, want int64 }{
		{256 * mib, 32 * mib},
		{1 << 30, 128 * mib},
		{23 << 29, 1 << 30}, // 11.5 GiB: capped
		{64 << 30, 1 << 30},
	} {
		if got := DefaultDocumentCacheSize(c.cache); got != c.want {
			t.Errorf("DefaultDocumentCacheSize(%d MiB) = %d MiB, want %d", c.cache/mib, got/mib, c.want/mib)
		}
	}
	for _, c := range []struct {
		cache, docs     int64
		want, wantBlock int64
		err             bool
	}{
		{256 * mib, 0, 32 * mib, 224 * mib, false},
		{256 * mib, -1, 0, 256 * mib, false},
		{256 * mib, 100 * mib, 100 * mib, 156 * mib, false},
		{256 * mib, 129 * mib, 0, 0, true},
	} {
		db, err := Open(t.TempDir(), Options{CacheSize: c.cache, DocumentCacheSize: c.docs, Logger: discardLogger()})
		if c.err {
			if err == nil {
				db.Close()
				t.Errorf("cache %d, documents %d: opened, want an error", c.cache, c.docs)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if db.DocumentCacheCapacity() != c.want || db.BlockCacheCapacity() != c.wantBlock || db.CacheCapacity() != c.cache {
			t.Errorf("cache %d, documents %d: document cache %d, block cache %d, want %d and %d", c.cache, c.docs,
				db.DocumentCacheCapacity(), db.BlockCacheCapacity(), c.want, c.wantBlock)
		}
		k := docKey("k")
		put(t, db, string(k), "v")
		_, _, hit := cachedGet(t, db, k)
		if hit != (c.want > 0) {
			t.Errorf("documents %d: hit %v", c.docs, hit)
		}
		db.Close()
	}
	for _, c := range []struct{ cache, docs, want int64 }{
		{256 * mib, 32 * mib, 256*mib + 32*mib},
		{8 << 30, 1 << 30, 2<<30 + 1<<30},
		{256 * mib, 0, 256 * mib},
	} {
		want := c.want
		if cacheOnGoHeap {
			want += c.cache - c.docs
		}
		if got := HeapLimit(c.cache, c.docs); got != want {
			t.Errorf("HeapLimit(%d, %d) = %d, want %d", c.cache, c.docs, got, want)
		}
	}
	// Far more documents than fit: the charged size stays within the
	// capacity, and the cache keeps serving.
	db := openTest(t, Options{CacheSize: 64 * mib, DocumentCacheSize: 2 * mib})
	val := make([]byte, 1000)
	const n = 6000 // ~6.4 MB charged if all stayed
	for i := range n {
		k := docKey(fmt.Sprint(i))
		if err := db.Write(func(tx *Txn) error { tx.Set(k, val); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Get(nil, k); err != nil {
			t.Fatal(err)
		}
	}
	st := db.DocumentCacheStats()
	if st.Size > st.Capacity || st.Entries == 0 || st.Evictions < n/2 {
		t.Fatalf("stats %+v: want size within capacity and evictions", st)
	}
	t.Logf("%+v", st)
}

// checkDocShards fails t unless every shard's index points at entries
// that are where it says (an entry's start, in a segment's used bytes,
// holding the index's hash) and its charge is its segments plus the
// index and within its share (invariant "Document cache bounded").
func checkDocShards(t *testing.T, c *docCache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		starts := map[uint64]bool{}
		var alloc int64
		for j, b := range s.segs {
			if b == nil {
				continue
			}
			if cap(b) != s.segSize || j >= s.nsegs {
				t.Fatalf("shard %d segment %d: capacity %d (segment size %d), %d segments", i, j, cap(b), s.segSize, s.nsegs)
			}
			alloc += int64(cap(b))
			for r := 0; r < len(b); {
				starts[docLoc(j, r)] = true
				n := docEntryHeader + int(binary.LittleEndian.Uint32(b[r+8:])&docKeyLen) + int(binary.LittleEndian.Uint32(b[r+12:]))
				if span := entrySpan(b[r:]); span < n {
					t.Fatalf("shard %d segment %d: an entry of %d bytes in a slot of %d", i, j, n, span)
				}
				r += entrySpan(b[r:])
				if r > len(b) {
					t.Fatalf("shard %d segment %d: an entry runs past the segment's %d bytes", i, j, len(b))
				}
			}
		}
		for h, loc := range s.index {
			if !starts[loc] {
				t.Fatalf("shard %d: hash %x at %x, not an entry's start", i, h, loc)
			}
			if got := binary.LittleEndian.Uint64(s.segs[loc>>32][uint32(loc):]); got != h {
				t.Fatalf("shard %d: hash %x at %x holds hash %x", i, h, loc, got)
			}
		}
		if want := alloc + int64(len(s.index))*docIndexOverhead; s.alloc != alloc || s.bytes != want || s.bytes > s.capacity {
			t.Fatalf("shard %d: charged %d (segments %d, counted %d; %d entries), share %d", i, s.bytes, alloc, s.alloc, len(s.index), s.capacity)
		}
	}
}

// TestDocumentCacheModel: random installs, hits, drops (a write's
// invalidation) and clears on a small cache, against a map of what the
// store holds: a hit returns the key's current value, never another's
// or an older one, and the segments and index stay consistent through
// every reclaim. Seed printed.
func TestDocumentCacheModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var gen atomic.Uint64
	for _, size := range []int64{2 << 10, 4 << 10, 32 << 10} {
		c := newDocCache(size * docCacheShards)
		// Keys of four shards, so that they fill and reclaim often.
		var keys [][]byte
		for i := 0; len(keys) < 200; i++ {
			k := fmt.Appendf(nil, "d%d", i)
			if c.hash(k)>>58 < 4 {
				keys = append(keys, k)
			}
		}
		store := make([][]byte, len(keys))
		value := func(i int) []byte {
			v := make([]byte, 8+rng.IntN(c.maxEntry))
			binary.BigEndian.PutUint64(v, rng.Uint64())
			for j := 8; j < len(v); j++ {
				v[j] = byte(i + j)
			}
			return v
		}
		for i := range store {
			store[i] = value(i)
		}
		var hits int
		for op := range 20000 {
			i := rng.IntN(len(keys))
			k := keys[i]
			switch p := rng.IntN(100); {
			case p < 50:
				if out, ok := c.get(nil, k, c.hash(k)); ok {
					hits++
					if !bytes.Equal(out, store[i]) {
						t.Fatalf("size %d, op %d: key %s hit %d bytes that are not its value's %d (seed %d)", size, op, k, len(out), len(store[i]), seed)
					}
				}
			case p < 85:
				c.install(k, store[i], c.hash(k), &gen, gen.Load())
			case p < 92:
				store[i] = value(i)
				c.drop(k)
			case p < 99:
				// A group's commit refreshing what it set
				// (changeRefreshing): dropped, then the new value
				// installed, in place when it fits the old slot.
				store[i] = value(i)
				c.drop(k)
				c.install(k, store[i], c.hash(k), &gen, gen.Load())
			default:
				c.clear()
			}
			checkDocShards(t, c)
		}
		st := statsOf(c)
		t.Logf("size %d: %+v", size, st)
		if hits == 0 || st.Evictions == 0 || st.Refreshed == 0 {
			t.Fatalf("size %d: %d hits, stats %+v: the test must hit, evict and refresh in place", size, hits, st)
		}
	}
}

// TestDocumentCacheNoPointers: the entries are not Go objects of their
// own (the collector would mark each one every cycle): caching 20,000
// documents leaves far fewer heap objects than that (the shards'
// segments and index tables), and replacing an entry once the segments
// exist allocates nothing.
func TestDocumentCacheNoPointers(t *testing.T) {
	var gen atomic.Uint64
	const n = 20000
	c := newDocCache(64 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	key, val := make([]byte, 0, 32), make([]byte, 500)
	for i := range n {
		key = fmt.Appendf(key[:0], "d%d", i)
		c.install(key, val, c.hash(key), &gen, gen.Load())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st := statsOf(c); st.Entries != n {
		t.Fatalf("%d entries cached, want %d: %+v", st.Entries, n, st)
	}
	if objs := int64(after.HeapObjects) - int64(before.HeapObjects); objs > n/10 {
		t.Fatalf("%d entries took %d more heap objects, want under %d", n, objs, n/10)
	}
	key = fmt.Appendf(key[:0], "d%d", 7)
	h := c.hash(key)
	if allocs := testing.AllocsPerRun(1000, func() { c.install(key, val, h, &gen, gen.Load()) }); allocs != 0 {
		t.Fatalf("replacing an entry allocated %v times, want 0", allocs)
	}
	checkDocShards(t, c)
	runtime.KeepAlive(c)
}

// TestGroupReadsThroughCache: a standalone pipeline request's read of a
// cached document is a hit of the cache unless its own request or an
// earlier one of its group wrote the key (or a range of documents): then
// it reads the group's batch (invariant "Group reads through the
// cache"). And a group's commit caches the documents it set that were
// cached or that its requests read (changeRefreshing): the next read is a
// hit with the new value, unless the group deleted it after. Each stanza: a group of requests run in
// order (the first holds the pipeline until the others are queued, so
// they gather into one group), each request's read of k (its value, or
// "-" for none, and whether the cache served it), then what a read of k
// after the group returns and whether it hits.
func TestGroupReadsThroughCache(t *testing.T) {
	k, other := docKey("k"), docKey("other")
	type read struct {
		val string
		hit bool
	}
	// step is one request: its writes, then its read of k.
	type step struct {
		write func(tx *Txn)
		want  read
	}
	set := func(key []byte, v string) func(*Txn) { return func(tx *Txn) { tx.Set(key, []byte(v)) } }
	del := func(tx *Txn) { tx.Delete(k) }
	for _, tc := range []struct {
		name  string
		cold  bool // k not cached before the group
		steps []step
		after read
	}{
		{"a read of a cached document hits", false, []step{{nil, read{"v1", true}}}, read{"v1", true}},
		{"an uncached document read, then set, in the group: cached after", true, []step{{nil, read{"v1", false}}, {set(k, "v2"), read{"v2", false}}}, read{"v2", true}},
		{"an uncached document set without a read: not cached", true, []step{{set(k, "v2"), read{"v2", false}}}, read{"v2", false}},
		{"the request's own write", false, []step{{set(k, "v2"), read{"v2", false}}}, read{"v2", true}},
		{"an earlier request's write in the group", false, []step{{set(k, "v2"), read{"v2", false}}, {nil, read{"v2", false}}}, read{"v2", true}},
		{"another document's write in the group", false, []step{{set(other, "x"), read{"v1", true}}, {nil, read{"v1", true}}}, read{"v1", true}},
		{"a delete in the group", false, []step{{del, read{"-", false}}, {nil, read{"-", false}}}, read{"-", false}},
		{"set, then delete in a later request", false, []step{{set(k, "v2"), read{"v2", false}}, {del, read{"-", false}}}, read{"-", false}},
		{"delete, then set in a later request", false, []step{{del, read{"-", false}}, {set(k, "v3"), read{"v3", false}}}, read{"v3", false}},
		{"a range of documents deleted in the group", false, []step{
			{func(tx *Txn) { tx.DeleteRange(docSpace, docSpaceEnd) }, read{"-", false}},
			{nil, read{"-", false}}}, read{"-", false}},
		{"a range elsewhere", false, []step{{func(tx *Txn) { tx.DeleteRange([]byte("o"), []byte("p")) }, read{"v1", true}}}, read{"v1", true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			put(t, db, string(k), "v1", string(other), "o")
			if !tc.cold {
				if v, ok, hit := cachedGet(t, db, k); !ok || v != "v1" || !hit {
					t.Fatalf("before: %q, %v, hit %v; want v1 from the cache", v, ok, hit)
				}
			}
			// The first request holds the pipeline until every step's
			// request is queued behind it: they gather into its group.
			hold := make(chan struct{})
			held := make(chan struct{})
			go func() {
				_ = db.Write(func(*Txn) error { close(held); <-hold; return nil })
			}()
			<-held
			groupsBefore := db.CommitGroups().Groups
			got := make([]read, len(tc.steps))
			var wg sync.WaitGroup
			var ran atomic.Int32
			for i, st := range tc.steps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := db.Write(func(tx *Txn) error {
						if int(ran.Add(1)) != i+1 {
							return fmt.Errorf("request %d ran out of order", i)
						}
						if st.write != nil {
							st.write(tx)
						}
						hits := db.DocumentCacheStats().Hits
						v, ok, err := tx.Get(nil, k)
						if err != nil {
							return err
						}
						got[i] = read{"-", db.DocumentCacheStats().Hits > hits}
						if ok {
							got[i].val = string(v)
						}
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				}()
				for len(db.pipe.queue) < i+1 { // queued, in order
					runtime.Gosched()
				}
			}
			close(hold)
			wg.Wait()
			if t.Failed() {
				return
			}
			if n := db.CommitGroups().Groups - groupsBefore; n != 1 {
				t.Fatalf("the holding request and the steps took %d groups, want 1: not gathered", n)
			}
			for i, want := range tc.steps {
				if got[i] != want.want {
					t.Errorf("request %d read %+v, want %+v", i, got[i], want.want)
				}
			}
			before := db.DocumentCacheStats().Hits
			v, ok, err := db.Get(nil, k)
			if err != nil {
				t.Fatal(err)
			}
			after := read{"-", db.DocumentCacheStats().Hits > before}
			if ok {
				after.val = string(v)
			}
			if after != tc.after {
				t.Errorf("after the group: %+v, want %+v", after, tc.after)
			}
		})
	}
}

// TestGroupRefreshInPlace: updating the same documents over and over
// through the pipeline (each request reads its document, through the
// cache, then sets it; the group's commit refreshes it) rewrites their
// entries in place (invariant "Refresh in place"): after the first
// round, the segments hold no more bytes and no more are allocated, every
// later update was a refresh in place, and every read after is a hit of
// the latest value. A stanza per document size and round count; a
// document that grows moves, then grows in its room.
func TestGroupRefreshInPlace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		docs        int
		size, grow  int // the first value's bytes; bytes added each round
		rounds      int
		wantInPlace int // refreshes in place at least
	}{
		{"same size", 300, 1000, 0, 20, 300 * 19},
		{"small documents", 1000, 40, 0, 10, 1000 * 9},
		{"growing a byte a round", 200, 800, 1, 30, 200 * 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{CacheSize: 64 << 20, DocumentCacheSize: 8 << 20})
			keys := make([][]byte, tc.docs)
			value := func(i, round int) []byte {
				v := bytes.Repeat([]byte{byte(round)}, tc.size+round*tc.grow)
				binary.BigEndian.PutUint32(v, uint32(i))
				return v
			}
			for i := range keys {
				keys[i] = docKey(fmt.Sprint(i))
				put(t, db, string(keys[i]), string(value(i, 0)))
			}
			var used, alloc int64
			for round := 1; round <= tc.rounds; round++ {
				for i, k := range keys {
					if err := db.Write(func(tx *Txn) error {
						if _, _, err := tx.Get(nil, k); err != nil {
							return err
						}
						tx.Set(k, value(i, round))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				// A growing document is first cached at round 1 in a slot
				// of its size and moves at round 2, with an eighth more
				// room, which the later rounds' bytes fit.
				settled := 1
				if tc.grow > 0 {
					settled = 2
				}
				u, a := cacheBytes(db.visible.docs)
				if round == settled {
					used, alloc = u, a
				} else if round > settled && (u != used || a != alloc) {
					t.Fatalf("round %d: segments hold %d bytes (%d allocated), after round %d %d (%d): the ring grew", round, u, a, settled, used, alloc)
				}
			}
			st := db.DocumentCacheStats()
			if st.Refreshed < int64(tc.wantInPlace) || st.Entries != int64(tc.docs) {
				t.Fatalf("stats %+v: want %d documents and at least %d refreshed in place", st, tc.docs, tc.wantInPlace)
			}
			for i, k := range keys {
				before := db.DocumentCacheStats().Hits
				v, ok, err := db.Get(nil, k)
				if err != nil || !ok || !bytes.Equal(v, value(i, tc.rounds)) || db.DocumentCacheStats().Hits != before+1 {
					t.Fatalf("document %d after the rounds: %d bytes, found %v, %v, hit %v; want the last round's from the cache",
						i, len(v), ok, err, db.DocumentCacheStats().Hits == before+1)
				}
			}
			checkDocShards(t, db.visible.docs)
		})
	}
}

// cacheBytes is the bytes a cache's segments hold and have allocated.
func cacheBytes(c *docCache) (used, alloc int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		used += int64(segmentBytes(s))
		alloc += s.alloc
		s.mu.Unlock()
	}
	return used, alloc
}
