package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHasMatchesGet checks invariant "Absent keys stop at the filters":
// Txn.Has, a prefix seek through every level's bloom filters, answers what
// Get answers for a key in each place it can be — the bottom level after a
// full compaction, a memtable, this request's own writes, a deletion or a
// range deletion over a stored key — and for keys that are absent between
// and beyond stored ones (the filters' case).
func TestHasMatchesGet(t *testing.T) {
	errCheckOnly := errors.New("check only")
	db := openTest(t, Options{})
	key := func(n int) []byte { return []byte(fmt.Sprintf("k%06d", n)) }
	write := func(fn func(*Txn)) {
		t.Helper()
		if err := db.Write(func(tx *Txn) error { fn(tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// Even keys 0..1998 go to the bottom level; 3000.. stay in the memtable.
	write(func(tx *Txn) {
		for n := 0; n < 2000; n += 2 {
			tx.Set(key(n), []byte("v"))
		}
	})
	if err := db.pdb.Compact(t.Context(), []byte("k"), []byte("l"), true); err != nil {
		t.Fatal(err)
	}
	write(func(tx *Txn) {
		tx.Set(key(3000), []byte("m"))
		tx.Delete(key(10))               // a stored key deleted
		tx.DeleteRange(key(20), key(30)) // stored keys 20..28 range-deleted
	})
	for _, tc := range []struct {
		name string
		n    int
		own  func(*Txn) // the request's own writes before the check
		want bool
	}{
		{"bottom level", 100, nil, true},
		{"absent between bottom-level keys", 101, nil, false},
		{"absent beyond every key", 9999, nil, false},
		{"memtable", 3000, nil, true},
		{"deleted", 10, nil, false},
		{"range-deleted", 24, nil, false},
		{"written by the request", 501, func(tx *Txn) { tx.Set(key(501), []byte("o")) }, true},
		{"deleted by the request", 102, func(tx *Txn) { tx.Delete(key(102)) }, false},
		{"range-deleted by the request", 204, func(tx *Txn) { tx.DeleteRange(key(200), key(210)) }, false},
		{"written back after the request's range deletion", 206, func(tx *Txn) {
			tx.DeleteRange(key(200), key(210))
			tx.Set(key(206), []byte("o"))
		}, true},
	} {
		// Each stanza twice: Has seeking alone, and Has answering from
		// PrefetchHas (given the key among its neighbours, unsorted and
		// repeated) read before the request's own writes.
		for _, prefetch := range []bool{false, true} {
			var has, got bool
			err := db.Write(func(tx *Txn) error {
				if prefetch {
					if err := tx.PrefetchHas([][]byte{key(tc.n + 1), key(tc.n), key(tc.n - 1), key(tc.n)}); err != nil {
						return err
					}
				}
				if tc.own != nil {
					tc.own(tx)
				}
				var err error
				if has, err = tx.Has(key(tc.n)); err != nil {
					return err
				}
				if _, got, err = tx.Get(nil, key(tc.n)); err != nil {
					return err
				}
				return errCheckOnly // nothing of the check is kept
			})
			if !errors.Is(err, errCheckOnly) {
				t.Fatalf("%s (prefetched %v): %v", tc.name, prefetch, err)
			}
			if has != tc.want || got != tc.want {
				t.Errorf("%s (prefetched %v): Has %v, Get %v, want %v", tc.name, prefetch, has, got, tc.want)
			}
		}
	}
}

// TestPrefetchHasMatchesGet checks invariant "Prefetched answers hold for
// the request": random keys spread over the bottom level, a memtable, the
// group's earlier requests and the request's own writes, prefetched in
// random order (repeats included), answer Has as Get does — and a
// request after it, whose prefetch is gone, too. Seed printed.
func TestPrefetchHasMatchesGet(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	db := openTest(t, Options{})
	key := func(n int) []byte { return []byte(fmt.Sprintf("p%05d", n)) }
	const space = 3000
	write := func(every int) {
		t.Helper()
		if err := db.Write(func(tx *Txn) error {
			for n := rng.IntN(every); n < space; n += 1 + rng.IntN(every) {
				tx.Set(key(n), []byte("v"))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(4)
	if err := db.pdb.Compact(t.Context(), []byte("p"), []byte("q"), true); err != nil {
		t.Fatal(err)
	}
	write(16) // the memtable
	errCheckOnly := errors.New("check only")
	for round := range 20 {
		var keys [][]byte
		for range 1 + rng.IntN(200) {
			keys = append(keys, key(rng.IntN(space+10)))
		}
		own := key(rng.IntN(space))
		err := db.Write(func(tx *Txn) error {
			if err := tx.PrefetchHas(keys); err != nil {
				return err
			}
			tx.Delete(keys[0]) // the request's own writes decide first
			tx.Set(own, []byte("o"))
			for _, k := range append(keys, own) {
				has, err := tx.Has(k)
				if err != nil {
					return err
				}
				_, got, err := tx.Get(nil, k)
				if err != nil {
					return err
				}
				if has != got {
					t.Errorf("round %d key %s: Has %v, Get %v", round, k, has, got)
				}
			}
			return errCheckOnly
		})
		if !errors.Is(err, errCheckOnly) {
			t.Fatal(err)
		}
		// A request that prefetches a key absent and then writes it; the
		// next request, prefetching nothing, must see the write.
		fresh := key(space + 100 + round)
		if err := db.Write(func(tx *Txn) error {
			if err := tx.PrefetchHas([][]byte{fresh, keys[0]}); err != nil {
				return err
			}
			tx.Set(fresh, []byte("n"))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var has bool
		if err := db.Write(func(tx *Txn) error {
			var err error
			has, err = tx.Has(fresh)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !has {
			t.Errorf("round %d: Has of %s written by the previous request: false (a stale prefetched answer)", round, fresh)
		}
	}
}
