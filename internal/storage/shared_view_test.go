package storage

import "testing"

// TestSharedView: transactions that begin with no change in between share
// one snapshot, a committed write makes the next Begin take a new one that
// sees it, and every transaction keeps reading its own snapshot (the first
// point read by a snapshot Get, the next through its iterator) after the
// shared one was replaced, and after it ended through an open iterator.
func TestSharedView(t *testing.T) {
	db := openTest(t, Options{})
	put := func(k, v string) {
		t.Helper()
		if err := db.Write(func(tx *Txn) error { tx.Set([]byte(k), []byte(v)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	read := func(tx *Transaction, k string) string {
		t.Helper()
		v, ok, err := tx.Get(nil, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "-"
		}
		return string(v)
	}
	put("dk", "1")
	a, b := db.Begin(), db.Begin()
	if a.sv != b.sv {
		t.Error("two transactions begun with no change in between do not share a snapshot")
	}
	put("dk", "2")
	c := db.Begin()
	if c.sv == a.sv {
		t.Fatal("a transaction begun after a commit shares the snapshot from before it")
	}
	it, err := a.NewIter([]byte("d"), []byte("e"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // a snapshot Get, then the iterator, then it again
		if got := read(a, "dk"); got != "1" {
			t.Fatalf("read %d of the old transaction: %s, want 1", i, got)
		}
		if got := read(c, "dk"); got != "2" {
			t.Fatalf("read %d of the new transaction: %s, want 2", i, got)
		}
	}
	a.Abort()
	b.Abort()
	if !it.First() {
		t.Fatal("an iterator outliving its transaction lost its snapshot")
	}
	if v, err := it.Value(); err != nil || string(v) != "1" {
		t.Errorf("an iterator outliving its transaction reads %q, %v, want 1", v, err)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got := a.sv.refs.Load(); got != 0 {
		t.Errorf("the replaced snapshot has %d references after its transactions ended", got)
	}
	c.Abort()
}
