//go:build invariants

package storage

import (
	"fmt"
	"strings"
	"testing"
)

// TestDocumentCacheExactChecked: in invariants builds a hit that differs
// from Pebble (here after a write that bypassed visibility.change, as a
// forgotten write path would) fails "Document cache exact".
func TestDocumentCacheExactChecked(t *testing.T) {
	db := openTest(t, Options{})
	k := docKey("k")
	put(t, db, string(k), "v1")
	if _, _, hit := cachedGet(t, db, k); !hit {
		t.Fatal("not cached")
	}
	if err := db.pdb.Set(k, []byte("bypass"), nil); err != nil {
		t.Fatal(err)
	}
	v := violation(func() { _, _, _ = db.Get(nil, k) })
	if v == nil || v.Invariant != "Document cache exact" || !strings.Contains(v.Detail, fmt.Sprintf("%x", k)) {
		t.Fatalf("a stale hit: %v, want the invariant's violation naming the key", v)
	}
}
