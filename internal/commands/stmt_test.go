package commands

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
)

// TestReadStmtAsLookupErr checks that readStmt's one walk finds, for each
// field a statement's parse reads, what LookupErr finds: on random
// statements (seed logged) whose names repeat, whose values are sometimes
// damaged and whose bytes are sometimes damaged (bsonxtest's Document).
func TestReadStmtAsLookupErr(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	gen := bsonxtest.New(rng)
	gen.Malformed = 0.05
	names := []string{"q", "u", "c", "hint", "collation", "arrayFilters", "multi", "upsert", "limit", "other", "q", "multi"}
	found := 0
	for range 20000 {
		st := gen.Document(names, 6)
		f := readStmt(st)
		for _, name := range names[:9] {
			_, got := f.slot([]byte(name))
			want, err := bsoncore.Document(st).LookupErr(name)
			if err != nil {
				want = bsoncore.Value{}
			} else {
				found++
			}
			if got.Type != want.Type || string(got.Data) != string(want.Data) {
				t.Fatalf("%x: readStmt's %s is %v, LookupErr's %v (%v)", st, name, *got, want, err)
			}
		}
	}
	if found < 10000 {
		t.Fatalf("only %d fields found: the check barely ran", found)
	}
}
