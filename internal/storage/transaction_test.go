package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func put(t *testing.T, db *DB, kv ...string) {
	t.Helper()
	if err := db.Write(func(tx *Txn) error {
		for i := 0; i < len(kv); i += 2 {
			tx.Set([]byte(kv[i]), []byte(kv[i+1]))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func stmt(tx *Transaction, kv ...string) error {
	return tx.Run(func(t *Txn) error {
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				t.Delete([]byte(kv[i]))
			} else {
				t.Set([]byte(kv[i]), []byte(kv[i+1]))
			}
		}
		return nil
	})
}

func txGet(t *testing.T, tx *Transaction, key string) (string, bool) {
	t.Helper()
	v, ok, err := tx.Get(nil, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// TestTransactionMergedViewModel checks invariant "Snapshot isolation" of
// reads: a transaction's iterators and Gets show exactly the snapshot plus
// its own writes made before the iterator opened, against a model, over
// random writes, random committed changes after Begin (never visible) and
// random walks mixing First, Last, SeekGE, SeekLT, Next and Prev.
func TestTransactionMergedViewModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(40)) }
	for round := range 30 {
		db := openTest(t, Options{})
		model := map[string]string{}
		for range rng.IntN(30) {
			k, v := key(), fmt.Sprintf("s%d", rng.IntN(100))
			put(t, db, k, v)
			model[k] = v
		}
		tx := db.Begin()
		var iters []*Iter
		var views []map[string]string
		for s := range 1 + rng.IntN(5) {
			var kv []string
			for range rng.IntN(8) {
				k := key()
				if rng.IntN(3) == 0 {
					kv = append(kv, k, "")
					delete(model, k)
				} else {
					v := fmt.Sprintf("t%d.%d", s, rng.IntN(100))
					kv = append(kv, k, v)
					model[k] = v
				}
			}
			if err := stmt(tx, kv...); err != nil {
				t.Fatal(err)
			}
			put(t, db, fmt.Sprintf("k%02d", 40+rng.IntN(20)), "committed-later") // in range, never visible to tx
			it, err := tx.NewIter([]byte("k"), []byte("l"))
			if err != nil {
				t.Fatal(err)
			}
			iters = append(iters, it)
			views = append(views, maps(model))
		}
		for k := range 40 {
			k := fmt.Sprintf("k%02d", k)
			got, ok := txGet(t, tx, k)
			want, wok := model[k]
			if ok != wok || got != want {
				t.Fatalf("seed %d round %d: Get(%s) = %q %v, want %q %v", seed, round, k, got, ok, want, wok)
			}
		}
		for n, it := range iters {
			walk(t, rng, it, views[n], fmt.Sprintf("seed %d round %d iter %d", seed, round, n))
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		tx.Abort()
		_ = db.Close()
	}
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// walk moves it at random and compares every position with the sorted
// keys of want.
func walk(t *testing.T, rng *rand.Rand, it *Iter, want map[string]string, where string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pos := -1 // index in keys; -1 or len(keys): off the end
	for step := range 60 {
		var ok bool
		switch op := rng.IntN(6); {
		case op == 0:
			ok, pos = it.First(), 0
		case op == 1:
			ok, pos = it.Last(), len(keys)-1
		case op == 2:
			target := fmt.Sprintf("k%02d", rng.IntN(42))
			ok = it.SeekGE([]byte(target))
			pos, _ = slices.BinarySearch(keys, target)
		case op == 5:
			target := fmt.Sprintf("k%02d", rng.IntN(42))
			ok = it.SeekLT([]byte(target))
			pos, _ = slices.BinarySearch(keys, target)
			pos--
		case op == 3 && it.Valid():
			ok, pos = it.Next(), pos+1
		case op == 4 && it.Valid():
			ok, pos = it.Prev(), pos-1
		default:
			continue
		}
		inRange := pos >= 0 && pos < len(keys)
		if ok != inRange {
			t.Fatalf("%s step %d: valid = %v, want %v (pos %d of %v)", where, step, ok, inRange, pos, keys)
		}
		if !ok {
			continue
		}
		v, err := it.Value()
		if err != nil {
			t.Fatal(err)
		}
		if string(it.Key()) != keys[pos] || string(v) != want[keys[pos]] {
			t.Fatalf("%s step %d: at %s=%s, want %s=%s", where, step, it.Key(), v, keys[pos], want[keys[pos]])
		}
	}
}

// TestTransactionConflicts checks invariant "First writer wins" at the
// statement and at commit, and that a failed statement or commit changes
// nothing.
func TestTransactionConflicts(t *testing.T) {
	cases := []struct {
		name string
		// run returns the error the case expects to be a conflict.
		run func(t *testing.T, db *DB) error
		// want is the committed value of "a" afterwards.
		want string
	}{
		{"another open transaction wrote the key", func(t *testing.T, db *DB) error {
			t1, t2 := db.Begin(), db.Begin()
			defer t2.Abort()
			if err := stmt(t1, "a", "t1"); err != nil {
				t.Fatal(err)
			}
			err := stmt(t2, "a", "t2")
			if err := t1.Commit(nil); err != nil {
				t.Fatal(err)
			}
			return err
		}, "t1"},
		{"committed after the snapshot, before the statement", func(t *testing.T, db *DB) error {
			tx := db.Begin()
			defer tx.Abort()
			put(t, db, "a", "plain")
			return stmt(tx, "a", "tx")
		}, "plain"},
		{"committed after the statement: the commit fails", func(t *testing.T, db *DB) error {
			tx := db.Begin()
			if err := stmt(tx, "a", "tx", "b", "tx"); err != nil {
				t.Fatal(err)
			}
			put(t, db, "a", "plain")
			err := tx.Commit(nil)
			if v, _ := mustGet(t, db, "b"); v != "0" {
				t.Fatalf("b = %q: a failed commit wrote part of the transaction", v)
			}
			return err
		}, "plain"},
		{"deleted after the snapshot", func(t *testing.T, db *DB) error {
			tx := db.Begin()
			defer tx.Abort()
			if err := db.Write(func(t *Txn) error { t.Delete([]byte("a")); return nil }); err != nil {
				t.Fatal(err)
			}
			return stmt(tx, "a", "tx")
		}, ""},
		{"an aborted transaction releases its keys", func(t *testing.T, db *DB) error {
			t1 := db.Begin()
			if err := stmt(t1, "a", "t1"); err != nil {
				t.Fatal(err)
			}
			t1.Abort()
			t2 := db.Begin()
			if err := stmt(t2, "a", "t2"); err != nil {
				return fmt.Errorf("after abort: %w", err)
			}
			if err := t2.Commit(nil); err != nil {
				t.Fatal(err)
			}
			return ErrWriteConflict // no conflict expected: mark as passed
		}, "t2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			put(t, db, "a", "0", "b", "0")
			if err := tc.run(t, db); !errors.Is(err, ErrWriteConflict) {
				t.Fatalf("err = %v, want ErrWriteConflict", err)
			}
			got, _ := mustGet(t, db, "a")
			if got != tc.want {
				t.Fatalf("a = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTransactionStatementAtomic: a failing statement leaves the
// transaction as it was, and its undo hooks run; earlier statements stand.
func TestTransactionStatementAtomic(t *testing.T) {
	db := openTest(t, Options{})
	tx := db.Begin()
	if err := stmt(tx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	undone := false
	boom := errors.New("boom")
	err := tx.Run(func(t *Txn) error {
		t.Set([]byte("a"), []byte("2"))
		t.Set([]byte("b"), []byte("2"))
		t.OnUndo(func() { undone = true })
		return boom
	})
	if !errors.Is(err, boom) || !undone {
		t.Fatalf("err %v, undone %v", err, undone)
	}
	if v, _ := txGet(t, tx, "a"); v != "1" {
		t.Fatalf("a = %q after the failed statement", v)
	}
	if _, ok := txGet(t, tx, "b"); ok || tx.Len() != 1 {
		t.Fatalf("the failed statement's b is visible (len %d)", tx.Len())
	}
	if _, ok := mustGet(t, db, "a"); ok {
		t.Fatal("an uncommitted transaction's write is visible outside it")
	}
	if err := tx.Run(func(t *Txn) error { t.Set([]byte("d"), []byte("1")); t.Tick(); return nil }); !errors.Is(err, errTickInTransaction) {
		t.Fatalf("a statement taking a cluster time: %v", err)
	}
	if _, ok := txGet(t, tx, "d"); ok {
		t.Fatal("the statement that took a cluster time left its write")
	}
	if err := tx.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := stmt(tx, "c", "1"); !errors.Is(err, ErrTransactionDone) {
		t.Fatalf("statement after commit: %v", err)
	}
}

// TestTransactionCommitDurable checks "All or nothing" across a power cut:
// an acknowledged commit is whole after restart, with what the caller
// wrote in the same request (also).
func TestTransactionCommitDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db, err := Open("db", Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	for i := range 100 {
		if err := stmt(tx, fmt.Sprintf("k%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(func(t *Txn) error { t.Set([]byte("record"), t.Tick().AppendBinary(nil)); return nil }); err != nil {
		t.Fatal(err)
	}
	img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	_ = db.Close()
	db, err = Open("db", Options{FS: img, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 100 {
		if _, ok := mustGet(t, db, fmt.Sprintf("k%03d", i)); !ok {
			t.Fatalf("k%03d of an acknowledged commit lost", i)
		}
	}
	if _, ok := mustGet(t, db, "record"); !ok {
		t.Fatal("the record written with the commit is lost")
	}
}

// TestFirstWriterWinsUnchanged checks the read-free path of "First writer
// wins": while nothing became visible since a transaction's snapshot, its
// statements claim keys without reading them (the snapshot's bases are
// left unread) and a commit that is the first of its group reads nothing;
// any change since the snapshot, or an earlier write the commit's request
// can see, sends both back to the reads, which find the conflict.
func TestFirstWriterWinsUnchanged(t *testing.T) {
	cases := []struct {
		name string
		// before runs after Begin and before the statement; between
		// after the statement and before the commit.
		before, between func(t *testing.T, db *DB)
		// commit commits tx (nil: tx.Commit).
		commit func(db *DB, tx *Transaction) error
		// unread: the statement's claim left the base unread.
		unread   bool
		conflict bool
		want     string // "a" afterwards
	}{
		{name: "nothing visible since the snapshot", unread: true, want: "tx"},
		{name: "a write before the statement", before: func(t *testing.T, db *DB) { put(t, db, "a", "plain") }, conflict: true, want: "plain"},
		{name: "another key written before the statement", before: func(t *testing.T, db *DB) { put(t, db, "b", "plain") }, want: "tx"},
		{name: "a write between the statement and the commit", unread: true, between: func(t *testing.T, db *DB) { put(t, db, "a", "plain") }, conflict: true, want: "plain"},
		{name: "the same bytes written back between", unread: true, between: func(t *testing.T, db *DB) { put(t, db, "a", "0") }, want: "tx"},
		{name: "an earlier write in the commit's request", unread: true, commit: func(db *DB, tx *Transaction) error {
			err := db.Write(func(t *Txn) error {
				t.Set([]byte("a"), []byte("same request"))
				return tx.checkOwn(t, ErrWriteConflict)
			})
			tx.Abort()
			return err
		}, conflict: true, want: "0"},
		{name: "an earlier request of the commit's group", unread: true, commit: func(db *DB, tx *Transaction) error {
			// The group's batch as the pipeline hands it to the commit's
			// request: an earlier request's write applied to it.
			b := db.pdb.NewIndexedBatch()
			defer b.Close()
			if err := b.Set([]byte("a"), []byte("earlier request"), nil); err != nil {
				return err
			}
			if !tx.unchanged() {
				return errors.New("the store changed: the case tests nothing")
			}
			err := tx.checkOwn(&Txn{batch: b}, ErrWriteConflict)
			tx.Abort()
			return err
		}, conflict: true, want: "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			put(t, db, "a", "0", "b", "0")
			tx := db.Begin()
			defer tx.Abort()
			if !tx.unchanged() {
				t.Fatal("a transaction just begun sees the store changed since its snapshot")
			}
			if tc.before != nil {
				tc.before(t, db)
			}
			err := stmt(tx, "a", "tx")
			if err == nil {
				if w := tx.own["a"]; w.baseRead == tc.unread {
					t.Fatalf("base read at the claim: %v, want %v", w.baseRead, !tc.unread)
				}
				if tc.between != nil {
					tc.between(t, db)
				}
				if tc.commit != nil {
					err = tc.commit(db, tx)
				} else {
					err = tx.Commit(nil)
				}
			}
			if got := errors.Is(err, ErrWriteConflict); got != tc.conflict {
				t.Fatalf("err = %v, want a conflict: %v", err, tc.conflict)
			}
			if got, _ := mustGet(t, db, "a"); got != tc.want {
				t.Fatalf("a = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUnchangedViews: only a view known to be the store's state at a gen
// lets a transaction skip its reads, and only while gen stays there.
func TestUnchangedViews(t *testing.T) {
	db := openTest(t, Options{})
	put(t, db, "a", "0")
	snap := db.NewSnapshot()
	for _, tc := range []struct {
		name  string
		begin func() *Transaction
		want  bool
	}{
		{"a shared view", db.Begin, true},
		{"a caller's snapshot (BeginAtIn)", func() *Transaction {
			tx := new(Transaction)
			db.BeginAtIn(tx, snap, func() {})
			return tx
		}, false},
		{"a view taken during a change", func() *Transaction {
			var tx *Transaction
			_ = db.visible.change(nil, func() error { tx = db.Begin(); return nil })
			return tx
		}, false},
	} {
		tx := tc.begin()
		if got := tx.unchanged(); got != tc.want {
			t.Errorf("%s: unchanged = %v, want %v", tc.name, got, tc.want)
		}
		put(t, db, "a", "1")
		if tx.unchanged() {
			t.Errorf("%s: unchanged after a write", tc.name)
		}
		tx.Abort()
	}
	_ = snap.Close()
}

// TestScratchReuse: a transaction given the memory of an ended one
// (Scratch, SetScratch: engine's BeginReusing) starts with none of its
// writes, claims or intents, and a statement whose claim meets a conflict
// part-way leaves none of the keys it had claimed before it.
func TestScratchReuse(t *testing.T) {
	db := openTest(t, Options{})
	put(t, db, "a", "0", "b", "0", "c", "0")
	for _, tc := range []struct {
		name string
		// first runs in the first transaction, which then ends.
		first func(tx *Transaction) error
		end   func(tx *Transaction) error
	}{
		{"committed", func(tx *Transaction) error { return stmt(tx, "a", "1", "b", "1") }, func(tx *Transaction) error { return tx.Commit(nil) }},
		{"aborted", func(tx *Transaction) error { return stmt(tx, "a", "2", "b", "") }, func(tx *Transaction) error { tx.Abort(); return nil }},
		{"a claim that met a conflict", func(tx *Transaction) error {
			other := db.Begin()
			defer other.Abort()
			if err := stmt(other, "b", "other"); err != nil {
				return err
			}
			// "a" is claimed before "b" conflicts: neither may stay.
			if err := stmt(tx, "a", "3", "b", "3"); !errors.Is(err, ErrWriteConflict) {
				return fmt.Errorf("statement against a held key: %v, want a conflict", err)
			}
			if tx.Len() != 0 || db.intents.owner["a"] != nil {
				return fmt.Errorf("a failed claim left %d own writes, owner of a %p", tx.Len(), db.intents.owner["a"])
			}
			return nil
		}, func(tx *Transaction) error { tx.Abort(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := db.Begin()
			if err := tc.first(first); err != nil {
				t.Fatal(err)
			}
			if err := tc.end(first); err != nil {
				t.Fatal(err)
			}
			before, _ := mustGet(t, db, "a")
			next := new(Transaction)
			db.BeginIn(next)
			next.SetScratch(first.Scratch())
			defer next.Abort()
			if got, _ := txGet(t, next, "a"); got != before {
				t.Fatalf("a in the next transaction = %q, want the store's %q", got, before)
			}
			if next.Len() != 0 || len(db.intents.owner) != 0 {
				t.Fatalf("the next transaction starts with %d own writes, %d intents", next.Len(), len(db.intents.owner))
			}
			if err := stmt(next, "c", "next"); err != nil {
				t.Fatal(err)
			}
			if err := next.Commit(nil); err != nil {
				t.Fatal(err)
			}
			if got, _ := mustGet(t, db, "a"); got != before {
				t.Fatalf("a = %q after the next transaction, want %q", got, before)
			}
			if got, _ := mustGet(t, db, "c"); got != "next" {
				t.Fatalf("c = %q, want next", got)
			}
		})
	}
}
