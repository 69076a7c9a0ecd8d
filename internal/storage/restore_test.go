package storage

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestRestoreCheckpoint: a store restored from another's checkpoint holds
// exactly the checkpoint's keys and the snapshot's applied index, across a
// reopen; a restore that dies after its deleting batch and one copied
// batch reopens as a Cairn store with applied index 0, so its owner
// restores again ("Restore is redone until whole").
func TestRestoreCheckpoint(t *testing.T) {
	src := openTest(t, Options{})
	val := make([]byte, 8<<10)
	for i := range 1500 { // 12 MiB: several batches of the copy
		if err := src.Write(func(tx *Txn) error {
			tx.Set(fmt.Appendf(nil, "d1%05d", i), val)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.ApplyReplicated(7, nil); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck")
	if err := src.Checkpoint(ck); err != nil {
		t.Fatal(err)
	}
	want := allKeys(t, src)

	dir := t.TempDir()
	open := func() *DB {
		db, err := Open(dir, Options{Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dst := open()
	if err := dst.Write(func(tx *Txn) error { tx.Set([]byte("d2only-here"), []byte("x")); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := dst.ApplyReplicated(3, nil); err != nil {
		t.Fatal(err)
	}
	type died struct{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (died{}) {
				panic(r)
			}
		}()
		_ = dst.RestoreCheckpoint(7, ck, func(copied int64) {
			if copied > 0 {
				panic(died{})
			}
		})
		t.Fatal("the restore went past its first copied batch")
	}()
	dst.Close()
	dst = open()
	if got, err := dst.AppliedIndex(); got != 0 || err != nil {
		t.Fatalf("applied index after a restore cut short: %d, %v; want 0", got, err)
	}
	var batches int
	if err := dst.RestoreCheckpoint(7, ck, func(int64) { batches++ }); err != nil {
		t.Fatal(err)
	}
	if batches < 3 {
		t.Errorf("restore of 12 MiB reported %d batches", batches)
	}
	for range 2 {
		if got, err := dst.AppliedIndex(); got != 7 || err != nil {
			t.Fatalf("applied index %d, %v; want 7", got, err)
		}
		if got := allKeys(t, dst); !slices.Equal(got, want) {
			t.Fatalf("restored store holds %d keys, the checkpoint %d", len(got), len(want))
		}
		dst.Close()
		dst = open()
	}
	dst.Close()
	// A checkpoint past the snapshot's index is refused.
	dst = open()
	defer dst.Close()
	if err := dst.RestoreCheckpoint(6, ck, nil); err == nil {
		t.Error("a checkpoint holding index 7 restored as index 6")
	}
}

func allKeys(t *testing.T, db *DB) []string {
	t.Helper()
	it, err := db.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%q=%x", it.Key(), v[:min(len(v), 16)]))
	}
	return out
}
