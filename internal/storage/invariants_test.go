//go:build invariants

package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/invariants"
)

func violation(f func()) (v *invariants.Violation) {
	defer func() {
		if r := recover(); r != nil {
			v, _ = r.(*invariants.Violation)
		}
	}()
	f()
	return nil
}

// TestClosedOnce: closing an iterator or a snapshot twice panics with the
// invariant's name in invariants builds (a second Close of a Pebble
// iterator would return it to Pebble's pool twice).
func TestClosedOnce(t *testing.T) {
	db := openTest(t, Options{})
	snap := db.NewSnapshot()
	it, err := snap.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var txnIter *Iter
	if err := db.Write(func(tx *Txn) error {
		var err error
		txnIter, err = tx.NewIter(nil, nil)
		if err != nil {
			return err
		}
		return txnIter.Close()
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		close func() error
	}{
		{"snapshot iterator", it.Close},
		{"snapshot", snap.Close},
		{"request iterator", txnIter.Close},
	} {
		if c.name != "request iterator" {
			if err := c.close(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		v := violation(func() { _ = c.close() })
		if v == nil || v.Invariant != "Closed once" {
			t.Errorf("%s closed twice: got %v, want a violation of \"Closed once\"", c.name, v)
		}
	}
}

// TestOnPipeline: a Txn reports OnPipeline only inside its request.
func TestOnPipeline(t *testing.T) {
	db := openTest(t, Options{})
	var leaked *Txn
	inside := false
	if err := db.Write(func(tx *Txn) error {
		leaked, inside = tx, tx.OnPipeline()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !inside {
		t.Error("OnPipeline is false inside a request")
	}
	if leaked.OnPipeline() {
		t.Error("OnPipeline is true for a Txn used after its request, off the pipeline")
	}
}

// TestLeakReported: a reader left open at Close is released and, in
// invariants builds, logged with the stack that opened it.
func TestLeakReported(t *testing.T) {
	var buf bytes.Buffer
	db, err := Open(t.TempDir(), Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewIter(nil, nil); err != nil {
		t.Fatal(err)
	}
	_ = db.NewSnapshot()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"iterator left open", "snapshot left open", "TestLeakReported"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the close log lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestReadsThroughTheRequest: a request function that reads the store
// around its Txn (DB.Get, NewIter, NewSnapshot) panics with invariant
// "Reads through the request" in invariants builds: such a read misses the
// group's earlier requests and a pipelined member's groups in flight.
// Outside requests the same calls are fine.
func TestReadsThroughTheRequest(t *testing.T) {
	db := openTest(t, Options{})
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"Get", func() error { _, _, err := db.Get(nil, []byte("k")); return err }},
		{"NewIter", func() error {
			it, err := db.NewIter(nil, nil)
			if err == nil {
				err = it.Close()
			}
			return err
		}},
		{"NewSnapshot", func() error { return db.NewSnapshot().Close() }},
	} {
		if err := tc.read(); err != nil {
			t.Fatalf("%s outside a request: %v", tc.name, err)
		}
		var v *invariants.Violation
		err := db.Write(func(*Txn) error {
			v = violation(func() { _ = tc.read() })
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if v == nil || v.Invariant != "Reads through the request" {
			t.Errorf("%s inside a request: violation %v", tc.name, v)
		}
	}
}

// TestSharedViewCurrent: a change made visible in Pebble without going
// through visibility.change (here a direct Set, as a forgotten write path
// would) fails "Shared view current" at the next Begin that would share
// the stale snapshot.
func TestSharedViewCurrent(t *testing.T) {
	db := openTest(t, Options{})
	a := db.Begin()
	defer a.Abort()
	if err := db.pdb.Set([]byte("d-bypass"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	v := violation(func() {
		b := db.Begin()
		b.Abort()
	})
	if v == nil || v.Invariant != "Shared view current" {
		t.Fatalf("a Begin sharing a stale snapshot: %v, want the invariant's violation", v)
	}
}

// TestFirstWriterWinsChecked: the read-free path of "First writer wins"
// (nothing visible since the snapshot) is checked against the reads it
// skips in invariants builds: a change made visible without
// visibility.change (a direct Set, as a forgotten write path would) fails
// the invariant at the statement's claim and at the commit, instead of
// being overwritten silently.
func TestFirstWriterWinsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(db *DB, tx *Transaction, bypass func()) error
	}{
		{"at the claim", func(db *DB, tx *Transaction, bypass func()) error {
			bypass()
			var err error
			if v := violation(func() { err = stmt(tx, "k", "tx") }); v != nil {
				return v
			}
			return err
		}},
		{"at the commit", func(db *DB, tx *Transaction, bypass func()) error {
			if err := stmt(tx, "k", "tx"); err != nil {
				return err
			}
			bypass()
			return tx.Commit(nil) // the request's panic comes back as its error
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			put(t, db, "k", "0")
			tx := db.Begin()
			defer tx.Abort()
			err := tc.run(db, tx, func() {
				if err := db.pdb.Set([]byte("k"), []byte("bypass"), nil); err != nil {
					t.Fatal(err)
				}
			})
			if err == nil || !strings.Contains(err.Error(), `"First writer wins"`) {
				t.Fatalf("err = %v, want the invariant's violation", err)
			}
		})
	}
}
