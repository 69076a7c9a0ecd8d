package storage

import (
	"errors"
	"testing"
)

// TestPreparedHoldsKeys checks invariant "Prepared holds its keys": once
// prepared, a transaction's keys refuse plain writes, range deletions and
// other transactions' statements, its commit applies them, and a restored
// transaction (after a restart) holds them again.
func TestPreparedHoldsKeys(t *testing.T) {
	get := func(t *testing.T, db *DB, key string) string {
		t.Helper()
		v, ok, err := db.Get(nil, []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "<none>"
		}
		return string(v)
	}
	cases := []struct {
		name  string
		write func(db *DB) error // must conflict while "a" is prepared
	}{
		{"plain write", func(db *DB) error {
			return db.Write(func(tx *Txn) error { tx.Set([]byte("a"), []byte("plain")); return nil })
		}},
		{"plain delete", func(db *DB) error {
			return db.Write(func(tx *Txn) error { tx.Delete([]byte("a")); return nil })
		}},
		{"range deletion", func(db *DB) error {
			return db.Write(func(tx *Txn) error { tx.DeleteRange([]byte("0"), []byte("z")); return nil })
		}},
		{"another transaction", func(db *DB) error {
			o := db.Begin()
			defer o.Abort()
			return stmt(o, "a", "other")
		}},
	}
	for _, tc := range cases {
		for _, restored := range []bool{false, true} {
			name := tc.name
			if restored {
				name += "/restored"
			}
			t.Run(name, func(t *testing.T) {
				db := openTest(t, Options{})
				put(t, db, "a", "old", "b", "untouched")
				tx := db.Begin()
				if err := stmt(tx, "a", "new"); err != nil {
					t.Fatal(err)
				}
				if err := tx.Prepare([][]byte{[]byte("m")}, func(t *Txn) error { t.Set([]byte("record"), []byte("r")); return nil }); err != nil {
					t.Fatal(err)
				}
				if got := get(t, db, "record"); got != "r" {
					t.Fatalf("record %q, want the prepare's", got)
				}
				if restored {
					w, h := tx.Writes(), tx.Holds()
					tx.Release()
					var err error
					if tx, err = db.RestorePrepared(w, h); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.write(db); !errors.Is(err, ErrWriteConflict) {
					t.Fatalf("write of a prepared key: %v, want a conflict", err)
				}
				put(t, db, "b", "free") // other keys are free
				if err := db.Write(func(tx *Txn) error { tx.Set([]byte("m"), []byte("ddl")); return nil }); !errors.Is(err, ErrWriteConflict) {
					t.Fatalf("write of a held key: %v, want a conflict", err)
				}
				if got := get(t, db, "a"); got != "old" {
					t.Fatalf("a = %q before the commit", got)
				}
				if err := tx.CommitPrepared(func(t *Txn) error { t.Delete([]byte("record")); return nil }); err != nil {
					t.Fatal(err)
				}
				if got := get(t, db, "a"); got != "new" {
					t.Fatalf("a = %q after the commit", got)
				}
				if err := tc.write(db); err != nil {
					t.Fatalf("write after the commit: %v", err)
				}
				if got := get(t, db, "m"); got != "<none>" && tc.name != "range deletion" {
					t.Fatalf("held key m = %q: holding wrote it", got)
				}
				put(t, db, "m", "ddl")
			})
		}
	}
	t.Run("prepare meets a change since the snapshot", func(t *testing.T) {
		db := openTest(t, Options{})
		tx := db.Begin()
		if err := stmt(tx, "a", "tx"); err != nil {
			t.Fatal(err)
		}
		put(t, db, "a", "plain")
		if err := tx.Prepare(nil, nil); !errors.Is(err, ErrWriteConflict) {
			t.Fatalf("prepare: %v, want a conflict", err)
		}
		if tx.Prepared() {
			t.Fatal("prepared after a failed prepare")
		}
		tx.Abort()
		put(t, db, "a", "again")
	})
	t.Run("abort releases", func(t *testing.T) {
		db := openTest(t, Options{})
		tx := db.Begin()
		if err := stmt(tx, "a", "tx"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Prepare(nil, nil); err != nil {
			t.Fatal(err)
		}
		tx.Abort()
		put(t, db, "a", "after")
		if db.intents.nPrepared.Load() != 0 {
			t.Fatal("a prepared transaction counted after its abort")
		}
	})
}

// TestPreparedIn checks that PreparedIn reports exactly the keys prepared
// transactions hold (their writes and their holds), in [lo, hi), and that
// its channel closes at the end of a prepared transaction, after which the
// keys are free; and that a plain write's refusal names the held key.
func TestPreparedIn(t *testing.T) {
	db := openTest(t, Options{})
	put(t, db, "b", "old", "d", "old")
	if held, _ := db.PreparedIn([]byte("a"), nil); held != nil {
		t.Fatalf("held %q with nothing prepared", held)
	}
	tx := db.Begin()
	for _, k := range []string{"b", "e"} { // an update and an insert
		if err := stmt(tx, k, "tx"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Prepare([][]byte{[]byte("m")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lo, hi, want string // hi "": no bound; want "": none held
	}{
		{"a", "", "b"},
		{"a", "b", ""},
		{"b", "b\x00", "b"},
		{"b\x00", "e", ""},
		{"c", "", "e"},
		{"d", "d\x00", ""},
		{"e\x00", "m", ""},
		{"f", "", "m"},
		{"m\x00", "", ""},
	} {
		var hi []byte
		if tc.hi != "" {
			hi = []byte(tc.hi)
		}
		held, ended := db.PreparedIn([]byte(tc.lo), hi)
		if string(held) != tc.want || (held != nil) != (ended != nil) {
			t.Fatalf("PreparedIn(%q, %q) = %q, want %q", tc.lo, tc.hi, held, tc.want)
		}
	}
	err := db.Write(func(t *Txn) error { t.Set([]byte("e"), []byte("plain")); return nil })
	var pc *PrepareConflictError
	if !errors.As(err, &pc) || string(pc.Key) != "e" || !errors.Is(err, ErrWriteConflict) {
		t.Fatalf("plain write of a held key: %v, want a PrepareConflictError naming e", err)
	}
	_, ended := db.PreparedIn([]byte("b"), nil)
	if err := tx.CommitPrepared(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("the channel did not close at the commit")
	}
	if held, _ := db.PreparedIn([]byte("a"), nil); held != nil {
		t.Fatalf("held %q after the commit", held)
	}
}
