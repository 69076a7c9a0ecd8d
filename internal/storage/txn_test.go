package storage

import (
	"errors"
	"fmt"
	"testing"
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
		var has, got bool
		err := db.Write(func(tx *Txn) error {
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
			t.Fatalf("%s: %v", tc.name, err)
		}
		if has != tc.want || got != tc.want {
			t.Errorf("%s: Has %v, Get %v, want %v", tc.name, has, got, tc.want)
		}
	}
}
