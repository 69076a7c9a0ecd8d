//go:build invariants

package catalog

import (
	"testing"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/storage"
)

// TestOneWriterChecked: changing the catalog through a Txn kept past its
// request (off the pipeline goroutine) panics with "One writer".
func TestOneWriterChecked(t *testing.T) {
	db, cat := openCatalog(t, t.TempDir())
	defer db.Close()
	var leaked *storage.Txn
	if err := db.Write(func(tx *storage.Txn) error {
		leaked = tx
		_, err := cat.CreateCollection(tx, "d", "inside", nil) // on the pipeline: fine
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var v *invariants.Violation
	func() {
		defer func() { v, _ = recover().(*invariants.Violation) }()
		_, _ = cat.CreateCollection(leaked, "d", "outside", nil)
	}()
	if v == nil || v.Invariant != "One writer" {
		t.Fatalf("got %v, want a violation of \"One writer\"", v)
	}
}
