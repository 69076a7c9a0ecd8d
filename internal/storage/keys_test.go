package storage

import (
	"bytes"
	"testing"
)

func TestKeyspaceEnd(t *testing.T) {
	for _, c := range []struct {
		key, want string
	}{
		{"", ""},
		{"d\x10`abc\x00\x00", "d\x11"},
		{"d\x10", "d\x11"},
		{"d\x80\x01\x05", "d\x80\x02"}, // a two-byte uvarint id
		{"i\x07\x10x", "i\x08"},
		{"d\x80", "e"}, // a damaged id: the whole keyspace
		{"m/coll/7", "n"},
		{"s/format", "t"},
	} {
		if got := keyspaceEnd([]byte(c.key)); !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("keyspaceEnd(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// TestTablesHoldOneKeyspaceObject checks invariant "One object per table":
// after flushing and compacting keys of two collections, an index, the
// catalog and the system records written together, no table holds keys of
// two of them, so a collection's next documents never fall inside a table
// that also holds other keys.
func TestTablesHoldOneKeyspaceObject(t *testing.T) {
	db := openTest(t, Options{})
	err := db.Write(func(tx *Txn) error {
		for i := range 100 {
			for _, space := range []byte{SpaceDocument, SpaceIndex} {
				for id := uint64(1); id <= 2; id++ {
					tx.Set(append(Prefix(nil, space, id), byte(i)), []byte("v"))
				}
			}
		}
		tx.Set([]byte("m/catalog"), []byte("v"))
		tx.Set(SystemKey("param"), []byte("v"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Pebble().Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	levels, err := db.Pebble().SSTables()
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, level := range levels {
		for _, tb := range level {
			tables++
			if end := keyspaceEnd(tb.Smallest.UserKey); end != nil && bytes.Compare(tb.Largest.UserKey, end) >= 0 {
				t.Errorf("table %s holds %q .. %q, across the end of its first key's keyspace object %q", tb.FileNum, tb.Smallest.UserKey, tb.Largest.UserKey, end)
			}
		}
	}
	if tables < 6 { // d1, d2, i1, i2, m, s (the format marker joins s)
		t.Errorf("%d tables for six keyspace objects", tables)
	}
}
