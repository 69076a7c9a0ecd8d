package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func openTest(t testing.TB, opts Options) *DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	db, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustGet(t *testing.T, db *DB, key string) (string, bool) {
	t.Helper()
	v, ok, err := db.Get(nil, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

func TestWriteThenRead(t *testing.T) {
	db := openTest(t, Options{})
	err := db.Write(func(tx *Txn) error {
		tx.Set([]byte("a"), []byte("1"))
		v, ok, err := tx.Get(nil, []byte("a"))
		if err != nil || !ok || string(v) != "1" {
			return fmt.Errorf("own write not visible: %q %v %v", v, ok, err)
		}
		tx.Delete([]byte("a"))
		if ok, _ := tx.Has([]byte("a")); ok {
			return errors.New("own delete not visible")
		}
		tx.Set([]byte("b"), []byte("2"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mustGet(t, db, "a"); ok {
		t.Error("a should be deleted")
	}
	if v, _ := mustGet(t, db, "b"); v != "2" {
		t.Errorf("b = %q", v)
	}
}

func TestFailedRequestWritesNothing(t *testing.T) {
	db := openTest(t, Options{})
	boom := errors.New("boom")
	err := db.Write(func(tx *Txn) error {
		tx.Set([]byte("x"), []byte("1"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := mustGet(t, db, "x"); ok {
		t.Error("failed request's write was committed")
	}
}

func TestPanickingRequestIsIsolated(t *testing.T) {
	db := openTest(t, Options{})
	err := db.Write(func(tx *Txn) error {
		tx.Set([]byte("p"), []byte("1"))
		var m map[string]int
		m["boom"] = 1 // a nil-map write: a genuine runtime panic
		return nil
	})
	if err == nil {
		t.Fatal("panic not reported")
	}
	if err := db.Write(func(tx *Txn) error { tx.Set([]byte("q"), []byte("1")); return nil }); err != nil {
		t.Fatalf("pipeline dead after a panic: %v", err)
	}
	if _, ok := mustGet(t, db, "p"); ok {
		t.Error("panicking request's write was committed")
	}
}

func TestSavepointRollback(t *testing.T) {
	db := openTest(t, Options{})
	var undone []string
	err := db.Write(func(tx *Txn) error {
		tx.Set([]byte("keep"), []byte("1"))
		tx.OnUndo(func() { undone = append(undone, "keep") })
		sp := tx.Savepoint()
		tx.Set([]byte("drop"), []byte("1"))
		tx.OnUndo(func() { undone = append(undone, "drop1") })
		tx.Delete([]byte("keep"))
		tx.OnUndo(func() { undone = append(undone, "drop2") })
		tx.RollbackTo(sp)
		if ok, _ := tx.Has([]byte("keep")); !ok {
			return errors.New("rollback did not restore keep")
		}
		if ok, _ := tx.Has([]byte("drop")); ok {
			return errors.New("rollback did not discard drop")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mustGet(t, db, "drop"); ok {
		t.Error("rolled-back write committed")
	}
	if _, ok := mustGet(t, db, "keep"); !ok {
		t.Error("write before savepoint lost")
	}
	if fmt.Sprint(undone) != "[drop2 drop1]" {
		t.Errorf("undone = %v, want [drop2 drop1]", undone)
	}
	// A failing request undoes everything it registered.
	undone = nil
	_ = db.Write(func(tx *Txn) error {
		tx.OnUndo(func() { undone = append(undone, "failed") })
		return errors.New("fail")
	})
	if fmt.Sprint(undone) != "[failed]" {
		t.Errorf("undone = %v, want [failed]", undone)
	}
}

func TestDeleteRange(t *testing.T) {
	db := openTest(t, Options{})
	p1, p2 := Prefix(nil, SpaceDocument, 1), Prefix(nil, SpaceDocument, 2)
	err := db.Write(func(tx *Txn) error {
		for i := range 10 {
			tx.Set(append(append([]byte(nil), p1...), byte(i)), []byte("v"))
			tx.Set(append(append([]byte(nil), p2...), byte(i)), []byte("v"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Write(func(tx *Txn) error {
		tx.DeleteRange(p1, PrefixEnd(p1))
		if ok, _ := tx.Has(append(append([]byte(nil), p1...), 3)); ok {
			return errors.New("range deletion not visible to its own request")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(p []byte) int {
		it, err := db.NewIter(p, PrefixEnd(p))
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return n
	}
	if n := count(p1); n != 0 {
		t.Errorf("collection 1 has %d keys after drop", n)
	}
	if n := count(p2); n != 10 {
		t.Errorf("collection 2 has %d keys, want 10", n)
	}
}

// TestConcurrentUniqueInsert checks "Serial apply": many writers race to claim
// the same key with read-check-write, and exactly one wins.
func TestConcurrentUniqueInsert(t *testing.T) {
	db := openTest(t, Options{})
	const writers = 32
	var wins atomic.Int32
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Write(func(tx *Txn) error {
				if ok, err := tx.Has([]byte("k")); err != nil || ok {
					return errors.New("taken")
				}
				tx.Set([]byte("k"), []byte{byte(w)})
				return nil
			})
			if err == nil {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d writers claimed the key, want exactly 1", wins.Load())
	}
}

func TestHooksRunOnCommit(t *testing.T) {
	var committed atomic.Int32
	db := openTest(t, Options{Hooks: &Hooks{Committed: func() { committed.Add(1) }}})
	if err := db.Write(func(tx *Txn) error { tx.Set([]byte("a"), nil); return nil }); err != nil {
		t.Fatal(err)
	}
	if committed.Load() != 1 {
		t.Fatalf("Committed ran %d times", committed.Load())
	}
}

// TestCommittingRunsBeforeVisibility checks the Committing hook runs before
// a group's writes can be read (the catalog's seqlock depends on it) and
// before Committed.
func TestCommittingRunsBeforeVisibility(t *testing.T) {
	var db *DB
	var order []string
	hooks := &Hooks{
		Committing: func() bool {
			_, found, err := db.Get(nil, []byte("a"))
			order = append(order, fmt.Sprintf("committing(visible=%v, err=%v)", found, err))
			return false
		},
		Committed: func() { order = append(order, "committed") },
	}
	db = openTest(t, Options{Hooks: hooks})
	if err := db.Write(func(tx *Txn) error { tx.Set([]byte("a"), nil); return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, " "), "committing(visible=false, err=<nil>) committed"; got != want {
		t.Fatalf("hooks ran as %q, want %q", got, want)
	}
}

func TestWriteAfterClose(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(func(*Txn) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestOpenLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: err = %v, want ErrLocked", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(func(tx *Txn) error { tx.Set([]byte("a"), []byte("1")); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := mustGet(t, db, "a"); v != "1" {
		t.Fatalf("a = %q after reopen", v)
	}
}

func TestOpenForeignPebbleStore(t *testing.T) {
	dir := t.TempDir()
	pdb, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = pdb.Set([]byte("someone else's"), []byte("data"), pebble.Sync)
	_ = pdb.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotCairn) {
		t.Fatalf("err = %v, want ErrNotCairn", err)
	}
}

// TestOpenDamagedDirectory damages a store in the ways disks and people do
// and checks that Open reports an error instead of panicking or starting empty.
func TestOpenDamagedDirectory(t *testing.T) {
	damage := map[string]func(t *testing.T, dir string){
		"garbage MANIFEST": func(t *testing.T, dir string) {
			for _, m := range glob(t, dir, "MANIFEST-*") {
				writeFile(t, m, []byte("this is not a manifest at all, not even close"))
			}
		},
		"truncated MANIFEST": func(t *testing.T, dir string) {
			for _, m := range glob(t, dir, "MANIFEST-*") {
				truncateHalf(t, m)
			}
		},
		"manifest marker names a missing manifest": func(t *testing.T, dir string) {
			for _, m := range glob(t, dir, "marker.manifest.*") {
				if err := os.Rename(m, filepath.Join(dir, "marker.manifest.000099.MANIFEST-999999")); err != nil {
					t.Fatal(err)
				}
			}
		},
		"garbage sstable": func(t *testing.T, dir string) {
			for _, s := range glob(t, dir, "*.sst") {
				writeFile(t, s, []byte("garbage garbage garbage garbage garbage garbage garbage"))
			}
		},
		"truncated sstable": func(t *testing.T, dir string) {
			for _, s := range glob(t, dir, "*.sst") {
				truncateHalf(t, s)
			}
		},
		"missing sstable": func(t *testing.T, dir string) {
			for _, s := range glob(t, dir, "*.sst") {
				if err := os.Remove(s); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				_ = db.Write(func(tx *Txn) error { tx.Set(fmt.Appendf(nil, "k%03d", i), make([]byte, 100)); return nil })
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			fn(t, dir)
			db, err = Open(dir, Options{})
			if err == nil {
				// Pebble may legitimately recover (a torn manifest tail is
				// what a crash leaves); then nothing may be missing.
				defer db.Close()
				for i := range 100 {
					if _, ok, err := db.Get(nil, fmt.Appendf(nil, "k%03d", i)); err != nil || !ok {
						t.Fatalf("Open succeeded on a damaged directory but k%03d is lost (err %v)", i, err)
					}
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotCairn) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	return m
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0xff, 0xff}, nil},
	}
	for _, c := range cases {
		if got := PrefixEnd(c.in); string(got) != string(c.want) {
			t.Errorf("PrefixEnd(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestCloseWithLeakedIterators checks that a leaked iterator or snapshot (an
// abandoned client cursor) does not make Close fail or panic.
func TestCloseWithLeakedIterators(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Write(func(tx *Txn) error { tx.Set([]byte("a"), []byte("1")); return nil })
	if _, err := db.NewIter(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap := db.NewSnapshot()
	if _, err := snap.NewIter(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close with leaked iterators: %v", err)
	}
}
