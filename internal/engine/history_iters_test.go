package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestAsOfItersPool checks invariant "Pooled views are short-lived" and
// that a pooled view is used only for times it saw: as-of reads at the
// newest time after each write see that write (a view opened before it
// would not), idle views are closed after their age, and the engine closes
// the pool before its store (no iterator is left for storage to close).
func TestAsOfItersPool(t *testing.T) {
	var logBuf bytes.Buffer
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace{"db", "c"}
	id := versionedDoc(t, e, 50, func(n int) {
		for range 2 { // the second read takes the view the first pooled
			doc, found, err := e.GetAt(nil, ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}, e.db.LastCommitted())
			if err != nil || !found || bsoncore.Document(doc).Lookup("n").Int32() != int32(n) {
				t.Fatalf("as of the write of n=%d: %s %v %v", n, bsoncore.Document(doc), found, err)
			}
		}
	})
	pooled := func() int {
		e.asOfIters.mu.Lock()
		defer e.asOfIters.mu.Unlock()
		return len(e.asOfIters.free)
	}
	if pooled() == 0 {
		t.Fatal("no view pooled after as-of reads")
	}
	for deadline := time.Now().Add(10 * asOfIterAge); pooled() > 0; time.Sleep(asOfIterAge / 4) {
		if time.Now().After(deadline) {
			t.Fatalf("%d views still pooled %s after the last read", pooled(), 10*asOfIterAge)
		}
	}
	if _, _, err := e.GetAt(nil, ns, id, e.db.LastCommitted()); err != nil {
		t.Fatal(err)
	}
	if pooled() != 1 {
		t.Fatalf("%d views pooled after one read, want 1", pooled())
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logBuf.String(), "left open") {
		t.Fatalf("the store closed iterators the pool left open:\n%s", logBuf.String())
	}
}
