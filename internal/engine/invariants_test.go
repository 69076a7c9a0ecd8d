//go:build invariants

package engine

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// faultEnv names the fault a child process of TestRuntimeChecksCatchFaults
// injects.
const faultEnv = "CAIRN_INVARIANT_FAULT"

// invariantFaults each break one engine invariant the way a bug would. The
// test asserts nothing about the data itself: the runtime check, after the
// commit group, must stop the process and name the invariant.
var invariantFaults = []struct {
	name      string
	invariant string
	inject    func(t *testing.T, e *Engine, ns Namespace)
}{
	{"index write skipped", "Indexes follow documents", func(t *testing.T, e *Engine, ns Namespace) {
		faultSkipIndexWrites.Store(true)
		insert(t, e, ns, bson.D{{"_id", 10}, {"a", 10}})
	}},
	{"stray index entry", "Indexes follow documents", func(t *testing.T, e *Engine, ns Namespace) {
		coll := e.Catalog().Collection(ns.DB, ns.Coll)
		key := storage.Prefix(nil, storage.SpaceIndex, coll.Indexes[0].ID)
		key = appendIDKey(key, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)})
		key = appendIDKey(key, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 99)}) // no such document
		_ = e.db.Write(func(tx *storage.Txn) error { tx.Set(key, nil); return nil })
	}},
	{"index entry left behind by a delete", "Indexes follow documents", func(t *testing.T, e *Engine, ns Namespace) {
		faultSkipIndexWrites.Store(true)
		if _, err := e.Delete(ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 3)}); err != nil {
			t.Fatal(err)
		}
	}},
	{"tail bound lowered", "Tail bound", func(t *testing.T, e *Engine, ns Namespace) {
		coll := e.Catalog().Collection(ns.DB, ns.Coll)
		_ = e.db.Write(func(tx *storage.Txn) error {
			e.tails.last[coll.ID] = storage.Prefix(nil, storage.SpaceDocument, coll.ID)
			return nil
		})
		insert(t, e, ns, bson.D{{"_id", 0}, {"a", 0}}) // below the greatest key: the bound stays low
	}},
	{"capped eviction skipped", "Capped within limits", func(t *testing.T, e *Engine, ns Namespace) {
		capNS := cappedForFault(t, e)
		faultSkipCappedEvict.Store(true)
		for i := 1; i <= 3; i++ {
			insert(t, e, capNS, bson.D{{"_id", i}})
		}
	}},
	{"capped meta miscounted", "Capped within limits", func(t *testing.T, e *Engine, ns Namespace) {
		capNS := cappedForFault(t, e)
		insert(t, e, capNS, bson.D{{"_id", 1}})
		coll := e.Catalog().Collection(capNS.DB, capNS.Coll)
		_ = e.db.Write(func(tx *storage.Txn) error {
			m, err := loadCapped(tx, coll.ID)
			m.count++ // a document the collection does not hold
			m.store(tx, coll.ID)
			tx.Set(storage.DocKey(nil, coll.ID, appendIDKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})), mustRaw(bson.D{{"_id", 1}}))
			return err
		})
	}},
}

// cappedForFault makes a capped collection of at most two documents.
func cappedForFault(t *testing.T, e *Engine) Namespace {
	ns := Namespace{"inv", "cap"}
	if err := e.CreateCollection(ns, cappedOpts(1<<20, 2)); err != nil {
		t.Fatal(err)
	}
	return ns
}

func insert(t *testing.T, e *Engine, ns Namespace, d bson.D) {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(ns, []bsoncore.Document{b}, true); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeChecksCatchFaults runs each fault in a child process (a failed
// check panics on the commit pipeline's goroutine, which ends the process)
// and asserts that the child died of the named invariant.
func TestRuntimeChecksCatchFaults(t *testing.T) {
	if name := os.Getenv(faultEnv); name != "" {
		e := openEngine(t, "")
		ns := Namespace{"inv", "c"}
		if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 5; i++ {
			insert(t, e, ns, bson.D{{"_id", i}, {"a", i}})
		}
		for _, f := range invariantFaults {
			if f.name == name {
				f.inject(t, e, ns)
				insert(t, e, ns, bson.D{{"_id", 100}, {"a", 100}}) // one more group after the fault
				t.Fatalf("fault %q: the process survived; no runtime check caught it", name)
			}
		}
		t.Fatalf("unknown fault %q", name)
	}
	for _, f := range invariantFaults {
		t.Run(f.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRuntimeChecksCatchFaults$", "-test.count=1")
			// The child dies of a panic, so its t.TempDir cleanup never runs:
			// its temporary directories go under this test's, which is removed.
			cmd.Env = append(os.Environ(), faultEnv+"="+f.name, "TMPDIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the child passed; want it to die of invariant %q:\n%s", f.invariant, out)
			}
			if want := `invariant "` + f.invariant + `" violated`; !strings.Contains(string(out), want) {
				t.Fatalf("the child failed without %s:\n%s", want, out)
			}
		})
	}
}
