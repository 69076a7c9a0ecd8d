package storage

import (
	"fmt"
	"testing"
)

// TestMissingKeysUseBloomFilters checks that point reads of absent keys (the
// uniqueness check of an insert) are answered by the tables' bloom filters
// instead of searching their data blocks.
func TestMissingKeysUseBloomFilters(t *testing.T) {
	db := openTest(t, Options{})
	err := db.Write(func(tx *Txn) error {
		for i := range 1000 {
			tx.Set(fmt.Appendf(nil, "d/%06d", 2*i), []byte("v"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, ok := mustGet(t, db, fmt.Sprintf("d/%06d", 2*i+1)); ok {
			t.Fatalf("d/%06d found, never written", 2*i+1)
		}
	}
	if v, ok := mustGet(t, db, "d/001998"); !ok || v != "v" {
		t.Fatalf("d/001998 = %q, %v after the flush", v, ok)
	}
	f := db.Pebble().Metrics().Filter
	if f.Hits < 900 {
		t.Fatalf("bloom filters answered %d of 1,000 reads of absent keys (misses %d), want nearly all", f.Hits, f.Misses)
	}
}
